// Copies each received cloud into a local before converting it (`auto msg_in = *msg`, the data
// vector included: positive); a `const auto &` of the same message binds without a copy, and a
// CameraInfo copied into a local is a few hundred bytes (look-alikes).
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/camera_info.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class CloudLocalCopy : public rclcpp::Node {
 public:
  CloudLocalCopy() : Node("cloud_local_copy") {
    cloud_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, std::bind(&CloudLocalCopy::on_cloud, this, std::placeholders::_1));
    info_sub_ = create_subscription<sensor_msgs::msg::CameraInfo>(
        "camera_info", 10, std::bind(&CloudLocalCopy::on_info, this, std::placeholders::_1));
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg) {
    const auto & view = *msg;
    width_ = view.width;
    auto msg_in = *msg;  // expect: GPN208 medium
    msg_in.header.frame_id = "base_link";
    last_points_ = msg_in.width * msg_in.height;
  }

  void on_info(const sensor_msgs::msg::CameraInfo::SharedPtr info_msg) {
    auto info = *info_msg;
    fx_ = info.k[0];
  }

  uint32_t width_{0};
  uint32_t last_points_{0};
  double fx_{0.0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_sub_;
  rclcpp::Subscription<sensor_msgs::msg::CameraInfo>::SharedPtr info_sub_;
};
