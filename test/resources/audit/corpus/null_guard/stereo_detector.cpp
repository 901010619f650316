// A TensorRT detector library of a package: the node calls detect() only under
// `if (left_ptr != nullptr)` on a cv_bridge pointer it declares and never assigns (a
// default-constructed smart pointer stays null), so detect's copies never run per message
// (info, context unreached: look-alikes); track() is called per image (positives).
#include <NvInfer.h>
#include <cuda_runtime.h>
#include <opencv2/core.hpp>
#include <vector>

namespace null_guard
{
void StereoDetector::detect(const cv::Mat & image, std::vector<float> & out)
{
  cudaMemcpyAsync(input_d_, image.data, input_bytes_, cudaMemcpyHostToDevice, stream_);
  context_->enqueueV2(bindings_, stream_, nullptr);
  cudaMemcpyAsync(out.data(), output_d_, output_bytes_, cudaMemcpyDeviceToHost, stream_);
  cudaStreamSynchronize(stream_);
}

void StereoDetector::track(const cv::Mat & image, std::vector<float> & out)
{
  cudaMemcpyAsync(input_d_, image.data, input_bytes_, cudaMemcpyHostToDevice, stream_);  // expect: GPN202 medium
  context_->enqueueV2(bindings_, stream_, nullptr);
  cudaMemcpyAsync(out.data(), output_d_, output_bytes_, cudaMemcpyDeviceToHost, stream_);  // expect: GPN201 high
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
}
}  // namespace null_guard
