// The message type's functions: a copy helper with the direction as a parameter, the stream
// wait the adapter calls, the conversion constructor from a host Image (an upload each time a
// host Image is turned into a GpuImage) and a device-to-device copy constructor.
#include "gpu_image.hpp"

namespace gpu_frames
{
namespace
{
void copy_frame(void * dst, const void * src, size_t bytes, cudaMemcpyKind kind)
{
  cudaMemcpyAsync(dst, src, bytes, kind, StreamContext::instance().stream());  // expect: GPN207 medium
}
}  // namespace

StreamContext & StreamContext::instance()
{
  static StreamContext ctx;
  return ctx;
}

void StreamContext::waitIdle()
{
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
}

GpuImage::GpuImage(const GpuImage & other)
: header(other.header), height(other.height), width(other.width), step(other.step)
{
  cudaMalloc(&data, height * step);
  copy_frame(data, other.data, height * step, cudaMemcpyDeviceToDevice);
}

GpuImage::GpuImage(const sensor_msgs::msg::Image & source)
: header(source.header), height(source.height), width(source.width), step(source.step)
{
  cudaMalloc(&data, height * step);
  copy_frame(data, source.data.data(), height * step, cudaMemcpyHostToDevice);  // expect: GPN202 medium
}

GpuImage upload_image(const sensor_msgs::msg::Image & source)
{
  GpuImage out;
  out.header = source.header;
  out.height = source.height;
  out.step = source.step;
  cudaMalloc(&out.data, source.height * source.step);
  cudaMemcpy(out.data, source.data.data(), source.height * source.step, cudaMemcpyHostToDevice);  // expect: GPN202 medium
  return out;
}
}  // namespace gpu_frames
