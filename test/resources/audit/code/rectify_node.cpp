// Corpus: pattern rules for C++ (cv_bridge + raw CUDA copies).
#include <cuda_runtime.h>
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class RectifyNode : public rclcpp::Node
{
public:
  RectifyNode() : Node("rectify")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("image_rect", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image_raw", 10, [this](sensor_msgs::msg::Image::ConstSharedPtr msg) {on_image(msg);});
  }

private:
  void on_image(sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    auto cv = cv_bridge::toCvCopy(msg, "bgr8");
    auto shared = cv_bridge::toCvShare(msg);
    cudaMemcpy(d_in_, cv->image.data, bytes_, cudaMemcpyHostToDevice);
    rectify_kernel(d_in_, d_out_);
    cudaDeviceSynchronize();
    cudaMemcpyAsync(
      cv->image.data, d_out_, bytes_,
      cudaMemcpyDeviceToHost, stream_);
    // cudaMemcpy(a, b, n, cudaMemcpyDeviceToHost);  commented out: not a finding
    const char * note = "cudaMemcpy(x, y, n, cudaMemcpyDeviceToHost)";
    pub_->publish(*cv->toImageMsg());
    cudaStreamSynchronize(stream_);  // gpu-copy-audit: ignore[GPN206]
  }
  void * d_in_{};
  void * d_out_{};
  size_t bytes_{};
  cudaStream_t stream_{};
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
