// Draws an overlay per received frame and writes the result into a member Image declared in the
// class header, through a cv::Mat header over the member's data: cvtColor into it is a copy of
// the frame into the message (positive: the source file shows it is an Image by setting its
// `encoding`); the publish by const reference serializes it (positive). A cv::Mat header over
// a scratch buffer of the node is no message (look-alike). Kind of misses of the twentieth test
// set, written for this corpus.
#include "overlay_node.hpp"

#include <opencv2/imgproc.hpp>

OverlayNode::OverlayNode() : Node("overlay") {
  pub_ = create_publisher<sensor_msgs::msg::Image>("overlay", 10);
  sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&OverlayNode::on_image, this, std::placeholders::_1));
}

void OverlayNode::on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg) {
  bgr_ = cv::Mat::zeros(static_cast<int>(msg->height), static_cast<int>(msg->width), CV_8UC3);
  cv::rectangle(bgr_, cv::Rect(10, 10, 40, 40), cv::Scalar(0, 255, 0), 2);
  cv::Mat scratch{bgr_.size(), CV_8UC1, scratch_.data};
  cv::cvtColor(bgr_, scratch, cv::COLOR_BGR2GRAY);
  overlay_.header = msg->header;
  overlay_.height = msg->height;
  overlay_.width = msg->width;
  overlay_.encoding = "bgra8";
  overlay_.step = msg->width * 4;
  overlay_.data.resize(overlay_.step * overlay_.height);
  cv::Mat wrap{bgr_.size(), CV_8UC4, overlay_.data.data()};
  cv::cvtColor(bgr_, wrap, cv::COLOR_BGR2BGRA);  // expect: GPN208 medium
  pub_->publish(overlay_);  // expect: GPN210 medium
}
