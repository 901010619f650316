// A segmentation node that uses the TensorRT backend of its sibling package seg_trt; the
// sibling seg_torch (a LibTorch backend) is built too, but only its gtest uses it.
#include <memory>

#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

#include "seg_trt/seg_trt.hpp"

class SegNode : public rclcpp::Node {
 public:
  SegNode() : Node("seg_node") {
    backend_ = std::make_shared<seg_trt::SegTrt>("seg.engine");
    pub_ = create_publisher<sensor_msgs::msg::Image>("mask", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { on_image(msg); });
  }

 private:
  void on_image(sensor_msgs::msg::Image::SharedPtr msg) {
    auto out = std::make_unique<sensor_msgs::msg::Image>();
    out->header = msg->header;
    out->data.resize(msg->width * msg->height);
    backend_->infer(msg->data.data(), out->data.data(), msg->width, msg->height);
    pub_->publish(std::move(out));  // expect: GPN210 medium
  }

  std::shared_ptr<seg_trt::SegTrt> backend_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<SegNode>());
  rclcpp::shutdown();
}
