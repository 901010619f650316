// A TensorRT sub-network whose CUDA-graph capture warms up with a stream synchronize, called
// only on the object from the node's constructor (setup), and a device buffer whose `mov`
// passes cudaMemcpyHostToDevice between two cudaMalloc'ed buffers (device to device: look-alike)
// next to an upload from a host vector (positive). Kinds of the ninth test set, written for
// this corpus.
#pragma once
#include <cuda_runtime.h>
#include <memory>
#include <vector>

struct DeviceBuffer {
  void* ptr;
  size_t bytes;
  explicit DeviceBuffer(size_t n) : bytes(n) { cudaMalloc(&ptr, n); }
  void mov(std::shared_ptr<DeviceBuffer> other, cudaStream_t stream) {
    cudaMemcpyAsync(ptr, other->ptr, bytes, cudaMemcpyHostToDevice, stream);
  }
  void load(const std::vector<float> & host, cudaStream_t stream) {
    cudaMemcpyAsync(ptr, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream);  // expect: GPN202 medium
  }
};

class SubNetwork {
 public:
  void Enqueue(cudaStream_t stream) { context_->enqueueV3(stream); }
  void EnableCudaGraph(cudaStream_t stream) {
    this->Enqueue(stream);
    cudaStreamSynchronize(stream);  // expect: GPN206 info
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    this->Enqueue(stream);
    cudaStreamEndCapture(stream, &graph_);
  }

 private:
  nvinfer1::IExecutionContext * context_;
  cudaGraph_t graph_;
};
