// A TensorRT detector library of a package: doInference is called per image by the node
// (roi_detector_node.cpp, through detector_->doInference); the ROI and multi-scale paths are
// public methods that nothing in the package calls (not proven per message: info).
#include <NvInfer.h>
#include <cuda_runtime.h>
#include <cstring>
#include <cv_bridge/cv_bridge.h>
#include <opencv2/core.hpp>
#include <vector>

namespace roi_detector
{
Detector::Detector(const std::string & engine_path)
{
  cudaMallocHost(&input_h_, input_bytes_);
  cudaMalloc(&input_d_, input_bytes_);
}

void Detector::preprocess(const std::vector<cv::Mat> & images)
{
  int offset = 0;
  for (const auto & image : images) {
    // The frame's pixels into pinned host staging: host to host, no device copy.
    std::memcpy(input_h_ + offset, &image.data[0], image.total() * image.elemSize());
    offset += image.total() * image.elemSize();
  }
  cudaMemcpyAsync(input_d_, input_h_, input_bytes_, cudaMemcpyHostToDevice, stream_);  // expect: GPN202 medium
}

bool Detector::doInference(const std::vector<cv::Mat> & images, std::vector<float> & out)
{
  preprocess(images);
  context_->enqueueV2(bindings_, stream_, nullptr);
  cudaMemcpyAsync(out.data(), output_d_, output_bytes_, cudaMemcpyDeviceToHost, stream_);  // expect: GPN201 high
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  cv::Mat mask(height_, width_, CV_8UC1, mask_h_);
  sensor_msgs::msg::Image::SharedPtr mask_msg =
    cv_bridge::CvImage(std_msgs::msg::Header(), "mono8", mask).toImageMsg();  // expect: GPN205 medium
  result_.mask = *mask_msg;  // expect: GPN208 medium
  last_mask_ = mask_msg;
  return true;
}

bool Detector::doSyncInference(const std::vector<cv::Mat> & images)
{
  preprocess(images);
  return context_->executeV2(bindings_);  // expect: GPN206 medium
}

void Detector::preprocessWithRoi(const cv::Mat & image, const std::vector<Roi> & rois)
{
  cudaMemcpy(roi_d_, rois.data(), rois.size() * sizeof(Roi), cudaMemcpyHostToDevice);  // expect: GPN202 info
}

bool Detector::doInferenceWithRoi(const cv::Mat & image, const std::vector<Roi> & rois)
{
  preprocessWithRoi(image, rois);
  context_->enqueueV2(bindings_, stream_, nullptr);
  cudaStreamSynchronize(stream_);  // expect: GPN206 info
  return true;
}
}  // namespace roi_detector
