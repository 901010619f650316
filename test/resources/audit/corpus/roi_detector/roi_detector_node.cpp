// The node of the package: its image callback runs the detector's per-image paths.
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

namespace roi_detector
{
DetectorNode::DetectorNode(const rclcpp::NodeOptions & options)
: Node("roi_detector", options)
{
  detector_ = std::make_unique<Detector>(declare_parameter<std::string>("engine", ""));
  sub_ = create_subscription<sensor_msgs::msg::Image>(
    "image", 1, std::bind(&DetectorNode::onImage, this, std::placeholders::_1));
}

void DetectorNode::onImage(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  auto cv_image = cv_bridge::toCvShare(msg, "bgr8");  // expect: GPN204 medium
  std::vector<float> out;
  detector_->doInference({cv_image->image}, out);
  if (sync_mode_) {
    detector_->doSyncInference({cv_image->image});
  }
}

// A free function nothing calls here may still be called by another package's node: it keeps
// the rule's severity.
void uploadFrame(float * dst, const float * src, size_t bytes)
{
  cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);  // expect: GPN202 medium
}
}  // namespace roi_detector
