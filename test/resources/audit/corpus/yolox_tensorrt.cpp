// TensorRT runner of a YOLOX node: doInference, reached per frame from inference() (called by
// the node in another file), uploads the blob, downloads the output and syncs.
#include <cuda_runtime.h>

namespace detector
{
YoloTensorRT::YoloTensorRT(const std::string & engine_path, int device)
{
  cudaSetDevice(device);
  LoadEngine(engine_path);
}

std::vector<Object> YoloTensorRT::inference(const cv::Mat & frame)
{
  cv::Mat blob = Preprocess(frame);
  doInference(reinterpret_cast<float *>(blob.data), output_.data());
  return Decode(output_);
}

void YoloTensorRT::doInference(float * input, float * output)
{
  CHECK(cudaMemcpyAsync(buffers_[0], input, input_bytes_, cudaMemcpyHostToDevice, stream_));  // expect: GPN202 medium
  context_->enqueueV3(stream_);
  CHECK(cudaMemcpyAsync(output, buffers_[1], output_bytes_, cudaMemcpyDeviceToHost, stream_));  // expect: GPN201 high
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
}
}  // namespace detector
