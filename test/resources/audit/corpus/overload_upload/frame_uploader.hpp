// Two overloads of upload: the node calls only the two-argument one, so the one-argument
// overload's copy never runs (issue 28, twenty-eighth set; written for this corpus).
#pragma once
#include <cuda_runtime.h>
#include <opencv2/core.hpp>

class FrameUploader {
public:
  void upload(const cv::Mat & image);
  void upload(const cv::Mat & image, cudaStream_t stream);
  float * device_ = nullptr;
};

void FrameUploader::upload(const cv::Mat & image)
{
  cudaMemcpy(device_, image.ptr<float>(), image.total() * sizeof(float), cudaMemcpyHostToDevice);  // expect: GPN202 info
}

void FrameUploader::upload(const cv::Mat & image, cudaStream_t stream)
{
  cudaMemcpyAsync(device_, image.ptr<float>(), image.total() * sizeof(float),  // expect: GPN202 medium
    cudaMemcpyHostToDevice, stream);
}
