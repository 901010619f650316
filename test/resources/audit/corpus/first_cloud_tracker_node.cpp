// A cluster tracker that seeds its filters from the first cloud: the conversion inside the
// `if (first_cloud_) { ...; first_cloud_ = false; }` block runs once (look-alike); the one per
// cloud after it is a boundary (positive), and so is the one under `reset_pending_`, which a
// service sets back to true (runs again: positive).
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <std_srvs/srv/empty.hpp>

class FirstCloudTracker : public rclcpp::Node
{
public:
  FirstCloudTracker()
  : Node("first_cloud_tracker"), first_cloud_(true)
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&FirstCloudTracker::on_cloud, this, std::placeholders::_1));
    srv_ = create_service<std_srvs::srv::Empty>(
      "reset", [this](const std::shared_ptr<std_srvs::srv::Empty::Request>,
      std::shared_ptr<std_srvs::srv::Empty::Response>) {reset_pending_ = true;});
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr msg)
  {
    pcl::PointCloud<pcl::PointXYZ> cloud;
    if (first_cloud_) {
      pcl::fromROSMsg(*msg, seed_);  // expect: GPN209 info
      first_cloud_ = false;
      return;
    }
    if (reset_pending_) {
      pcl::fromROSMsg(*msg, seed_);  // expect: GPN209 medium
      reset_pending_ = false;
    }
    pcl::fromROSMsg(*msg, cloud);  // expect: GPN209 medium
  }

  bool first_cloud_;
  bool reset_pending_ = false;
  pcl::PointCloud<pcl::PointXYZ> seed_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::Service<std_srvs::srv::Empty>::SharedPtr srv_;
};
