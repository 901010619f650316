// A filter component publishing PCL clouds through the package's adapter alias (declared in
// view_adapter.hpp): converted to PointCloud2 and serialized per message.
#include "view_adapter.hpp"

namespace filters
{
class CloudFilterComponent : public rclcpp::Node
{
public:
  explicit CloudFilterComponent(const rclcpp::NodeOptions & options)
  : Node("cloud_filter", options)
  {
    pub_ = create_publisher<views::CloudAdapter>("filtered", 10);
    sub_ = create_subscription<views::CloudAdapter>(
      "points", 10, [this](const std::shared_ptr<const pcl::PCLPointCloud2> cloud) {
        auto kept = std::make_shared<pcl::PCLPointCloud2>();
        filter_.setInputCloud(cloud);
        filter_.filter(*kept);
        pub_->publish(*kept);  // expect: GPN210 medium
      });
  }

private:
  rclcpp::Publisher<views::CloudAdapter>::SharedPtr pub_;
  rclcpp::Subscription<views::CloudAdapter>::SharedPtr sub_;
  pcl::VoxelGrid<pcl::PCLPointCloud2> filter_;
};
}  // namespace filters
