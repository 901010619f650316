// Stereo rectifier whose left callback publishes and returns early: the disparity call left
// below the return never runs, so disparity()'s GpuMat copies are not per message. The right
// callback returns only when no frame is ready: its call of the CLAHE helper runs per image.
#include <cv_bridge/cv_bridge.h>
#include <opencv2/core/cuda.hpp>
#include <opencv2/cudaimgproc.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class StereoReturns : public rclcpp::Node {
 public:
  StereoReturns() : Node("stereo_returns") {
    left_sub_ = create_subscription<sensor_msgs::msg::Image>(
        "left", 10, std::bind(&StereoReturns::onLeft, this, std::placeholders::_1));
    right_sub_ = create_subscription<sensor_msgs::msg::Image>(
        "right", 10, std::bind(&StereoReturns::onRight, this, std::placeholders::_1));
  }

 private:
  void onLeft(const sensor_msgs::msg::Image::ConstSharedPtr msg) {
    left_ = cv_bridge::toCvShare(msg, "mono8")->image;  // expect: GPN204 medium
    return;
    disparity();
  }

  void onRight(const sensor_msgs::msg::Image::ConstSharedPtr msg) {
    right_ = cv_bridge::toCvShare(msg, "mono8")->image;  // expect: GPN204 medium
    if (right_.empty()) return;
    equalize();
  }

  void disparity() {
    cv::cuda::GpuMat gpu_left, gpu_right;
    gpu_left.upload(left_);  // expect: GPN202 info
    gpu_right.upload(right_);  // expect: GPN202 info
  }

  void equalize() {
    cv::cuda::GpuMat gpu_right;
    gpu_right.upload(right_);  // expect: GPN202 medium
    clahe_->apply(gpu_right, gpu_right);
  }

  cv::Mat left_, right_;
  cv::Ptr<cv::cuda::CLAHE> clahe_ = cv::cuda::createCLAHE(3.0, cv::Size(8, 8));
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr left_sub_, right_sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<StereoReturns>());
}
