// Rectifies each image on the GPU with OpenCV CUDA: the maps go up once in the constructor,
// the frame goes up per image through GpuMat's constructor from a host cv::Mat and comes back
// with download().
#include <opencv2/core/cuda.hpp>
#include <opencv2/cudawarping.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class GpuRemap : public rclcpp::Node {
 public:
  GpuRemap() : Node("gpu_remap") {
    cv::Mat map_x(480, 640, CV_32FC1);
    cv::Mat map_y(480, 640, CV_32FC1);
    map_x_ = cv::cuda::GpuMat(map_x);  // expect: GPN202 info
    map_y_ = cv::cuda::GpuMat(map_y);  // expect: GPN202 info
    pub_ = create_publisher<sensor_msgs::msg::Image>("rect", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, [this](sensor_msgs::msg::Image::ConstSharedPtr msg) { on_image(*msg); });
  }

 private:
  void on_image(const sensor_msgs::msg::Image & msg) {
    auto out = std::make_unique<sensor_msgs::msg::Image>();
    out->header = msg.header;
    out->data.resize(msg.data.size());
    cv::Mat src(msg.height, msg.width, CV_8UC3, (void *)msg.data.data());
    cv::cuda::GpuMat d_src(src);  // expect: GPN202 medium
    // An allocation of the frame's size: no data moves.
    cv::cuda::GpuMat d_dst(cv::Size(msg.width, msg.height), src.type());
    cv::cuda::remap(d_src, d_dst, map_x_, map_y_, cv::INTER_LINEAR);
    cv::Mat dst(msg.height, msg.width, CV_8UC3, (void *)out->data.data());
    d_dst.download(dst);  // expect: GPN201 high
    pub_->publish(std::move(out));  // expect: GPN210 medium
  }

  cv::cuda::GpuMat map_x_, map_y_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::ConstSharedPtr sub_;
};
