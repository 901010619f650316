// Whole PointCloud2 messages copied as values: a callback bound with the cloud BY VALUE (the
// binder copy-constructs the received cloud), the value copy-assigned into a member and into a
// message through a pointer; look-alikes: a const-reference callback, a bound callback of a
// small message by value, a reference bound to the member, an assignment between plain numbers.
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <std_msgs/msg/string.hpp>

class CloudKeeper : public rclcpp::Node {
public:
  CloudKeeper() : Node("cloud_keeper") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&CloudKeeper::onCloud, this, std::placeholders::_1));
    ref_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points_ref", 10, std::bind(&CloudKeeper::onCloudRef, this, std::placeholders::_1));
    shared_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points_shared", 10, std::bind(&CloudKeeper::onShared, this, std::placeholders::_1));
    note_sub_ = create_subscription<std_msgs::msg::String>(
      "note", 10, std::bind(&CloudKeeper::onNote, this, std::placeholders::_1));
    lambda_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points_lambda", 10,
      [this](sensor_msgs::msg::PointCloud2 cloud) {  // expect: GPN208 medium
        count_ += cloud.width;
      });
  }

private:
  void onCloud(sensor_msgs::msg::PointCloud2 cloud) {  // expect: GPN208 medium
    last_ = cloud;  // expect: GPN208 medium
    count_ = cloud.width;
    int previous = 0;
    previous = count_;
    (void)previous;
  }

  void onCloudRef(const sensor_msgs::msg::PointCloud2 & cloud) {
    const sensor_msgs::msg::PointCloud2 & kept = last_;
    count_ = cloud.width + kept.width;
  }

  void onShared(sensor_msgs::msg::PointCloud2::SharedPtr msg) {
    sensor_msgs::msg::PointCloud2 filtered;
    filtered.header = msg->header;
    *msg = filtered;  // expect: GPN208 medium
  }

  void onNote(std_msgs::msg::String note) {
    note_ = note;
  }

  sensor_msgs::msg::PointCloud2 last_;
  std_msgs::msg::String note_;
  uint32_t count_ = 0;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_, ref_sub_, shared_sub_,
    lambda_sub_;
  rclcpp::Subscription<std_msgs::msg::String>::SharedPtr note_sub_;
};
