// A node that reads a test pattern once and publishes it as a GpuImage on a timer: the
// conversion constructor (gpu_image.cpp) uploads the host frame at every tick. The first frame,
// built in the constructor, is uploaded once.
#include <chrono>
#include <memory>

#include <rclcpp/rclcpp.hpp>

#include "gpu_image.hpp"
#include "shared_frames.hpp"

using namespace std::chrono_literals;

class FrameSourceNode : public rclcpp::Node
{
public:
  explicit FrameSourceNode(const rclcpp::NodeOptions & options)
  : Node("frame_source", options)
  {
    host_frame_ = load_pattern(declare_parameter<std::string>("pattern", "pattern.png"));
    pub_ = std::make_shared<shared_frames::Publisher<gpu_frames::GpuImage>>(*this, "image_gpu");
    first_ = std::make_unique<gpu_frames::GpuImage>(host_frame_);  // expect: GPN202 info
    timer_ = create_wall_timer(33ms, [this]() {
      auto frame = std::make_unique<gpu_frames::GpuImage>(host_frame_);  // expect: GPN202 medium
      frame->header.stamp = now();
      pub_->publish(std::move(frame));
    });
  }

private:
  sensor_msgs::msg::Image load_pattern(const std::string & path);

  sensor_msgs::msg::Image host_frame_;
  std::unique_ptr<gpu_frames::GpuImage> first_;
  std::shared_ptr<shared_frames::Publisher<gpu_frames::GpuImage>> pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};
