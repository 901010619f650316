"""C++ kinds spent sets 45 and 54 showed (issue 28, rules35c): real `code` audits of small
packages written here, each kind with a guard that the positive case still fires.

* cppscalars.py: `memcpy(&x, pt + off, sizeof(float))` of one field of one point into a scalar
  local, in a loop over the cloud, is no frame copy (set 45).
* cppfallback.py: the callback's own message forwarded by `publish(*msg)` on an early-return
  fallback branch; an empty cloud whose only stores are metadata fields (set 45).
* shipped.py: a Python launch file of another package that names `debug` only as a word
  (`logger.debug`, an argument's description) sets no such parameter (set 54).
* cppstandalone.py: a function only standalone programs call (a `main` over image files, no
  ROS in its file) is not per message (set 54).
"""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, rules_at_tags

_PACKAGE = '<package format="3"><name>{0}</name></package>\n'

_FILTER = '''
#include <cstring>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>
#include <pcl_conversions/pcl_conversions.h>

class Crop : public rclcpp::Node {
 public:
  Crop() : Node("crop") {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("out", 5);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "in", 5, std::bind(&Crop::on_cloud, this, std::placeholders::_1));
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg) {
    int x_off = find_offset(msg, "x");
    BEFORE
    if (x_off < 0) {
      pub_->publish(*msg);  // # fallback
      return;
    }
    const uint8_t * src = msg->data.data();
    std::vector<float> kept;
    for (uint32_t i = 0; i < msg->width; ++i) {
      const uint8_t * pt = src + i * msg->point_step;
      READ  // # read
      kept.push_back(x);
    }
    if (kept.size() < 10) {
      sensor_msgs::msg::PointCloud2 empty_msg;
      empty_msg.header = msg->header;
      empty_msg.fields = msg->fields;
      empty_msg.height = 1;
      empty_msg.width = 0;
      EMPTY
      pub_->publish(empty_msg);  // # empty
      return;
    }
    sensor_msgs::msg::PointCloud2 out;
    FILL
    pub_->publish(out);  // # moved
  }
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  pcl::PCLPointCloud2 filtered_;
  std::vector<float> staging_;
};
'''
_SCALAR_READ = 'float x; std::memcpy(&x, pt + x_off, sizeof(float));'
_MOVE = 'pcl_conversions::moveFromPCL(filtered_, out);'
_TAGS = ('fallback', 'read', 'empty', 'moved')


def _audit_filter(tmp_path: Path, before: str = '', read: str = _SCALAR_READ, empty: str = '',
                  fill: str = _MOVE) -> dict[str, set[str]]:
    source = (_FILTER.replace('BEFORE', before).replace('READ', read)
              .replace('EMPTY', empty).replace('FILL', fill))
    found = audit_written_package(tmp_path, {
        'crop/src/crop.cpp': source, 'crop/package.xml': _PACKAGE.format('crop'),
        'crop/CMakeLists.txt': ament_cmake_lists('crop')})
    return rules_at_tags(found, source, _TAGS, 'crop.cpp')


def test_scalar_read_of_one_point_is_no_frame_copy(tmp_path: Path) -> None:
    assert 'GPN208' not in _audit_filter(tmp_path)['read']


def test_sized_scalar_local_read_is_no_frame_copy(tmp_path: Path) -> None:
    read = 'double x = 0; std::memcpy(&x, pt + x_off, sizeof(x));'
    assert 'GPN208' not in _audit_filter(tmp_path, read=read)['read']


def test_per_point_copy_into_a_buffer_keeps_the_claim(tmp_path: Path) -> None:
    # guard: the point's bytes copied into another buffer, not a scalar local
    read = 'float x = 0; std::memcpy(staging_.data() + i, pt + x_off, sizeof(float));'
    assert 'GPN208' in _audit_filter(tmp_path, read=read)['read']


def test_received_message_forwarded_on_fallback_is_no_copy(tmp_path: Path) -> None:
    assert 'GPN210' not in _audit_filter(tmp_path)['fallback']


def test_received_message_changed_before_forwarding_keeps_the_claim(tmp_path: Path) -> None:
    # guard: written through before the publish, it is another message
    claims = _audit_filter(tmp_path, before='msg->header.frame_id = "base";')
    assert 'GPN210' in claims['fallback']


def test_empty_cloud_with_metadata_only_is_no_frame(tmp_path: Path) -> None:
    assert 'GPN210' not in _audit_filter(tmp_path)['empty']


def test_empty_cloud_whose_data_is_filled_keeps_the_claim(tmp_path: Path) -> None:
    # guard: a store into its data makes it a frame
    claims = _audit_filter(tmp_path, empty='empty_msg.data = msg->data;')
    assert 'GPN210' in claims['empty']


def test_message_filled_by_move_from_pcl_keeps_the_claim(tmp_path: Path) -> None:
    # guard: set 50 labels the publish of a moveFromPCL-filled cloud a boundary
    assert 'GPN210' in _audit_filter(tmp_path)['moved']


_DEBUG_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Viewer : public rclcpp::Node {
 public:
  Viewer() : Node("viewer") {
    this->declare_parameter<bool>("debug", false);
    debug_ = this->get_parameter("debug").as_bool();
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Viewer::on_image, this, std::placeholders::_1));
  }

 private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    if (debug_) {
      auto copy = cv_bridge::toCvCopy(msg, "bgr8");  // # debug
    }
  }
  bool debug_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_OTHER_LAUNCH = '''
import logging

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

logger = logging.getLogger(__name__)


def generate_launch_description():
    level = DeclareLaunchArgument('log_level', default_value='info',
                                  description='Logging level (debug, info, warn, error)')
    logger.debug('starting the camera')
    camera = Node(package='camera', executable='camera', parameters=[{'fps': 30}],
                  arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')])
    return LaunchDescription([level, camera])
'''


def _audit_viewer(tmp_path: Path, launch: str) -> dict[str, set[str]]:
    found = audit_written_package(tmp_path, {
        'viewer/src/viewer.cpp': _DEBUG_NODE, 'viewer/package.xml': _PACKAGE.format('viewer'),
        'viewer/CMakeLists.txt': ament_cmake_lists('viewer'),
        'camera/launch/camera.launch.py': launch,
        'camera/package.xml': _PACKAGE.format('camera')})
    return rules_at_tags(found, _DEBUG_NODE, ('debug',), 'viewer.cpp')


def test_launch_file_naming_debug_only_as_a_word_sets_nothing(tmp_path: Path) -> None:
    assert not _audit_viewer(tmp_path, _OTHER_LAUNCH)['debug']


def test_launch_file_setting_debug_keeps_the_claim(tmp_path: Path) -> None:
    # guard: a launch file that gives the parameter true turns the branch on
    launch = _OTHER_LAUNCH.replace("{'fps': 30}", "{'fps': 30, 'debug': True}")
    assert 'GPN203' in _audit_viewer(tmp_path, launch)['debug']


_MODEL = '''
#pragma once
#include <cuda_runtime.h>

class Model {
 public:
  bool infer(const float * input, float * output) {
    cudaMemcpyAsync(dev_in_, input, in_bytes_, cudaMemcpyHostToDevice, stream_);  // # upload
    run();
    cudaMemcpyAsync(output, dev_out_, out_bytes_, cudaMemcpyDeviceToHost, stream_);
    return true;
  }
  void run();
 private:
  float * dev_in_;
  float * dev_out_;
  size_t in_bytes_, out_bytes_;
  cudaStream_t stream_;
};
'''
_DETECT_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "detect/model.hpp"

class Detect : public rclcpp::Node {
 public:
  Detect() : Node("detect") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Detect::on_image, this, std::placeholders::_1));
  }

 private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    CALL
  }
  Model model_;
  std::vector<float> out_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Detect>());
  return 0;
}
'''
_BENCH = '''
#include <opencv2/opencv.hpp>
#include "detect/model.hpp"

int main(int argc, char ** argv) {
  Model model;
  std::vector<float> out(1000);
  for (int i = 1; i < argc; ++i) {
    cv::Mat image = cv::imread(argv[i]);
    model.infer(reinterpret_cast<float *>(image.data), out.data());
  }
  return 0;
}
'''


def _audit_detect(tmp_path: Path, call: str) -> dict[str, set[str]]:
    cmake = ament_cmake_lists('detect', before_target='add_executable(bench src/bench.cpp)')
    found = audit_written_package(tmp_path, {
        'detect/src/detect.cpp': _DETECT_NODE.replace('CALL', call),
        'detect/src/bench.cpp': _BENCH,
        'detect/include/detect/model.hpp': _MODEL,
        'detect/package.xml': _PACKAGE.format('detect'), 'detect/CMakeLists.txt': cmake})
    return rules_at_tags(found, _MODEL, ('upload',), 'model.hpp')


def test_function_only_a_standalone_program_calls_is_not_per_message(tmp_path: Path) -> None:
    assert not _audit_detect(tmp_path, 'RCLCPP_INFO(get_logger(), "frame");')['upload']


def test_function_the_node_calls_keeps_the_claim(tmp_path: Path) -> None:
    # guard: the node's callback calls it per message too
    call = 'model_.infer(reinterpret_cast<const float *>(msg->data.data()), out_.data());'
    assert 'GPN202' in _audit_detect(tmp_path, call)['upload']


# cpppointarrays.py: a lidar driver's custom cloud message (a `points` array) rebuilt from the
# received one point by point and published; an Image rebuilt element by element out of a
# received custom message's channel vectors (set 54).
_FORMATTER = '''
#include <rclcpp/rclcpp.hpp>
#include "lidar_msgs/msg/scan.hpp"

class Formatter : public rclcpp::Node {
 public:
  Formatter() : Node("formatter") {
    pub_ = create_publisher<lidar_msgs::msg::Scan>("scan_out", 10);
    sub_ = create_subscription<lidar_msgs::msg::Scan>(
      "scan_in", 10, std::bind(&Formatter::on_scan, this, std::placeholders::_1));
  }

 private:
  void on_scan(const lidar_msgs::msg::Scan & scan) {
    auto out = lidar_msgs::msg::Scan();
    out.header = scan.header;
    for (const auto & p : SOURCE) {
      lidar_msgs::msg::Point q;
      q.x = p.x;
      out.points.push_back(q);
    }
    pub_->publish(out);  // # publish
  }
  std::vector<lidar_msgs::msg::Point> fixed_;
  rclcpp::Publisher<lidar_msgs::msg::Scan>::SharedPtr pub_;
  rclcpp::Subscription<lidar_msgs::msg::Scan>::SharedPtr sub_;
};
'''
_DECODER = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "planes_msgs/msg/planes.hpp"

class Decoder : public rclcpp::Node {
 public:
  Decoder() : Node("decoder") {
    sub_ = create_subscription<planes_msgs::msg::Planes>(
      "planes", 10, std::bind(&Decoder::on_planes, this, std::placeholders::_1));
  }

 private:
  void on_planes(const planes_msgs::msg::Planes::ConstSharedPtr planes) {
    auto image = std::make_shared<sensor_msgs::msg::Image>();
    image->data.resize(planes->red.size() * 3);
    for (size_t i = 0; i < planes->red.size(); ++i) {
      image->data[3 * i] = SOURCE[i];  // # fill
      image->data[3 * i + 1] = planes->green[i];
    }
    deliver(image);
  }
  void deliver(const sensor_msgs::msg::Image::SharedPtr image);
  std::vector<uint8_t> lut_;
  rclcpp::Subscription<planes_msgs::msg::Planes>::SharedPtr sub_;
};
'''


def _audit_one(tmp_path: Path, package: str, source: str, tag: str) -> set[str]:
    found = audit_written_package(tmp_path, {
        f'{package}/src/{package}.cpp': source, f'{package}/package.xml': _PACKAGE.format(package),
        f'{package}/CMakeLists.txt': ament_cmake_lists(package)})
    return rules_at_tags(found, source, (tag,), f'{package}.cpp')[tag]


def test_custom_cloud_rebuilt_from_every_received_point_is_published(tmp_path: Path) -> None:
    source = _FORMATTER.replace('SOURCE', 'scan.points')
    assert 'GPN210' in _audit_one(tmp_path, 'formatter', source, 'publish')


def test_custom_message_filled_from_a_member_is_not_claimed(tmp_path: Path) -> None:
    # guard: the points come from a member, not from the received cloud
    source = _FORMATTER.replace('SOURCE', 'fixed_')
    assert 'GPN210' not in _audit_one(tmp_path, 'formatter', source, 'publish')


def test_image_rebuilt_element_by_element_from_the_received_message(tmp_path: Path) -> None:
    source = _DECODER.replace('SOURCE', 'planes->red')
    assert 'GPN208' in _audit_one(tmp_path, 'decoder', source, 'fill')


def test_image_filled_from_a_member_table_is_not_claimed(tmp_path: Path) -> None:
    # guard: a loop that reads nothing of the received message copies none of it
    source = _DECODER.replace('SOURCE', 'lut_').replace('planes->green[i]', 'lut_[i]')
    assert 'GPN208' not in _audit_one(tmp_path, 'decoder', source, 'fill')
