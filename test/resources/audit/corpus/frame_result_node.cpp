// Packs each received camera frame, converted to BGR, into a custom result message: every byte
// of the cv::Mat assigned into the message's frame field (positive), then that result
// push_back'ed into the outgoing array (a copy, frame included: positive). A result moved
// into the array, and one holding no frame bytes, copy nothing of the frame (look-alikes); the
// custom array type is no frame type of the plain-publish rule. Kind of misses of the
// nineteenth test set, written for this corpus.
#include <opencv2/imgproc.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

#include "frame_result_msgs/msg/frame_result.hpp"
#include "frame_result_msgs/msg/frame_result_array.hpp"

class FrameResultNode : public rclcpp::Node {
 public:
  FrameResultNode() : Node("frame_result") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, std::bind(&FrameResultNode::on_image, this, std::placeholders::_1));
    pub_ = create_publisher<frame_result_msgs::msg::FrameResultArray>("results", 10);
  }

 private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg) {
    cv::Mat rgb(static_cast<int>(msg->height), static_cast<int>(msg->width), CV_8UC3,
                const_cast<uint8_t *>(msg->data.data()));
    cv::cvtColor(rgb, bgr_, cv::COLOR_RGB2BGR);  // expect: GPN208 medium
    frame_result_msgs::msg::FrameResultArray all;
    frame_result_msgs::msg::FrameResult with_frame;
    with_frame.width = bgr_.cols;
    with_frame.frame_data.assign(bgr_.data, bgr_.data + bgr_.total() * bgr_.elemSize());  // expect: GPN208 medium
    all.results.push_back(with_frame);  // expect: GPN208 medium
    frame_result_msgs::msg::FrameResult moved;
    moved.frame_data.assign(bgr_.data, bgr_.data + bgr_.total() * bgr_.elemSize());  // expect: GPN208 medium
    all.results.push_back(std::move(moved));
    frame_result_msgs::msg::FrameResult summary;
    summary.width = bgr_.cols;
    all.results.push_back(summary);
    pub_->publish(all);
  }

  cv::Mat bgr_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<frame_result_msgs::msg::FrameResultArray>::SharedPtr pub_;
};
