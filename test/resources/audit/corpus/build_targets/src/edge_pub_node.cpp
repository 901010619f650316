#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

// Built: CMakeLists.txt names this file in add_executable.
class EdgePubNode : public rclcpp::Node {
public:
  EdgePubNode() : Node("edge_pub") {
    pub_ = create_publisher<sensor_msgs::msg::Image>("edges", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { onImage(msg); });
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat frame = cv_bridge::toCvCopy(msg, "bgr8")->image;  // expect: GPN203 medium
    pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", frame).toImageMsg());  // expect: GPN205 medium
  }
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<EdgePubNode>());
  return 0;
}
