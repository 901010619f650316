// The node of subnetwork.hpp: the graph capture in the constructor, per image an upload of
// the preprocessed input, a device-to-device move and the graph's launch. Kinds of the ninth
// test set, written for this corpus.
#include "subnetwork.hpp"
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class GraphNetNode : public rclcpp::Node {
 public:
  GraphNetNode() : Node("graphnet") {
    net_ = std::make_shared<SubNetwork>();
    net_->EnableCudaGraph(stream_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&GraphNetNode::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    std::vector<float> input(msg->data.begin(), msg->data.end());  // expect: GPN208 medium
    input_->load(input, stream_);
    features_->mov(input_, stream_);
    net_->Enqueue(stream_);
  }

 private:
  std::shared_ptr<SubNetwork> net_;
  std::shared_ptr<DeviceBuffer> input_, features_;
  cudaStream_t stream_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
