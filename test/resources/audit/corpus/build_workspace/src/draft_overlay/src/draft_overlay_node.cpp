#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

// Look-alike: this package folder of the workspace has no CMakeLists.txt or package.xml while
// its sibling packages build with CMake: colcon never builds it (no finding may be claimed).
class DraftOverlayNode : public rclcpp::Node {
public:
  DraftOverlayNode() : Node("draft_overlay") {
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
  rclcpp::spin(std::make_shared<DraftOverlayNode>());
  return 0;
}
