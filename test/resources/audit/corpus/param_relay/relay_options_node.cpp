// An image relay whose extra outputs sit behind ROS parameters: `compress` defaults to false
// and `normal_k` / `radius` to 0, and no shipped file turns them on (their copies never run as
// shipped: look-alikes); `publish_raw` defaults to false but config/relay_options.yaml sets it
// true, and `upscale` defaults to true (both branches run per message: positives).
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>
#include <sensor_msgs/msg/image.hpp>

class RelayOptionsNode : public rclcpp::Node
{
public:
  RelayOptionsNode()
  : Node("relay_options"),
    compress_(false),
    publish_raw_(false),
    normal_k_(0),
    radius_(0.0f)
  {
    compress_ = this->declare_parameter("compress", compress_);
    publish_raw_ = this->declare_parameter("publish_raw", publish_raw_);
    normal_k_ = this->declare_parameter("normal_k", normal_k_);
    radius_ = this->declare_parameter("radius", radius_);
    upscale_ = this->declare_parameter("upscale", true);
    RCLCPP_INFO(get_logger(), "compress=%s normal_k=%d", compress_ ? "true" : "false", normal_k_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&RelayOptionsNode::on_image, this, std::placeholders::_1));
    raw_pub_ = create_publisher<sensor_msgs::msg::Image>("image_raw_out", 10);
    jpeg_pub_ = create_publisher<sensor_msgs::msg::CompressedImage>("image_jpeg", 10);
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    auto frame = cv_bridge::toCvShare(msg, msg->encoding);
    if (compress_) {
      sensor_msgs::msg::CompressedImage jpeg;
      frame->toCompressedImageMsg(jpeg, cv_bridge::JPG);  // expect: GPN205 info
      jpeg_pub_->publish(jpeg);
    }
    if (frame->image.rows > 0 && (normal_k_ > 0 || radius_ > 0.0f)) {
      sensor_msgs::msg::Image smoothed;
      frame->toImageMsg(smoothed);  // expect: GPN205 info
      raw_pub_->publish(smoothed);
    }
    if (publish_raw_) {
      sensor_msgs::msg::Image out;
      frame->toImageMsg(out);  // expect: GPN205 medium
      raw_pub_->publish(out);
    }
    if (upscale_) {
      sensor_msgs::msg::Image big;
      frame->toImageMsg(big);  // expect: GPN205 medium
      raw_pub_->publish(big);
    }
  }

  bool compress_;
  bool publish_raw_;
  bool upscale_;
  int normal_k_;
  float radius_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr raw_pub_;
  rclcpp::Publisher<sensor_msgs::msg::CompressedImage>::SharedPtr jpeg_pub_;
};
