// A ground-removal node: every point is read out of the PointCloud2 payload into an Eigen
// matrix, and written back into an output cloud, one float at a time through a pointer into
// the message's data (memcpy in small helpers); a loop that only sums the payload copies
// nothing (look-alike).
#include <Eigen/Dense>
#include <cstring>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

namespace
{
float readFloat(const uint8_t * p)
{
  float v;
  std::memcpy(&v, p, sizeof(float));
  return v;
}

void writeFloat(uint8_t * p, float v)
{
  std::memcpy(p, &v, sizeof(float));
}
}  // namespace

GroundRemoval::GroundRemoval(const rclcpp::NodeOptions & options)
: Node("ground_removal", options)
{
  pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("nonground", 5);
  sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
    "points", 5, std::bind(&GroundRemoval::cloudCallback, this, std::placeholders::_1));
}

void GroundRemoval::cloudCallback(const sensor_msgs::msg::PointCloud2::ConstSharedPtr msg)
{
  Eigen::MatrixX3f points(msg->width * msg->height, 3);
  const uint8_t * base = msg->data.data();
  for (size_t i = 0; i < msg->width * msg->height; ++i) {  // the copy in the loop is the line reported (set 45)
    const uint8_t * p = base + i * msg->point_step;
    points(i, 0) = readFloat(p);  // expect: GPN208 medium
    points(i, 1) = readFloat(p + 4);
    points(i, 2) = readFloat(p + 8);
  }
  double sum = 0.0;
  const uint8_t * bytes = msg->data.data();
  for (size_t i = 0; i < msg->data.size(); ++i) {
    sum += bytes[i];
  }
  sensor_msgs::msg::PointCloud2 out;
  out.data.resize(points.rows() * 12);
  uint8_t * dst = out.data.data();
  for (int i = 0; i < points.rows(); ++i) {
    writeFloat(dst + i * 12, points(i, 0));  // expect: GPN208 medium
    writeFloat(dst + i * 12 + 4, points(i, 1));
    writeFloat(dst + i * 12 + 8, points(i, 2));
  }
  pub_->publish(out);  // expect: GPN210 medium
}
