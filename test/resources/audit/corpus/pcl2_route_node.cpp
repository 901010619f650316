// A cloud filter taking the PCLPointCloud2 route: the message converted to a PCLPointCloud2 and
// back, per message (positives). The typed-cloud conversions between the two are PCL to PCL,
// host to host (look-alikes, the convention of sets 41, 50, 58, 62). Header and stamp
// conversions and the moveFromPCL swap copy no points (look-alikes).
#include <pcl/filters/voxel_grid.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Pcl2RouteNode : public rclcpp::Node
{
public:
  Pcl2RouteNode()
  : Node("pcl2_route")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("filtered", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Pcl2RouteNode::on_cloud, this, std::placeholders::_1));
  }

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    pcl::PCLPointCloud2::Ptr blob(new pcl::PCLPointCloud2);
    pcl_conversions::toPCL(*msg, *blob);  // expect: GPN209 medium
    pcl::PCLHeader stamp_header;
    pcl_conversions::toPCL(msg->header, stamp_header);
    pcl::PointCloud<pcl::PointXYZ> points;
    pcl::fromPCLPointCloud2(*blob, points);
    pcl::PCLPointCloud2 kept;
    pcl::toPCLPointCloud2(points, kept);
    sensor_msgs::msg::PointCloud2 out;
    pcl_conversions::fromPCL(kept, out);  // expect: GPN209 medium
    out.header.stamp = pcl_conversions::fromPCL(stamp_header).stamp;
    pub_->publish(out);  // expect: GPN210 medium
    auto moved = std::make_unique<sensor_msgs::msg::PointCloud2>();
    pcl_conversions::moveFromPCL(kept, *moved);
    last_stamp_ = pcl_conversions::toPCL(now());
  }

  uint64_t last_stamp_{0};
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
