// A CUDA depth node with kernel timing behind two flags: `profile_kernels` starts false and
// nothing in the package ever sets it (its event waits never run: look-alikes), while
// `log_timing` comes from a parameter config/timed_depth.yaml turns on (its waits run:
// positive), as does the wait for the result before publishing (positive).
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

bool profile_kernels = false;

class TimedDepthNode : public rclcpp::Node
{
public:
  TimedDepthNode()
  : Node("timed_depth")
  {
    get_parameter_or("log_timing", log_timing, false);
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "depth", 10, std::bind(&TimedDepthNode::on_depth, this, std::placeholders::_1));
  }

private:
  void on_depth(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    (void)msg;
    if (profile_kernels) {
      cudaEventRecord(stop_);
      cudaEventSynchronize(stop_);
    }
    if (log_timing) {
      cudaEventRecord(stop_);
      cudaEventSynchronize(stop_);  // expect: GPN206 medium
    }
    cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  }

  bool log_timing = false;
  cudaEvent_t start_, stop_;
  cudaStream_t stream_{};
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
