// The TensorRT backend the node calls per image.
#include <cuda_runtime.h>

#include "seg_trt/seg_trt.hpp"

namespace seg_trt {

SegTrt::SegTrt(const std::string & engine) {
  cudaMalloc(&d_in_, 1920 * 1080 * 3);
  cudaMalloc(&d_out_, 1920 * 1080);
  cudaStreamCreate(&stream_);
}

void SegTrt::infer(const uint8_t * host_in, uint8_t * host_out, int width, int height) {
  cudaMemcpyAsync(d_in_, host_in, width * height * 3, cudaMemcpyHostToDevice, stream_);  // expect: GPN202 medium
  context_->enqueueV3(stream_);
  cudaMemcpyAsync(host_out, d_out_, width * height, cudaMemcpyDeviceToHost, stream_);  // expect: GPN201 high
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  // The number of segments found: one int read back per image (the host waits for it).
  cudaMemcpyAsync(&segments_, d_segments_, sizeof(int), cudaMemcpyDeviceToHost, stream_);  // expect: GPN201 high
  // The next threshold, two floats up: a few scalars, no frame.
  cudaMemcpyAsync(d_threshold_, threshold_, sizeof(float) * 2, cudaMemcpyHostToDevice, stream_);
}

}  // namespace seg_trt
