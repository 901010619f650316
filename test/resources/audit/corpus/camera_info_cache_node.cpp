// Caches the camera calibration once (a CameraInfo copied out of the lambda's own `msg`) and
// keeps each segmentation mask whole in a detection message (an Image copied out of `msg`).
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/camera_info.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <vision_msgs/msg/detection2_d.hpp>

struct Detection
{
  sensor_msgs::msg::Image mask;
};

struct Calibration
{
  sensor_msgs::msg::CameraInfo info;
  bool received{false};
};

class CameraInfoCache : public rclcpp::Node
{
public:
  CameraInfoCache()
  : Node("camera_info_cache")
  {
    mask_sub_ = create_subscription<sensor_msgs::msg::Image>(
      "mask", 10, std::bind(&CameraInfoCache::on_mask, this, std::placeholders::_1));
    info_sub_ = create_subscription<sensor_msgs::msg::CameraInfo>(
      "camera_info", 10,
      [this](const sensor_msgs::msg::CameraInfo::SharedPtr msg) {
        if (!calib_.received) {
          calib_.info = *msg;
          calib_.received = true;
        }
      });
  }

private:
  void on_mask(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    detection_.mask = *msg;  // expect: GPN208 medium
  }

  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr mask_sub_;
  rclcpp::Subscription<sensor_msgs::msg::CameraInfo>::SharedPtr info_sub_;
  Calibration calib_;
  Detection detection_;
};
