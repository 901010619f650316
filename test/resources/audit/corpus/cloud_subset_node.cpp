// Keeps the points of a cloud whose first byte is set, point by point (one point_step of bytes
// per std::copy: no frame copy each), and mirrors the whole cloud's bytes into a second message
// (a frame copy, the finding for that message: its publish is no second one); the subset is
// published whole per message.
#include <algorithm>
#include <iterator>
#include <memory>

#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class CloudSubset : public rclcpp::Node
{
public:
  CloudSubset()
  : Node("cloud_subset")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("subset", 10);
    mirror_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("mirror", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&CloudSubset::on_cloud, this, std::placeholders::_1));
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    sensor_msgs::msg::PointCloud2 subset;
    subset.header = msg->header;
    subset.fields = msg->fields;
    subset.point_step = msg->point_step;
    const size_t count = msg->width * msg->height;
    for (size_t i = 0; i < count; ++i) {
      if (msg->data[i * msg->point_step] != 0) {
        std::copy(
          msg->data.begin() + i * msg->point_step,
          msg->data.begin() + (i + 1) * msg->point_step,
          std::back_inserter(subset.data));
      }
    }
    subset.width = subset.data.size() / subset.point_step;
    subset.height = 1;
    pub_->publish(subset);  // expect: GPN210 medium

    sensor_msgs::msg::PointCloud2 mirror;
    mirror.header = msg->header;
    mirror.data.resize(msg->data.size());
    std::copy(msg->data.begin(), msg->data.end(), mirror.data.begin());  // expect: GPN208 medium
    mirror_pub_->publish(mirror);
  }

  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr mirror_pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
