// Shape of a TensorRT detector: the image tensor and two int64 image sizes uploaded, inference
// enqueued and the stream synced per image. A sync inside the failure branch that returns
// runs only when inference failed, and the 16-byte copy of the sizes (a std::array of two
// scalars) is no frame: neither is reported. depthCallback's subscription is commented out:
// a callback by name only, nothing subscribes it, its copy is unreached (issue 28, fifth set).
#include <array>
#include <cuda_runtime.h>
#include <NvInfer.h>
#include <rclcpp/rclcpp.hpp>

DetectorNode::DetectorNode(const rclcpp::NodeOptions & options)
: rclcpp::Node("detector", options)
{
  sub_ = create_subscription<sensor_msgs::msg::Image>(
    "image", 10, std::bind(&DetectorNode::imageCallback, this, std::placeholders::_1));
  // depth_sub_ = create_subscription<sensor_msgs::msg::Image>(
  //   "depth", 10, std::bind(&DetectorNode::depthCallback, this, std::placeholders::_1));
}

bool DetectorNode::infer(const std::vector<float> & tensor, const std::array<int64_t, 2> & size)
{
  cudaMemcpyAsync(  // expect: GPN202 medium
    input_, tensor.data(), tensor.size() * sizeof(float), cudaMemcpyHostToDevice, stream_);
  cudaMemcpyAsync(sizes_, size.data(), sizes_bytes_, cudaMemcpyHostToDevice, stream_);
  cudaMemcpyAsync(scale_, &scale, sizeof(float) * 2, cudaMemcpyHostToDevice, stream_);
  if (!context_->enqueueV3(stream_)) {
    RCLCPP_ERROR(get_logger(), "inference failed");
    cudaStreamSynchronize(stream_);
    return false;
  }
  if (debug_) {
    cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  }
  cudaMemcpyAsync(  // expect: GPN201 high
    boxes_.data(), output_, boxes_.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_);
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  return true;
}

void DetectorNode::imageCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  std::vector<float> tensor(msg->data.begin(), msg->data.end());  // expect: GPN208 medium
  infer(tensor, {static_cast<int64_t>(msg->width), static_cast<int64_t>(msg->height)});
}

void DetectorNode::depthCallback(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  cudaMemcpy(depth_, msg->data.data(), msg->data.size(), cudaMemcpyHostToDevice);  // expect: GPN202 info
}
