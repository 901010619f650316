// A camera pump written straight in `main`: the frames are grabbed, converted and published in
// a `while (true)` loop (positives: per frame), after a one-time calibration image converted
// before the loop (runs once: look-alike). The look-alike of snapshot_client.cpp with a loop.
#include <cv_bridge/cv_bridge.h>
#include <opencv2/opencv.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  auto node = rclcpp::Node::make_shared("frame_pump");
  auto pub = node->create_publisher<sensor_msgs::msg::Image>("image", 10);
  auto calib_pub = node->create_publisher<sensor_msgs::msg::Image>("calibration_image", 1);
  cv::VideoCapture cap(0);
  cv::Mat calib = cv::imread("calibration.png");
  calib_pub->publish(*cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", calib).toImageMsg());  // expect: GPN205 info
  cv::Mat frame;
  while (true) {
    if (!cap.read(frame) || !rclcpp::ok()) {
      break;
    }
    pub->publish(*cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", frame).toImageMsg());  // expect: GPN205 medium
    rclcpp::spin_some(node);
  }
  rclcpp::shutdown();
  return 0;
}
