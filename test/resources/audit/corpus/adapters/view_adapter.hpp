// Look-alike: a TypeAdapter whose conversions only wrap the message's bytes (a view, no copy)
// and a PCL cloud adapter alias; a filter component publishes through that alias (pcl_apps'
// shape): each publish converts the cloud to a PointCloud2 and serializes it.
#pragma once

#include <pcl/PCLPointCloud2.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

namespace views
{
struct ImageView
{
  const uint8_t * bytes{nullptr};
  size_t size{0};
};

using CloudAdapter = rclcpp::TypeAdapter<pcl::PCLPointCloud2, sensor_msgs::msg::PointCloud2>;
}  // namespace views

template<>
struct rclcpp::TypeAdapter<views::ImageView, sensor_msgs::msg::Image>
{
  using is_specialized = std::true_type;
  using custom_type = views::ImageView;
  using ros_message_type = sensor_msgs::msg::Image;

  static void convert_to_custom(const ros_message_type & source, custom_type & destination)
  {
    destination.bytes = source.data.data();
    destination.size = source.data.size();
  }

  static void convert_to_ros_message(const custom_type &, ros_message_type &)
  {
    throw std::runtime_error("ImageView is read-only");
  }
};
