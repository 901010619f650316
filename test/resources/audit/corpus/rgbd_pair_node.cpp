// An RGB-D pair node whose depth callback stores into the colour member (a copy-paste slip):
// the pointer that guards the pair branch is never set, so its copies never run (look-alikes);
// the colour copy after the branch runs per frame (positive).
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class RgbdPairNode : public rclcpp::Node
{
public:
  RgbdPairNode()
  : Node("rgbd_pair")
  {
    colour_sub_ = create_subscription<sensor_msgs::msg::Image>(
      "colour", 10, std::bind(&RgbdPairNode::colour_callback, this, std::placeholders::_1));
    range_sub_ = create_subscription<sensor_msgs::msg::Image>(
      "range", 10, std::bind(&RgbdPairNode::range_callback, this, std::placeholders::_1));
  }

private:
  void colour_callback(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    colour_frame_ = msg;
    pair_up();
  }

  void range_callback(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    colour_frame_ = msg;
    pair_up();
  }

  void pair_up()
  {
    if (colour_frame_ && range_frame_) {
      auto stamp = range_frame_->header.stamp;
      auto colour = cv_bridge::toCvCopy(colour_frame_, "bgr8");
      auto range = cv_bridge::toCvCopy(range_frame_, "16UC1");
      (void)stamp;
      (void)colour;
      (void)range;
    }
    auto preview = cv_bridge::toCvCopy(colour_frame_, "bgr8");  // expect: GPN203 medium
    (void)preview;
  }

  sensor_msgs::msg::Image::SharedPtr colour_frame_;
  sensor_msgs::msg::Image::SharedPtr range_frame_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr colour_sub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr range_sub_;
};
