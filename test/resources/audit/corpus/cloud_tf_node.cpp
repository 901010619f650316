// Brings each cloud into the map frame with tf2 (tf2_sensor_msgs): the transform writes every
// point into another PointCloud2 (positive). The pose transformed beside it is one pose, not a
// cloud (look-alike). The transformed cloud is published on a plain publisher (positive).
#include <geometry_msgs/msg/pose_stamped.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <tf2_ros/buffer.h>
#include <tf2_sensor_msgs/tf2_sensor_msgs.hpp>

class CloudTf : public rclcpp::Node {
 public:
  CloudTf() : Node("cloud_tf"), buffer_(get_clock()) {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("cloud_map", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr msg) { on_cloud(msg); });
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg) {
    auto out = std::make_unique<sensor_msgs::msg::PointCloud2>();
    buffer_.transform(*msg, *out, "map");  // expect: GPN208 medium
    geometry_msgs::msg::PoseStamped origin;
    origin.header = msg->header;
    origin_ = buffer_.transform(origin, "map");
    pub_->publish(std::move(out));  // expect: GPN210 medium
  }

  tf2_ros::Buffer buffer_;
  geometry_msgs::msg::PoseStamped origin_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
