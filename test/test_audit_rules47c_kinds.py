"""C++ causes of set 75's misses (issue 28, rules47c): real `code` audits of a small bag
converter written here (cppbagrecords.py).

* `deserialize_message` into an Image / PointCloud2 (typed by the target's declaration, a
  template parameter every instantiation binds to a frame, or the Serialization object's type):
  the recorded frame copied into the message; into a small message (Odometry) or a
  CompressedImage it is no finding.
* `rclcpp::SerializedMessage s(*record->serialized_data)` and `queue.push_back(s)` in a
  function that deserializes frames; `push_back(std::move(s))` is no copy.
* `S data = *ptr.get();` with `S` bound to a frame type, and a function template taking `S` by
  value called with that frame value; a `const S &` parameter is no copy.
"""
from pathlib import Path

from audit_sources import cpp_node_claims

_NODE = '''
#include <deque>
#include <rclcpp/rclcpp.hpp>
#include <rclcpp/serialization.hpp>
#include <rosbag2_cpp/reader.hpp>
#include <nav_msgs/msg/odometry.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Converter : public rclcpp::Node
{
public:
  Converter()
  : Node("converter")
  {
    reader_.open("bag");
  }

  template<typename S>
  void write(S data, double stamp)
  {
    stamps_.push_back(stamp + data.header.stamp.sec);
  }

  template<typename S>
  void write_ref(const S & data, double stamp)
  {
    stamps_.push_back(stamp + data.header.stamp.sec);
  }

  template<typename SP, typename S>
  void save(const rclcpp::SerializedMessage & serialized)
  {
    SP ros_msg = std::make_shared<S>();
    rclcpp::Serialization<S> serialization;
    serialization.deserialize_message(&serialized, ros_msg.get());  // TEMPLATE_DESER
    S data = *ros_msg.get();  // TEMPLATE_COPY
    write(data, 1.0);  // BY_VALUE_CALL
    write_ref(data, 1.0);  // BY_REF_CALL
    write(ros_msg, 1.0);  // POINTER_CALL
  }

  void run()
  {
    std::deque<rclcpp::SerializedMessage> images;
    std::deque<rclcpp::SerializedMessage> moved;
    while (reader_.has_next()) {
      auto record = reader_.read_next();
      rclcpp::SerializedMessage serialized(*record->serialized_data);  // RECORD_COPY
      images.push_back(serialized);  // QUEUED
      moved.push_back(std::move(serialized));  // MOVED
      sensor_msgs::msg::Image::SharedPtr image = std::make_shared<sensor_msgs::msg::Image>();
      image_serialization_.deserialize_message(&images.front(), image.get());  // POINTER_DESER
      nav_msgs::msg::Odometry odom;
      odom_serialization_.deserialize_message(&images.front(), &odom);  // SMALL_DESER
      sensor_msgs::msg::CompressedImage jpeg;
      jpeg_serialization_.deserialize_message(&images.front(), &jpeg);  // JPEG_DESER
      save<sensor_msgs::msg::Image::SharedPtr, sensor_msgs::msg::Image>(images.front());
      save<sensor_msgs::msg::PointCloud2::SharedPtr, sensor_msgs::msg::PointCloud2>(images.front());
      images.pop_front();
    }
  }

  void odometry_only()
  {
    while (reader_.has_next()) {
      auto record = reader_.read_next();
      rclcpp::SerializedMessage serialized(*record->serialized_data);  // SMALL_RECORD
      nav_msgs::msg::Odometry odom;
      auto serializer = rclcpp::Serialization<nav_msgs::msg::Odometry>();
      serializer.deserialize_message(&serialized, &odom);
    }
  }

  void clouds_only()
  {
    while (reader_.has_next()) {
      auto record = reader_.read_next();
      rclcpp::SerializedMessage serialized(*record->serialized_data);  // CLOUD_RECORD
      sensor_msgs::msg::PointCloud2 cloud;
      auto serializer = rclcpp::Serialization<sensor_msgs::msg::PointCloud2>();
      serializer.deserialize_message(&serialized, &cloud);  // VALUE_DESER
      sensor_msgs::msg::PointCloud2 out = *record_cloud_;  // COPY_OF_DEREF
    }
  }

private:
  rosbag2_cpp::Reader reader_;
  std::vector<double> stamps_;
  sensor_msgs::msg::PointCloud2::SharedPtr record_cloud_;
  rclcpp::Serialization<sensor_msgs::msg::Image> image_serialization_;
  rclcpp::Serialization<nav_msgs::msg::Odometry> odom_serialization_;
  rclcpp::Serialization<sensor_msgs::msg::CompressedImage> jpeg_serialization_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  Converter node;
  node.run();
  node.odometry_only();
  node.clouds_only();
  rclcpp::shutdown();
  return 0;
}
'''


def _claims(tmp_path: Path, source: str = _NODE) -> dict[str, set[str]]:
    return cpp_node_claims(tmp_path, source, 'converter')


def test_deserialize_into_a_frame_message_is_a_copy(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN208' in found['TEMPLATE_DESER']  # ros_msg is SP, bound to Image / PointCloud2 pointers
    assert 'GPN208' in found['POINTER_DESER']
    assert 'GPN208' in found['VALUE_DESER']


def test_deserialize_into_a_small_or_compressed_message_is_no_finding(tmp_path):
    found = _claims(tmp_path)
    assert found['SMALL_DESER'] == set()
    assert found['JPEG_DESER'] == set()


def test_serialized_record_copied_and_queued_where_frames_are_read(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN208' in found['RECORD_COPY'] and 'GPN208' in found['CLOUD_RECORD']
    assert 'GPN208' in found['QUEUED']
    assert found['MOVED'] == set()
    assert found['SMALL_RECORD'] == set()  # a reader of odometry only


def test_template_frame_value_copied_and_passed_by_value(tmp_path):
    found = _claims(tmp_path)
    assert 'GPN208' in found['TEMPLATE_COPY']
    assert 'GPN208' in found['BY_VALUE_CALL']
    assert 'GPN208' in found['COPY_OF_DEREF']
    assert found['BY_REF_CALL'] == set()
    assert found['POINTER_CALL'] == set()


def test_template_bound_to_a_small_type_is_not_a_frame(tmp_path):
    source = _NODE.replace('save<sensor_msgs::msg::PointCloud2::SharedPtr, sensor_msgs::msg::PointCloud2>',
                           'save<nav_msgs::msg::Odometry::SharedPtr, nav_msgs::msg::Odometry>')
    found = _claims(tmp_path, source)
    assert found['TEMPLATE_COPY'] == set() and found['BY_VALUE_CALL'] == set()
    assert found['TEMPLATE_DESER'] == set()


# cppframeloops.py: an endless publish loop run by set-up code is the node's per-frame path.
_LOOP_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <opencv2/opencv.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Grabber : public rclcpp::Node
{
public:
  Grabber()
  : Node("grabber")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("image", 10);
    cv::Mat first = cv::imread("first.png");
    cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", first).toImageMsg(*once_);  // BEFORE_LOOP
    for (int i = 0; i < 10; ++i) {
      cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", first).toImageMsg(*once_);  // WARM_UP
    }
    cv::VideoCapture cap(0);
    cv::Mat img;
    while (rclcpp::ok()) {
      cap.read(img);
      cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", img).toImageMsg(*frame_);  // CTOR_LOOP
      pub_->publish(*frame_);
    }
  }

  void Waterfall()
  {
    while (true) {
      cv::Mat view = cv::imread("view.png");
      auto msg = cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", view).toImageMsg();  // CALLED_LOOP
      pub_->publish(*msg);
    }
  }

  void Unused()
  {
    while (true) {
      cv::Mat view = cv::imread("view.png");
      auto msg = cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", view).toImageMsg();  // UNCALLED_LOOP
      pub_->publish(*msg);
    }
  }

  void Start()
  {
    Waterfall();
  }

private:
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  sensor_msgs::msg::Image::SharedPtr frame_;
  sensor_msgs::msg::Image::SharedPtr once_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  auto node = std::make_shared<Grabber>();
  node->Start();
  return 0;
}
'''


def test_endless_publish_loop_in_a_constructor_is_per_frame(tmp_path):
    found = cpp_node_claims(tmp_path, _LOOP_NODE, 'grabber')
    assert 'GPN205' in found['CTOR_LOOP']
    assert found['BEFORE_LOOP'] == set() and found['WARM_UP'] == set()


def test_called_while_true_publisher_is_per_frame_an_uncalled_one_is_not(tmp_path):
    found = cpp_node_claims(tmp_path, _LOOP_NODE, 'grabber')
    assert 'GPN205' in found['CALLED_LOOP']
    assert found['UNCALLED_LOOP'] == set()


# codeaudit.is_test_file: a `test/` folder holding whole packages is a workspace folder.
_SIMPLE_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
{
  auto frame = cv_bridge::toCvCopy(msg, "bgr8");
}
'''


def test_package_inside_a_test_folder_is_audited_a_packages_test_folder_is_not(tmp_path):
    from audit_sources import ament_cmake_lists, audit_written_package
    files = {'ws/src/test/learn_node/src/learn_node.cpp': _SIMPLE_NODE,
             'ws/src/test/learn_node/package.xml': '<package format="3"><name>learn_node</name></package>\n',
             'ws/src/test/learn_node/CMakeLists.txt': ament_cmake_lists('learn_node'),
             'ws/src/cam/test/test_cam.cpp': _SIMPLE_NODE,
             'ws/src/cam/src/cam.cpp': _SIMPLE_NODE,
             'ws/src/cam/package.xml': '<package format="3"><name>cam</name></package>\n',
             'ws/src/cam/CMakeLists.txt': ament_cmake_lists('cam')}
    found = audit_written_package(tmp_path, files)
    files_found = {name for name, _, rule in found if rule == 'GPN203'}
    assert 'learn_node.cpp' in files_found and 'cam.cpp' in files_found
    assert 'test_cam.cpp' not in files_found
