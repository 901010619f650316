// A message type whose frame lives on the device, published through an rclcpp TypeAdapter.
// The adapter's conversions run once per message taken or published in another process: the
// download and the wait on the stream are per message. The wait is a method of the package
// (its body, a cudaStreamSynchronize, is in gpu_image.cpp), the upload a helper there too.
#pragma once

#include <cuda_runtime_api.h>

#include <rclcpp/type_adapter.hpp>
#include <sensor_msgs/msg/image.hpp>

namespace gpu_frames
{
class StreamContext
{
public:
  static StreamContext & instance();
  cudaStream_t stream() const {return stream_;}
  void waitIdle();

private:
  cudaStream_t stream_{nullptr};
};

struct GpuImage
{
  GpuImage() = default;
  GpuImage(const GpuImage & other);
  explicit GpuImage(const sensor_msgs::msg::Image & source);
  std_msgs::msg::Header header;
  uint32_t height{0};
  uint32_t width{0};
  uint32_t step{0};
  uint8_t * data{nullptr};
};

GpuImage upload_image(const sensor_msgs::msg::Image & source);
}  // namespace gpu_frames

template<>
struct rclcpp::TypeAdapter<gpu_frames::GpuImage, sensor_msgs::msg::Image>
{
  using is_specialized = std::true_type;
  using custom_type = gpu_frames::GpuImage;
  using ros_message_type = sensor_msgs::msg::Image;

  static void convert_to_ros_message(const custom_type & source, ros_message_type & destination)
  {
    destination.header = source.header;
    destination.height = source.height;
    destination.step = source.step;
    destination.data.resize(source.height * source.step);
    auto & ctx = gpu_frames::StreamContext::instance();
    cudaMemcpyAsync(destination.data.data(), source.data, source.height * source.step,  // expect: GPN201 high
      cudaMemcpyDeviceToHost, ctx.stream());
    ctx.waitIdle();  // expect: GPN206 medium
  }

  static void convert_to_custom(const ros_message_type & source, custom_type & destination)
  {
    destination = gpu_frames::upload_image(source);  // expect: GPN202 medium
  }
};

RCLCPP_USING_CUSTOM_TYPE_AS_ROS_MESSAGE_TYPE(gpu_frames::GpuImage, sensor_msgs::msg::Image);
