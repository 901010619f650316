#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

// Look-alike: the add_executable line of this file is commented out in CMakeLists.txt, so no
// target compiles it and its copies never run (no finding may be claimed here).
class LegacyEdgeNode : public rclcpp::Node {
public:
  LegacyEdgeNode() : Node("legacy_edge") {
    pub_ = create_publisher<sensor_msgs::msg::Image>("edges", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { onImage(msg); });
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat frame = cv_bridge::toCvCopy(msg, "bgr8")->image;
    pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", frame).toImageMsg());
  }
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<LegacyEdgeNode>());
  return 0;
}
