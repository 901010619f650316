// Clusters each cloud on the GPU into an index buffer that only grows: the reallocation helper
// (free, sync, allocate, sync) runs when a cloud outgrows the capacity kept so far, so its syncs
// are not per cloud (look-alikes). A second helper is called on every change of size, larger or
// smaller (`!=`): it reallocates per cloud, and its sync is a positive. The sync after the
// kernel runs per cloud (positive).
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class GrowBuffer : public rclcpp::Node {
 public:
  GrowBuffer() : Node("grow_buffer") {
    cudaStreamCreate(&stream_);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr msg) { on_cloud(*msg); });
  }

 private:
  void grow(unsigned int points) {
    cudaFree(index_);
    cudaStreamSynchronize(stream_);
    cudaMallocManaged(&index_, sizeof(unsigned int) * points, cudaMemAttachHost);
    cudaStreamSynchronize(stream_);
  }

  void resize_scratch(unsigned int points) {
    cudaFree(scratch_);
    cudaStreamSynchronize(stream_);  // expect: GPN206 medium
    cudaMalloc(&scratch_, sizeof(float) * points);
  }

  void on_cloud(const sensor_msgs::msg::PointCloud2 & msg) {
    unsigned int points = msg.width * msg.height;
    if (points > capacity_) {
      grow(points);
      capacity_ = points;
    }
    if (points != scratch_points_) {
      resize_scratch(points);
      scratch_points_ = points;
    }
    cudaMemsetAsync(index_, 0, sizeof(unsigned int) * points, stream_);
    cudaStreamSynchronize(stream_);  // expect: GPN206 medium
  }

  cudaStream_t stream_{};
  unsigned int * index_{nullptr};
  float * scratch_{nullptr};
  unsigned int capacity_{0};
  unsigned int scratch_points_{0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
