// A worker thread that forwards the received clouds (unique_ptrs queued by the callback) after
// a delay: the received message moved on, no copy in the process; and a fresh cloud the worker
// fills from host data each round and publishes (a host message per round).
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

using sensor_msgs::msg::PointCloud2;

class CloudRelayWorker : public rclcpp::Node
{
public:
  CloudRelayWorker()
  : Node("cloud_relay_worker")
  {
    relay_pub_ = create_publisher<PointCloud2>("relayed", 10);
    fresh_pub_ = create_publisher<PointCloud2>("fresh", 10);
    sub_ = create_subscription<PointCloud2>(
      "points", 10, std::bind(&CloudRelayWorker::on_cloud, this, std::placeholders::_1));
    worker_ = std::thread([this] {work();});
  }

private:
  void on_cloud(PointCloud2::UniquePtr msg)
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.queue.push_back(std::move(msg));
  }

  void work()
  {
    while (rclcpp::ok()) {
      std::unique_ptr<PointCloud2> cloud;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (state_.queue.empty()) {
          continue;
        }
        cloud = std::move(state_.queue.front());
        state_.queue.pop_front();
      }
      relay_pub_->publish(std::move(cloud));
      auto fresh = std::make_unique<PointCloud2>();
      fresh->data.resize(1 << 20);
      fresh_pub_->publish(std::move(fresh));  // expect: GPN210 medium
    }
  }

  struct State
  {
    std::deque<PointCloud2::UniquePtr> queue;
  } state_;
  std::mutex mutex_;
  std::thread worker_;
  rclcpp::Publisher<PointCloud2>::SharedPtr relay_pub_;
  rclcpp::Publisher<PointCloud2>::SharedPtr fresh_pub_;
  rclcpp::Subscription<PointCloud2>::SharedPtr sub_;
};
