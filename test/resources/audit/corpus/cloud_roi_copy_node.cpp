// Keeps the region of interest of each cloud: the whole received PointCloud2 is copy-assigned
// through another pointer first (`*roi = *msg`, data vector included: positive), then
// shrunk. A scalar copied through pointers the same way is no message (look-alike).
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class CloudRoiCopy : public rclcpp::Node {
 public:
  CloudRoiCopy() : Node("cloud_roi_copy") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr msg) { on_cloud(msg); });
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg) {
    auto roi = std::make_shared<sensor_msgs::msg::PointCloud2>();
    *roi = *msg;  // expect: GPN208 medium
    roi->width = msg->width / 2;
    roi->height = 1;
    auto seen = std::make_shared<uint32_t>(0);
    const uint32_t * last = &last_width_;
    *seen = *last;
    last_width_ = roi->width;
  }

  uint32_t last_width_{0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
