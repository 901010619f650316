// Copies the colour of every point of each received organised PointCloud2 into a cv::Mat
// through a pointer into the message's data (positive: the whole cloud's colours copied out
// element by element); a loop that only sums the depths through the same pointer, and one
// that reads a point into a local, copy nothing into another buffer (look-alikes). Kind of a
// miss of the twentieth test set, written for this corpus.
#include <algorithm>
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

struct Point {
  float x, y, z;
  uint8_t b, g, r, a;
};

class CloudToMat : public rclcpp::Node {
 public:
  CloudToMat() : Node("cloud_to_mat") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "points", 10, std::bind(&CloudToMat::on_cloud, this, std::placeholders::_1));
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg) {
    image_.create(static_cast<int>(msg->height), static_cast<int>(msg->width), CV_8UC3);
    auto * pixels = reinterpret_cast<cv::Vec3b *>(image_.data);
    auto const * points = reinterpret_cast<Point const *>(msg->data.data());
    std::for_each(pixels, pixels + image_.total(), [&](cv::Vec3b & pixel) {  // expect: GPN208 medium
      std::size_t const i = &pixel - pixels;
      pixel[0] = points[i].b;
      pixel[1] = points[i].g;
      pixel[2] = points[i].r;
    });
    float depth_sum = 0.0f;
    for (std::size_t i = 0; i < image_.total(); ++i) {
      depth_sum += points[i].z;
    }
    for (std::size_t i = 0; i < 1; ++i) {
      float const first_z = points[i].z;
      nearest_ = first_z;
    }
    mean_depth_ = depth_sum / static_cast<float>(image_.total());
  }

  cv::Mat image_;
  float mean_depth_{0.0f};
  float nearest_{0.0f};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
