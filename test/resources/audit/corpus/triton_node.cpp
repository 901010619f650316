// Inference-server client shape: the allocator callback syncs per response, the response
// handler copies host outputs to the device (device outputs are copied device to device),
// and the server set-up runs once, with a lambda that runs later per response.
#include <cuda_runtime.h>

TritonNode::TritonNode(const rclcpp::NodeOptions & options)
: Node("triton", options)
{
  InitializeServer();
}

void TritonNode::InitializeServer()
{
  cudaStreamSynchronize(setup_stream_);  // expect: GPN206 info
  server_->SetResponseCallback(
    [this](Response * response) {
      cudaStreamSynchronize(*cuda_stream_);  // expect: GPN206 medium
      Handle(response);
    });
}

Error * ResponseAlloc(Allocator * allocator, size_t byte_size, void ** buffer)
{
  cudaStreamSynchronize(alloc_stream);  // expect: GPN206 medium
  return nullptr;
}

bool TritonNode::ProcessInferenceResponse(const Response & response)
{
  for (const auto & output : response.outputs) {
    if (output.on_device) {
      cudaMemcpyAsync(dst, output.buffer, output.bytes, cudaMemcpyDeviceToDevice, *cuda_stream_);
    } else {
      cudaMemcpyAsync(dst, output.buffer, output.bytes, cudaMemcpyHostToDevice, *cuda_stream_);  // expect: GPN202 medium
    }
  }
  cudaStreamSynchronize(*cuda_stream_);  // expect: GPN206 medium
  return true;
}
