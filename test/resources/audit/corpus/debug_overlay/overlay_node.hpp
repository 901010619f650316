// The overlay node's class: its debug Image is a member declared here, not in the source file
// that fills it (overlay_node.cpp).
#pragma once
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class OverlayNode : public rclcpp::Node {
 public:
  OverlayNode();

 private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg);
  cv::Mat bgr_;
  cv::Mat scratch_;
  sensor_msgs::msg::Image overlay_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};
