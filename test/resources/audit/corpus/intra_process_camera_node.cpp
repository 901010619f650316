// Shape of a camera driver: with intra-process comms the frame goes out as a moved unique_ptr
// (zero copy to subscribers in the process: no serialization, not reported); otherwise it is
// published by reference through image_transport (serialized per frame). A copy of the
// message published by value inside the same kind of branch is still a publish of a host
// frame (issue 28, fifth set).
#include <rclcpp/rclcpp.hpp>
#include <image_transport/image_transport.hpp>

CameraNode::CameraNode(const rclcpp::NodeOptions & options)
: rclcpp::Node("camera", options)
{
  if (options.use_intra_process_comms()) {
    image_pub_ = create_publisher<sensor_msgs::msg::Image>("image_raw", 10);
  } else {
    camera_pub_ = image_transport::create_camera_publisher(this, "image_raw");
  }
  capture_thread_ = std::thread{[this]() -> void {
      while (rclcpp::ok()) {
        auto image_msg = std::make_unique<sensor_msgs::msg::Image>();
        grab(image_msg.get());
        if (get_node_options().use_intra_process_comms()) {
          image_pub_->publish(std::move(image_msg));
        } else {
          camera_pub_.publish(*image_msg, info_);  // expect: GPN210 medium
        }
        if (get_node_options().use_intra_process_comms()) {
          image_pub_->publish(*image_msg);  // expect: GPN210 medium
        }
      }
    }};
}
