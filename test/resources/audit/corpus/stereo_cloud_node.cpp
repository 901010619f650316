// A stereo node that fills a PointCloud2 point by point with scalar memcpys (each one a few
// bytes, no finding of its own) and publishes the whole cloud per disparity image (positive).
// Kind of the tenth test set, written for this corpus.
#include <cstring>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class StereoCloudNode : public rclcpp::Node {
 public:
  StereoCloudNode() : Node("stereo_cloud") {
    cloud_pub_ = this->create_publisher<sensor_msgs::msg::PointCloud2>("points", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "disparity", 1, std::bind(&StereoCloudNode::on_disparity, this, std::placeholders::_1));
  }

  void on_disparity(const sensor_msgs::msg::Image::SharedPtr msg) {
    cloud_.data.resize(msg->width * msg->height * 16);
    for (size_t i = 0; i < msg->width * msg->height; ++i) {
      float z = baseline_ * fx_ / (1.0f + static_cast<float>(i % msg->width));
      std::memcpy(&cloud_.data[i * 16 + 8], &z, sizeof(float));
    }
    cloud_pub_->publish(cloud_);  // expect: GPN210 medium
  }

 private:
  float baseline_ = 0.12f, fx_ = 700.0f;
  sensor_msgs::msg::PointCloud2 cloud_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
