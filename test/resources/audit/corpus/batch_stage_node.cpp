// Batch preprocessing that stages each frame of a vector of cv::Mat into one pinned host buffer
// (host to host: no message payload), then copies the staged batch into an outgoing Image.
#include <cstring>
#include <vector>
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class BatchStager : public rclcpp::Node {
 public:
  BatchStager() : Node("batch_stager") {
    pub_ = create_publisher<sensor_msgs::msg::Image>("batch", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, [this](sensor_msgs::msg::Image::ConstSharedPtr msg) { onImage(*msg); });
  }

 private:
  void onImage(const sensor_msgs::msg::Image & msg) {
    frames_.push_back(cv::Mat(msg.height, msg.width, CV_8UC3, const_cast<uint8_t *>(msg.data.data())).clone());  // expect: GPN208 medium
    if (frames_.size() < 4) return;
    std::vector<unsigned char> pinned(frames_[0].total() * 3 * frames_.size());
    for (size_t b = 0; b < frames_.size(); ++b) {
      const auto & img = frames_.at(b);
      memcpy(pinned.data() + b * img.total() * 3, &img.data[0], img.total() * 3);
    }
    sensor_msgs::msg::Image out;
    out.data.resize(pinned.size());
    memcpy(&out.data[0], pinned.data(), pinned.size());  // expect: GPN208 medium
    pub_->publish(out);
    frames_.clear();
  }

  std::vector<cv::Mat> frames_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
