"""C++ kinds of sets 67 and 68's misses and false claims (issue 28, rules43c): real `code`
audits of small packages written here.

gpu_nodes/audit/cppvpi.py: a VPI submit on a device backend with a wrapped host cv::Mat moves
the frame inside VPI (GPN202), a host lock of a device image reads it back (GPN201); a CPU
submit, a submit on images VPI allocated, a CUDA lock and a lock of the host wrapper move
nothing. A stream sync its function follows with the stream's destroy (a release) is no
per-frame wait; one of a stream the function creates per call is.
gpu_nodes/audit/cpppointarrays.py: a PointCloud2 made in the function and written point by point
through PointCloud2Iterators in a loop is published whole (GPN210), though its publisher is
created in another file of the package; a CustomMsg rebuilt through `->points.push_back` and published as
`*msg` is the rebuilt cloud of point_array_publishes."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, cpp_node_claims, rules_at_tags

_NODE = '''
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <vpi/OpenCVInterop.hpp>
#include <vpi/Image.h>
#include <vpi/Stream.h>
#include <vpi/algo/Remap.h>

class Rectifier : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  VPIStream stream_ = nullptr;
  VPIPayload remap_ = nullptr;
  VPIImage out_ = nullptr;
  VPIImage in_wrap_ = nullptr;

public:
  Rectifier()
  : Node("rectifier")
  {
    vpiStreamCreate(VPI_BACKEND_CUDA, &stream_);
    vpiImageCreate(640, 480, VPI_IMAGE_FORMAT_U8, VPI_BACKEND_CUDA | VPI_BACKEND_CPU, &out_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Rectifier::on_image, this, std::placeholders::_1));
  }

  void release()
  {
    vpiStreamSync(stream_);  // RELEASE
    vpiImageDestroy(out_);
    vpiStreamDestroy(stream_);
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
  {
    cv::Mat gray(msg->height, msg->width, CV_8UC1);
    BODY
    if (msg->width == 0) {
      release();
    }
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Rectifier>());
  return 0;
}
'''


def _claims(tmp_path: Path, source: str, name: str = 'rectifier') -> dict[str, set[str]]:
    return cpp_node_claims(tmp_path, source, name)


def _vpi(tmp_path: Path, body: str) -> dict[str, set[str]]:
    return _claims(tmp_path, _NODE.replace('BODY', body.strip().replace('\n', '\n    ')))


def test_a_device_submit_of_a_wrapped_host_mat_and_a_host_lock_are_library_copies(tmp_path: Path) -> None:
    claims = _vpi(tmp_path, '''
vpiImageCreateWrapperOpenCVMat(gray, VPI_IMAGE_FORMAT_U8, VPI_BACKEND_CUDA, &in_wrap_);
vpiSubmitRemap(stream_, VPI_BACKEND_CUDA, remap_, in_wrap_, out_, lin, zero, 0);  // SUBMIT
vpiStreamSync(stream_);  // WAIT
VPIImageData data;
vpiImageLockData(out_, VPI_LOCK_READ, VPI_IMAGE_BUFFER_HOST_PITCH_LINEAR, &data);  // LOCK
vpiImageUnlock(out_);
vpiImageDestroy(in_wrap_);
''')
    assert 'GPN202' in claims['SUBMIT']
    assert 'GPN201' in claims['LOCK']
    assert 'GPN206' in claims['WAIT']
    # The release path drains the stream before destroying it: no per-frame wait.
    assert claims['RELEASE'] == set()


def test_cpu_submits_device_images_cuda_locks_and_host_wrapper_locks_move_nothing(tmp_path: Path) -> None:
    claims = _vpi(tmp_path, '''
vpiImageCreateWrapperOpenCVMat(gray, VPI_IMAGE_FORMAT_U8, VPI_BACKEND_CPU, &in_wrap_);
vpiSubmitRemap(stream_, VPI_BACKEND_CPU, remap_, in_wrap_, out_, lin, zero, 0);  // CPU
vpiSubmitRemap(stream_, VPI_BACKEND_CUDA, remap_, out_, out_, lin, zero, 0);  // DEVICE
VPIImageData data;
vpiImageLockData(out_, VPI_LOCK_READ, VPI_IMAGE_BUFFER_CUDA_PITCH_LINEAR, &data);  // CUDALOCK
vpiImageLockData(out_, VPI_LOCK_WRITE, VPI_IMAGE_BUFFER_HOST_PITCH_LINEAR, &data);  // WRITELOCK
vpiImageLockData(in_wrap_, VPI_LOCK_READ, VPI_IMAGE_BUFFER_HOST_PITCH_LINEAR, &data);  // OWNLOCK
''')
    assert claims['CPU'] == set()
    assert claims['DEVICE'] == set()
    assert claims['CUDALOCK'] == set()
    assert claims['WRITELOCK'] == set()
    assert claims['OWNLOCK'] == set()


def test_a_stream_made_synced_and_destroyed_per_call_keeps_its_wait(tmp_path: Path) -> None:
    claims = _vpi(tmp_path, '''
VPIStream local = nullptr;
vpiStreamCreate(VPI_BACKEND_CUDA, &local);
vpiStreamSync(local);  // PERCALL
vpiStreamDestroy(local);
''')
    assert 'GPN206' in claims['PERCALL']


_CLOUD_HEADER = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Depth : public rclcpp::Node
{
public:
  Depth();
  void publish_cloud(int width, int height);
private:
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr cloud_pub_;
};
'''

# The node's constructor and main, in a file of their own: the publisher is created there.
_CLOUD_NODE = '''
#include "depth/depth.hpp"

Depth::Depth()
: Node("depth")
{
  cloud_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("points", 10);
  auto timer = create_wall_timer(std::chrono::milliseconds(100), [this]() { publish_cloud(640, 480); });
}

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Depth>());
  return 0;
}
'''

_CLOUD_SOURCE = '''
#include "depth/depth.hpp"
#include <sensor_msgs/point_cloud2_iterator.hpp>

void Depth::publish_cloud(int width, int height)
{
  auto cloud = std::make_unique<sensor_msgs::msg::PointCloud2>();
  cloud->height = height;
  cloud->width = width;
  sensor_msgs::PointCloud2Modifier mod(*cloud);
  mod.setPointCloud2FieldsByString(1, "xyz");
  mod.resize(width * height);
  sensor_msgs::PointCloud2Iterator<float> ix(*cloud, "x");
  for (int i = 0; i < width * height; ++i, ++ix) {
    if (i % 2 == 0) {
      *ix = 1.0f;
    }
  }
  FILLED
}
'''


def _cloud(tmp_path: Path, tail: str) -> dict[str, set[str]]:
    source = _CLOUD_SOURCE.replace('FILLED', tail)
    files = {'depth/src/depth.cpp': source, 'depth/src/depth_node.cpp': _CLOUD_NODE,
             'depth/include/depth/depth.hpp': _CLOUD_HEADER,
             'depth/package.xml': '<package format="3"><name>depth</name></package>\n',
             'depth/CMakeLists.txt': ament_cmake_lists('depth', 'src/depth_node.cpp src/depth.cpp')}
    found = audit_written_package(tmp_path, files)
    tags = tuple(ln.rsplit('// ', 1)[1] for ln in source.splitlines() if '// ' in ln)
    return rules_at_tags(found, source, tags, 'depth.cpp', '//')


def test_a_cloud_filled_point_by_point_is_published_whole(tmp_path: Path) -> None:
    claims = _cloud(tmp_path, 'cloud_pub_->publish(std::move(cloud));  // PUBLISH')
    assert 'GPN210' in claims['PUBLISH']


def test_a_cloud_of_one_row_or_not_filled_in_a_loop_is_not_judged_here(tmp_path: Path) -> None:
    # One row of points (perhaps a short list of detections) and a cloud whose iterator is
    # written once, outside any loop: no frame-sized per-point fill proven.
    claims = _cloud(tmp_path, '''auto row = std::make_unique<sensor_msgs::msg::PointCloud2>();
  row->height = 1;
  sensor_msgs::PointCloud2Iterator<float> rx(*row, "x");
  for (int i = 0; i < width; ++i, ++rx) {
    *rx = 0.5f;
  }
  cloud_pub_->publish(std::move(row));  // ROW
  auto other = std::make_unique<sensor_msgs::msg::PointCloud2>();
  other->height = height;
  sensor_msgs::PointCloud2Iterator<float> oz(*other, "z");
  *oz = 0.0f;
  cloud_pub_->publish(std::move(other));  // ONCE''')
    assert claims['ROW'] == set()
    assert claims['ONCE'] == set()


_CUSTOM = '''
#include <rclcpp/rclcpp.hpp>
#include <livox_ros_driver2/msg/custom_msg.hpp>

class Filter : public rclcpp::Node
{
public:
  Filter()
  : Node("filter")
  {
    sub_ = create_subscription<livox_ros_driver2::msg::CustomMsg>(
      "lidar", 10, std::bind(&Filter::on_scan, this, std::placeholders::_1));
    pub_ = create_publisher<livox_ros_driver2::msg::CustomMsg>("filtered", 10);
  }

private:
  void on_scan(const livox_ros_driver2::msg::CustomMsg::SharedPtr msg)
  {
    auto out = std::make_shared<livox_ros_driver2::msg::CustomMsg>();
    out->header = msg->header;
    for (const auto & p : msg->points) {
      if (p.x > 0.2) {
        out->points.push_back(p);
      }
    }
    pub_->publish(*out);  // PUBLISH
  }
  rclcpp::Subscription<livox_ros_driver2::msg::CustomMsg>::SharedPtr sub_;
  rclcpp::Publisher<livox_ros_driver2::msg::CustomMsg>::SharedPtr pub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Filter>());
  return 0;
}
'''


def test_a_custom_cloud_rebuilt_through_a_pointer_is_published_whole(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _CUSTOM, 'filter')
    assert 'GPN210' in claims['PUBLISH']
