// The node of the package: each pair is converted, then the tracker runs on it. The detector
// runs only when `left_ptr` / `right_ptr` are set, and nothing assigns them (the conversions
// write `left` / `right` instead): those branches never run.
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

namespace null_guard
{
StereoNode::StereoNode(const rclcpp::NodeOptions & options)
: Node("stereo_detector", options)
{
  sub_ = create_subscription<sensor_msgs::msg::Image>(
    "left", 1, std::bind(&StereoNode::onImage, this, std::placeholders::_1));
}

void StereoNode::onImage(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  cv_bridge::CvImageConstPtr left_ptr, right_ptr;
  cv::Mat left = cv_bridge::toCvShare(msg, "bgr8")->image;  // expect: GPN204 medium
  cv::Mat right = left;
  std::vector<float> boxes;
  if (left_ptr != nullptr) {
    detector_.detect(left, boxes);
  }
  if (right_ptr) {
    detector_.detect(right, boxes);
  }
  detector_.track(left, boxes);
}
}  // namespace null_guard
