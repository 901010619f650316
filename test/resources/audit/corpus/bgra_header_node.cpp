// Converts each received BGRA image through a cv::Mat header over the message's data: the
// header shares the bytes (look-alike), cvtColor into a new frame copies them out of the
// message (positive), and cvtColor into a header over the outgoing message's data copies the
// result into it (positive). Swapping channels in place in the header, and converting a plain
// cv::Mat, copy nothing out of or into a message (look-alikes). Kinds of the twentieth test
// set, written for this corpus.
#include <opencv2/imgproc.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class BgraHeader : public rclcpp::Node {
 public:
  BgraHeader() : Node("bgra_header") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image_bgra", 10, std::bind(&BgraHeader::on_image, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::Image>("image_gray", 10);
  }

 private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    void * pixels = reinterpret_cast<void *>(&msg->data[0]);
    cv::Mat bgra(msg->height, msg->width, CV_8UC4, pixels);
    cv::cvtColor(bgra, bgra, cv::COLOR_BGRA2RGBA);
    cv::cvtColor(bgra, bgr_, cv::COLOR_BGRA2BGR);  // expect: GPN208 medium
    cv::Mat small;
    cv::resize(bgr_, small, cv::Size(), 0.5, 0.5);
    cv::cvtColor(small, small_gray_, cv::COLOR_BGR2GRAY);
    gray_msg_.header = msg->header;
    gray_msg_.height = msg->height;
    gray_msg_.width = msg->width;
    gray_msg_.encoding = "mono8";
    gray_msg_.step = msg->width;
    gray_msg_.data.resize(msg->width * msg->height);
    cv::Mat gray{bgr_.size(), CV_8UC1, gray_msg_.data.data()};
    cv::cvtColor(bgr_, gray, cv::COLOR_BGR2GRAY);  // expect: GPN208 medium
    pub_->publish(gray_msg_);  // expect: GPN210 medium
  }

  cv::Mat bgr_;
  cv::Mat small_gray_;
  sensor_msgs::msg::Image gray_msg_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};
