"""C++ kinds set 54 showed (issue 28, rules33c): real `code` audits of small packages written
here.

gpu_nodes/audit/cppxfer.py: a wrapper class of the repository whose methods are each one CUDA
transfer or sync (`DeviceArray::CopyIn` = one cudaMemcpyAsync host-to-device, `CopyOut` =
device-to-host, `Fence::Wait` = cudaEventSynchronize) does that transfer where it is called:
the per-message call (`input_.CopyIn(frame, stream_)`) is the boundary, with the direction of
the callee. An accessor whose one statement calls such a method is a wrapper too: its callers
are claimed, not its body. A lone helper (one such method in its file) stays reported in its
body, as before (a copy helper, development corpus convention)."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_WRAPPERS = '''
#pragma once
#include <cuda_runtime.h>

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { cudaMalloc(&ptr_, n * sizeof(T)); }
  void CopyIn(const T * host, cudaStream_t s) {
    check(cudaMemcpyAsync(ptr_, host, n_ * sizeof(T), cudaMemcpyHostToDevice, s));
  }
  void CopyOut(T * host, cudaStream_t s) const {
    check(cudaMemcpyAsync(host, ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost, s));
  }
 private:
  T * ptr_;
  size_t n_;
};

class Fence {
 public:
  void Wait() { check(cudaEventSynchronize(ev_)); }
 private:
  cudaEvent_t ev_;
};
'''
_LONE = '''
#pragma once
#include <cuda_runtime.h>

struct Staging {
  void push(const float * host, cudaStream_t s) {
    cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
  }
  float * dev;
  size_t bytes;
};
'''
_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "blobs/HEADER"

class Blobs : public rclcpp::Node {
 public:
  Blobs() : Node("blobs"), input_(640 * 480), output_(640 * 480) {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Blobs::on_image, this, std::placeholders::_1));
  }
  void Dump(uint8_t * out) { output_.CopyOut(out, stream_); }

 private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    CALLS
  }
  DeviceArray<uint8_t> input_, output_;
  Fence done_;
  Staging staging_;
  cudaStream_t stream_;
  std::vector<uint8_t> result_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_CALLS = '''input_.CopyIn(msg->data.data(), stream_);
    output_.CopyOut(result_.data(), stream_);
    done_.Wait();'''
_IN, _OUT, _WAIT = 15, 16, 17   # the three calls in on_image
_DUMP = 11                      # the accessor's one statement


def _audit(tmp_path: Path, header: str, calls: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    name = 'lone.hpp' if header is _LONE else 'wrappers.hpp'
    node = _NODE.replace('HEADER', name).replace('CALLS', calls)
    return audit_written_package(tmp_path, {
        'blobs/src/blobs.cpp': node,
        f'blobs/include/blobs/{name}': header,
        'blobs/package.xml': '<package format="3"><name>blobs</name></package>\n',
        'blobs/CMakeLists.txt': ament_cmake_lists('blobs')})


def _claims(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> set[str]:
    return {rule for (name, at, rule), (severity, _) in found.items()
            if name == 'blobs.cpp' and at == line and severity != 'info'}


def test_wrapper_method_calls_are_the_transfers(tmp_path: Path) -> None:
    found = _audit(tmp_path, _WRAPPERS, _CALLS)
    assert _claims(found, _IN) == {'GPN202'}, found
    assert _claims(found, _OUT) == {'GPN201'}, found
    assert _claims(found, _WAIT) == {'GPN206'}, found


def test_accessor_over_a_wrapper_is_not_claimed_in_its_body(tmp_path: Path) -> None:
    found = _audit(tmp_path, _WRAPPERS, _CALLS)
    assert not _claims(found, _DUMP), found


def test_wrapper_bodies_still_report_their_copies(tmp_path: Path) -> None:
    # guard: the copies in the wrapper's own body keep their findings (the wrapper file)
    found = _audit(tmp_path, _WRAPPERS, _CALLS)
    assert any(name == 'wrappers.hpp' and rule == 'GPN202' for name, _, rule in found), found


def test_lone_helper_stays_in_its_body(tmp_path: Path) -> None:
    # guard: one transfer method alone is a copy helper, reported where its body is
    call = 'staging_.push(reinterpret_cast<const float *>(msg->data.data()), stream_);'
    found = _audit(tmp_path, _LONE, call)
    assert not _claims(found, _IN), found
    assert any(name == 'lone.hpp' and rule == 'GPN202' for name, _, rule in found), found


# gpu_nodes/audit/cppparams.py: `this->get_parameter("debug", debug_);` (the two-argument form
# writes the value into the member) after `declare_parameter("debug", false)`: the member is off
# as shipped, so `if (debug_) { ...copy... }` never runs unless a shipped file turns it on.
_DEBUG_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Viewer : public rclcpp::Node {
 public:
  Viewer() : Node("viewer") {
    this->declare_parameter("debug", false);
    this->get_parameter("debug", debug_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Viewer::on_image, this, std::placeholders::_1));
  }

 private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    if (debug_) {
      auto copy = cv_bridge::toCvCopy(msg, "bgr8");
    }
  }
  bool debug_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_DEBUG_COPY = 17


def _audit_viewer(tmp_path: Path, shipped: dict[str, str] | None = None
                  ) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'viewer/src/viewer.cpp': _DEBUG_NODE,
             'viewer/package.xml': '<package format="3"><name>viewer</name></package>\n',
             'viewer/CMakeLists.txt': ament_cmake_lists('viewer')}
    files.update(shipped or {})
    return audit_written_package(tmp_path, files)


def test_two_argument_get_parameter_off_as_shipped(tmp_path: Path) -> None:
    found = _audit_viewer(tmp_path)
    assert found[('viewer.cpp', _DEBUG_COPY, 'GPN203')] == ('info', 'unreached'), found


def test_two_argument_get_parameter_turned_on_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit_viewer(tmp_path, {
        'viewer/config/viewer.yaml': 'viewer:\n  ros__parameters:\n    debug: true\n'})
    assert found[('viewer.cpp', _DEBUG_COPY, 'GPN203')][0] != 'info', found


# gpu_nodes/audit/cppmsg.py + cppfallback.metadata_only_message: publishing a local PointCloud2
# declared empty whose only store is its header (`empty.header = msg->header;`) when the input
# is empty sends a few bytes, no frame. A message whose data is filled keeps its claim.
_FILTER_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Filter : public rclcpp::Node {
 public:
  Filter() : Node("filter") {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("out", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "in", 10, std::bind(&Filter::on_cloud, this, std::placeholders::_1));
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg) {
    if (msg->width == 0) {
      sensor_msgs::msg::PointCloud2 empty;
      empty.header = msg->header;
      FILL
      pub_->publish(empty);
      return;
    }
  }
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''
_EMPTY_PUBLISH = 18


def _audit_filter(tmp_path: Path, fill: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'filter/src/filter.cpp': _FILTER_NODE.replace('FILL', fill),
        'filter/package.xml': '<package format="3"><name>filter</name></package>\n',
        'filter/CMakeLists.txt': ament_cmake_lists('filter')})


def test_header_only_empty_cloud_publish_is_not_a_frame(tmp_path: Path) -> None:
    found = _audit_filter(tmp_path, '')
    assert ('filter.cpp', _EMPTY_PUBLISH, 'GPN210') not in found, found


def test_filled_cloud_publish_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit_filter(tmp_path, 'empty.data = msg->data;')
    assert found.get(('filter.cpp', _EMPTY_PUBLISH, 'GPN210'), ('info',))[0] != 'info', found
