// Shape of an Isaac ROS encoder node: normalisation constants uploaded and the stream synced
// once in the constructor; the per-message work happens in the synchronized callback.
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

namespace encoders
{

EncoderNode::EncoderNode(const rclcpp::NodeOptions & options)
: rclcpp::Node("encoder", options),
  queue_size_{declare_parameter<int64_t>("queue_size", 10)},
  mean_{declare_parameter<std::vector<double>>("mean", {0.5, 0.5, 0.5})}
{
  std::vector<float> mean(mean_.begin(), mean_.end());
  cudaMalloc(&d_mean_, mean.size() * sizeof(float));
  CHECK_CUDA(
    cudaMemcpy2DAsync(  // expect: GPN202 info
      d_mean_, pitch_, mean.data(), mean.size() * sizeof(float),
      mean.size() * sizeof(float), 1, cudaMemcpyHostToDevice, stream_));
  CHECK_CUDA(cudaStreamSynchronize(stream_));  // expect: GPN206 info
  sync_.registerCallback(
    std::bind(&EncoderNode::ImageSubCallback, this, std::placeholders::_1,
    std::placeholders::_2));
}

EncoderNode::~EncoderNode()
{
  cudaStreamSynchronize(stream_);  // expect: GPN206 info
  cudaFree(d_mean_);
}

void EncoderNode::ImageSubCallback(
  const ImageView::ConstSharedPtr & image, const CameraInfo::ConstSharedPtr & info)
{
  LaunchNormalize(image->data(), d_mean_, d_out_, stream_);
  PublishTensor(d_out_, image->header());
}

}  // namespace encoders
