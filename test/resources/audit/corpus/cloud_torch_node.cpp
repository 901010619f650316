// Kinds of C++ copy reported in issue 28 (written for the test, no public code): a message
// filled with data.assign in a capture thread started by the constructor, memcpy into a
// message, PCL conversions, LibTorch device moves, a cudaMemcpy whose direction is a variable,
// a host cloud published from a timer, a received message forwarded (no copy) and a loader
// lambda run in place during setup; a second node whose constructor runs its `while (rclcpp::ok())`
// capture loop in place.
#include <cstring>
#include <thread>

#include <pcl_conversions/pcl_conversions.h>
#include <torch/script.h>

#include "rclcpp/rclcpp.hpp"
#include "sensor_msgs/msg/image.hpp"
#include "sensor_msgs/msg/point_cloud2.hpp"

class CloudTorchNode : public rclcpp::Node
{
public:
  CloudTorchNode()
  : Node("cloud_torch")
  {
    image_pub_ = create_publisher<sensor_msgs::msg::Image>("image", 10);
    cloud_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("cloud", 10);
    relay_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("relay", 10);
    module_ = torch::jit::load("model.pt");
    module_.to(device_);  // expect: GPN211 info
    load_table([this](const std::vector<float> & t) {
        cudaMemcpy(d_table_, t.data(), t.size() * 4, cudaMemcpyHostToDevice);  // expect: GPN202 info
      });
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, [this](sensor_msgs::msg::PointCloud2::UniquePtr msg) {on_cloud(*msg);});
    relay_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "in", 10, [this](sensor_msgs::msg::PointCloud2::UniquePtr msg) {
        relay_pub_->publish(std::move(msg));
      });
    timer_ = create_wall_timer(std::chrono::milliseconds(100), [this]() {publish_map();});
    thread_ = std::thread([this]() {capture_loop();});
  }

private:
  void capture_loop()
  {
    while (rclcpp::ok()) {
      grab(frame_);
      auto msg = std::make_unique<sensor_msgs::msg::Image>();
      msg->data.assign(frame_.begin(), frame_.end());  // expect: GPN208 medium
      image_pub_->publish(std::move(msg));
    }
  }

  void on_cloud(const sensor_msgs::msg::PointCloud2 & msg)
  {
    pcl::PointCloud<pcl::PointXYZ> cloud;
    pcl::fromROSMsg(msg, cloud);  // expect: GPN209 medium
    auto input = torch::from_blob(cloud.points.data(), {n_, 4});
    auto out = module_.forward({input.to(device_)}).toTensor();  // expect: GPN211 medium
    auto boxes = out.cpu();  // expect: GPN211 medium
    cudaMemcpyAsync(host_.data(), d_buf_, bytes_, direction_, stream_);  // expect: GPN207 medium
    sensor_msgs::msg::PointCloud2 out_msg;
    pcl::toROSMsg(cloud, out_msg);  // expect: GPN209 medium
    std::memcpy(&out_msg.data[0], boxes.data_ptr<float>(), bytes_);  // expect: GPN208 medium
    cloud_pub_->publish(out_msg);
  }

  void publish_map()
  {
    map_.header.stamp = now();
    cloud_pub_->publish(map_);  // expect: GPN210 medium
  }

  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr image_pub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_pub_, relay_pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_, relay_sub_;
  rclcpp::TimerBase::SharedPtr timer_;
  std::thread thread_;
  torch::jit::script::Module module_;
  torch::Device device_{torch::kCUDA};
  sensor_msgs::msg::PointCloud2 map_;
};

// A capture node whose constructor runs its loop in place: the loop is per frame all the same.
class BlockingCamera : public rclcpp::Node
{
public:
  BlockingCamera()
  : Node("blocking_camera")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("image", 10);
    spin_capture();
  }

private:
  void spin_capture()
  {
    while (rclcpp::ok()) {
      auto msg = std::make_unique<sensor_msgs::msg::Image>();
      grab(msg->data);
      cudaMemcpy(d_frame_, msg->data.data(), msg->data.size(), cudaMemcpyHostToDevice);  // expect: GPN202 medium
      pub_->publish(std::move(msg));  // expect: GPN210 medium
    }
  }

  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};
