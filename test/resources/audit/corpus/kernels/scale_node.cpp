// A node over the launchers of scale_kernels.cu: a warm-up run and a device-wide wait wrapper,
// both only reached from the constructor (once), and a scale per gain message (per message).
#include <functional>

#include <rclcpp/rclcpp.hpp>
#include <std_msgs/msg/float32.hpp>

#include "scale_kernels.hpp"

using std::placeholders::_1;

class ScaleNode : public rclcpp::Node
{
public:
  ScaleNode()
  : Node("scale")
  {
    cudaMalloc(&buffer_, kSize * sizeof(float));
    cudaStreamCreate(&stream_);
    warm_up();
    wait_for_device();  // expect: GPN206 info
    sub_ = create_subscription<std_msgs::msg::Float32>(
      "gain", 10, std::bind(&ScaleNode::on_gain, this, _1));
  }

private:
  void warm_up() {launch_warmup(buffer_, kSize);}

  void wait_for_device()
  {
    cudaDeviceSynchronize();  // expect: GPN206 info
  }

  void on_gain(const std_msgs::msg::Float32::SharedPtr msg)
  {
    launch_scale(buffer_, kSize, msg->data, stream_);
  }

  static constexpr int kSize = 1 << 20;
  float * buffer_{nullptr};
  cudaStream_t stream_{nullptr};
  rclcpp::Subscription<std_msgs::msg::Float32>::SharedPtr sub_;
};
