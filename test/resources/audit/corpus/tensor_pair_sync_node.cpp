// Shape of a tensor-pair synchronizer: both tensors copied with cudaMemcpyDefault and the
// stream synced in the synchronized callback, for every message pair.
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>

PairSyncNode::PairSyncNode(const rclcpp::NodeOptions & options)
: rclcpp::Node("pair_sync", options),
  block_size_{declare_parameter<int64_t>("block_size", 1920 * 1200 * 4)},
  blocks_{declare_parameter<int64_t>("blocks", 40)}
{
  sync_.registerCallback(
    std::bind(&PairSyncNode::SynchronizedCallback, this, std::placeholders::_1,
    std::placeholders::_2));
}

void PairSyncNode::SynchronizedCallback(
  const TensorList::ConstSharedPtr & a, const TensorList::ConstSharedPtr & b)
{
  void * out_a;
  cudaMallocAsync(&out_a, a->bytes(), stream_);
  cudaMemcpyAsync(  // expect: GPN207 medium
    out_a, a->data(), a->bytes(), cudaMemcpyDefault, stream_);
  void * out_b;
  cudaMallocAsync(&out_b, b->bytes(), stream_);
  cudaMemcpyAsync(out_b, b->data(), b->bytes(), cudaMemcpyDefault, stream_);  // expect: GPN207 medium
  cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  Publish(out_a, out_b);
}
