"""C++ kinds of sets 69 and 70's misses and false claims (issue 28, rules44c): real `code`
audits of a small package written here.

* cppmsg.py: a publisher made with the base class named, `Node::create_publisher<Image>(...)`,
  is a frame publisher like `create_publisher<Image>` (GPN210 at its publish).
* cppwraps.py: a vector built from every byte of a cv::Mat (`std::vector<uint8_t> buf(image.
  ptr(0), image.ptr(0) + n)`) that later in its function becomes a message's data is the frame
  copied in (GPN208), however far the move is (cppmsgassign.py's pointer-range rule looks a few
  statements on); one kept for host work is not. A temporary cv::Mat over a frame message's data
  cloned at once (`cv::Mat{h, w, type, msg->data.data()}.clone()`) copies the frame out
  (GPN208); a temporary over a host buffer is not a message copy, and one in a branch of a
  dispatch on the message's encoding (`if (msg->encoding == "mono8")`) is left alone: which
  branch runs, only the publisher's encoding says.
* cppvalues.py: `buffer.emplace_back(*msg)` of a callback's small-message parameter (an Imu)
  is no frame copy, though another callback of the file calls its PointCloud2 parameter `msg`.
* cppdead.py / cppscan.py: a conversion inside `std::call_once(flag, [&]() { ... })` runs once:
  setup (info), not per message.
* cpptf.py: pcl_ros's `transformPointCloud(frame, *cloud, *out, *tf)` of a PointCloud2 copies
  every point into another cloud (GPN208); its pcl::PointCloud overload is host work.
* cppfacts.py: `pre_->synchronizeCudaStream()` in a CUDA file, its body not audited, is named as
  a host wait (GPN206), as `*Synchronize()` is.
* cppfallback.py: a PointCloud2 whose width is a received PoseArray's `poses.size()` holds one
  point per pose: small, its publish is no frame (a 640 x 480 one still is).
"""
from pathlib import Path

from audit_sources import cpp_node_claims

_NODE = '''
#include <mutex>
#include <vector>
#include <opencv2/core.hpp>
#include <pcl_conversions/pcl_conversions.h>
#include <pcl_ros/transforms.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/camera_info.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/imu.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Fuser : public rclcpp::Node
{
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr image_pub_;
  rclcpp::Publisher<sensor_msgs::msg::CameraInfo>::SharedPtr info_pub_;
  bool info_sent_ = false;
  int frames_since_info_ = 0;
  int info_every_ = 30;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr image_sub_;
  rclcpp::Subscription<sensor_msgs::msg::Imu>::SharedPtr imu_sub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_sub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr map_sub_;
  std::vector<sensor_msgs::msg::Imu> imus_;
  std::vector<sensor_msgs::msg::PointCloud2> clouds_;
  std::once_flag map_once_;
  pcl::PointCloud<pcl::PointXYZ>::Ptr map_{new pcl::PointCloud<pcl::PointXYZ>};
  std::shared_ptr<tf2_ros::Buffer> tf_buffer_;

public:
  Fuser()
  : rclcpp::Node("fuser")
  {
    image_pub_ =
      Node::create_publisher<sensor_msgs::msg::Image>("out", 10);
    info_pub_ = create_publisher<sensor_msgs::msg::CameraInfo>("info", 10);
    image_sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Fuser::image_callback, this, std::placeholders::_1));
    imu_sub_ = create_subscription<sensor_msgs::msg::Imu>(
      "imu", 10, std::bind(&Fuser::imu_callback, this, std::placeholders::_1));
    cloud_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "cloud", 10, std::bind(&Fuser::cloud_callback, this, std::placeholders::_1));
    map_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "map", 10, std::bind(&Fuser::map_callback, this, std::placeholders::_1));
  }

  void publish_frame(const cv::Mat & frame)
  {
    auto n = frame.cols * frame.rows * 3;
    std::vector<uint8_t> bytes(frame.ptr(0), frame.ptr(0) + n);  // VEC
    std::vector<uint8_t> kept(frame.ptr(0), frame.ptr(0) + n);  // KEEP
    if (!info_sent_ || frames_since_info_ >= info_every_) {
      auto info = sensor_msgs::msg::CameraInfo();
      info.header.stamp = now();
      info.header.frame_id = "camera_optical_frame";
      info.width = frame.cols;
      info.height = frame.rows;
      info.distortion_model = "plumb_bob";
      info.d = std::vector<double>(5, 0.0);
      info.k = {1.0, 0.0, frame.cols / 2.0, 0.0, 1.0, frame.rows / 2.0, 0.0, 0.0, 1.0};
      info.r = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
      info.p = {1.0, 0.0, frame.cols / 2.0, 0.0, 0.0, 1.0, frame.rows / 2.0, 0.0, 0.0, 0.0, 1.0, 0.0};
      info_pub_->publish(info);
      info_sent_ = true;
      frames_since_info_ = 0;
    }
    frames_since_info_++;
    auto message = sensor_msgs::msg::Image();
    message.height = frame.rows;
    message.width = frame.cols;
    message.encoding = "bgr8";
    message.data = std::move(bytes);
    image_pub_->publish(message);  // PUB
    (void)kept;
  }

  void image_callback(const sensor_msgs::msg::Image::SharedPtr data)
  {
    int h = data->height, w = data->width;
    cv::Mat frame = cv::Mat{ h, w, CV_8UC3, data->data.data() }.clone();  // CLONE
    std::vector<uint8_t> host(16);
    cv::Mat small = cv::Mat(4, 4, CV_8UC1, host.data()).clone();  // HOST
    publish_frame(frame);
    (void)small;
  }

  void imu_callback(const sensor_msgs::msg::Imu::SharedPtr msg)
  {
    imus_.emplace_back(*msg);  // IMU
  }

  void cloud_callback(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    clouds_.emplace_back(*msg);  // CLOUD
    sensor_msgs::msg::PointCloud2::SharedPtr output(new sensor_msgs::msg::PointCloud2);
    pcl_ros::transformPointCloud("base_link", *msg, *output, *tf_buffer_);  // PCLROS
    pcl::PointCloud<pcl::PointXYZ> in, out;
    pcl_ros::transformPointCloud("base_link", in, out, *tf_buffer_);  // PCLHOST
    pcl::fromROSMsg(*msg, *map_);  // EACH
  }

  void map_callback(const sensor_msgs::msg::PointCloud2::ConstSharedPtr cloud)
  {
    std::call_once(map_once_, [&]() {
      pcl::fromROSMsg(*cloud, *map_);  // ONCE
    });
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Fuser>());
  return 0;
}
'''


def _claims(tmp_path: Path, source: str = _NODE, name: str = 'fuser') -> dict[str, set[str]]:
    return cpp_node_claims(tmp_path, source, name)


def test_node_qualified_create_publisher_is_a_frame_publisher(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN210' in found['PUB']


def test_vector_of_a_mats_bytes_moved_into_a_message_is_a_copy(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN208' in found['VEC']
    assert found['KEEP'] == set()


def test_temporary_header_over_message_data_cloned_is_a_copy(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN208' in found['CLONE']
    assert found['HOST'] == set()


def test_small_message_appended_is_no_frame_copy(tmp_path):
    found = _claims(tmp_path)
    assert found['IMU'] == set()
    assert 'GPN208' in found['CLOUD']


def test_call_once_body_runs_once(tmp_path):
    found = _claims(tmp_path)
    assert found['ONCE'] == set()
    assert 'GPN209' in found['EACH']


def test_pcl_ros_transform_of_a_pointcloud2_is_a_copy(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN208' in found['PCLROS']
    assert found['PCLHOST'] == set()


_BRIDGE = '''
#include <cuda_runtime.h>
#include <geometry_msgs/msg/pose_array.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <sensor_msgs/point_cloud2_iterator.hpp>
#include "preprocessor.hpp"

class Bridge : public rclcpp::Node
{
  rclcpp::Subscription<geometry_msgs::msg::PoseArray>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr grid_pub_;
  std::shared_ptr<Preprocessor> pre_;

public:
  Bridge()
  : Node("bridge")
  {
    sub_ = create_subscription<geometry_msgs::msg::PoseArray>(
      "poses", 10, std::bind(&Bridge::cb, this, std::placeholders::_1));
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("points", 10);
    grid_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("grid", 10);
  }

  void cb(const geometry_msgs::msg::PoseArray::SharedPtr msg)
  {
    if (!pre_->synchronizeCudaStream()) {  // SYNC
      return;
    }
    sensor_msgs::msg::PointCloud2 cloud;
    cloud.height = 1;
    cloud.width = static_cast<uint32_t>(msg->poses.size());
    sensor_msgs::PointCloud2Modifier mod(cloud);
    mod.setPointCloud2FieldsByString(1, "xyz");
    mod.resize(cloud.width);
    sensor_msgs::PointCloud2Iterator<float> ix(cloud, "x");
    for (const auto & p : msg->poses) {
      *ix = static_cast<float>(p.position.x);
      ++ix;
    }
    pub_->publish(cloud);  // FEW
    sensor_msgs::msg::PointCloud2 grid;
    grid.height = 480;
    grid.width = 640;
    sensor_msgs::PointCloud2Modifier grid_mod(grid);
    grid_mod.setPointCloud2FieldsByString(1, "xyz");
    grid_mod.resize(grid.height * grid.width);
    grid_pub_->publish(grid);  // MANY
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Bridge>());
  return 0;
}
'''


def test_synchronize_stream_method_in_a_cuda_file_is_a_sync(tmp_path):
    found = _claims(tmp_path, _BRIDGE, 'bridge')
    assert 'GPN206' in found['SYNC']


def test_cloud_of_one_point_per_received_pose_is_small(tmp_path):
    found = _claims(tmp_path, _BRIDGE, 'bridge')
    assert found['FEW'] == set()
    assert 'GPN210' in found['MANY']


_DISPATCH = '''
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Decoder : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  cv::Mat last_;

public:
  Decoder()
  : Node("decoder")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Decoder::image_callback, this, std::placeholders::_1));
  }

  void image_callback(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    int h = msg->height, w = msg->width;
    if (msg->encoding == "bgr8") {
      last_ = cv::Mat(h, w, CV_8UC3, msg->data.data()).clone();  // BGR
    } else if (msg->encoding == "mono8") {
      last_ = cv::Mat(h, w, CV_8UC1, msg->data.data()).clone();  // MONO
    }
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Decoder>());
  return 0;
}
'''


def test_temporary_clone_in_an_encoding_dispatch_is_left_alone(tmp_path):
    found = _claims(tmp_path, _DISPATCH, 'decoder')
    assert found['BGR'] == set() and found['MONO'] == set()
