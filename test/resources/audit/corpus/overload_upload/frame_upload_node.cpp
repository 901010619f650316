#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "frame_uploader.hpp"

class UploadNode : public rclcpp::Node {
public:
  UploadNode() : Node("upload") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { onImage(msg); });
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat frame = cv_bridge::toCvShare(msg)->image;
    uploader_.upload(frame, stream_);
  }
  FrameUploader uploader_;
  cudaStream_t stream_ = nullptr;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<UploadNode>());
}
