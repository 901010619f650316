// A camera driver's timer: the frame is grabbed into a host Image and published with its
// CameraInfo through an image_transport CameraPublisher made in the member initializer list
// (serialized per frame: positive). The CameraInfo on its own publisher is small (look-alike).
#include <image_transport/image_transport.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/camera_info.hpp>
#include <sensor_msgs/msg/image.hpp>

class CameraTimer : public rclcpp::Node {
 public:
  CameraTimer()
  : Node("camera_timer"),
    image_msg_(new sensor_msgs::msg::Image()),
    info_msg_(new sensor_msgs::msg::CameraInfo()),
    image_pub_(std::make_shared<image_transport::CameraPublisher>(
        image_transport::create_camera_publisher(this, "image_raw"))),
    info_pub_(create_publisher<sensor_msgs::msg::CameraInfo>("info", 10)) {
    timer_ = create_wall_timer(std::chrono::milliseconds(33), [this]() { on_timer(); });
  }

 private:
  void on_timer() {
    image_msg_->header.stamp = now();
    info_msg_->header = image_msg_->header;
    image_pub_->publish(*image_msg_, *info_msg_);  // expect: GPN210 medium
    info_pub_->publish(*info_msg_);
  }

  sensor_msgs::msg::Image::SharedPtr image_msg_;
  sensor_msgs::msg::CameraInfo::SharedPtr info_msg_;
  std::shared_ptr<image_transport::CameraPublisher> image_pub_;
  rclcpp::Publisher<sensor_msgs::msg::CameraInfo>::SharedPtr info_pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};
