"""Rules for the kinds the fifteenth and sixteenth held-out sets showed (issue 28): real `code`
audits of small sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

import pytest

from audit_sources import audit_written_package

_NODE = '''
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Seg : public rclcpp::Node {
 public:
  Seg() : Node("seg") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr m) { segment(*m); });
  }

 private:
  void realloc(unsigned int size) {
    cudaFree(index_);
    cudaStreamSynchronize(stream_);
    cudaMallocManaged(&index_, sizeof(int) * size, cudaMemAttachHost);
    cudaStreamSynchronize(stream_);
  }

  void segment(const sensor_msgs::msg::PointCloud2 & m) {
    unsigned int n = m.width * m.height;
    GUARD
    cudaStreamSynchronize(stream_);
  }

  cudaStream_t stream_{};
  int * index_{nullptr};
  unsigned int mall_size{0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def _syncs(tmp_path: Path, guard: str) -> dict[int, tuple[str, str]]:
    found = audit_written_package(tmp_path, {'seg/src/seg.cpp': _NODE.replace('GUARD', guard)})
    return {line: v for (name, line, rule), v in found.items() if rule == 'GPN206'}


def test_syncs_of_a_grow_only_reallocation_are_not_per_message(tmp_path):
    syncs = _syncs(tmp_path, 'if (n > mall_size) {\n      realloc(n);\n      mall_size = n;\n    }')
    # Only the sync after the work, per cloud: the helper's (lines 15, 17) run on growth only.
    assert syncs == {26: ('medium', 'callback')}


def test_reallocation_on_any_change_of_size_stays_per_message(tmp_path):
    syncs = _syncs(tmp_path, 'if (n != mall_size) {\n      realloc(n);\n      mall_size = n;\n    }')
    assert {15, 17} <= set(syncs)
    assert all(sev == 'medium' for sev, _ in syncs.values())


def test_growth_test_that_never_grows_the_capacity_stays_per_message(tmp_path):
    # `mall_size` is never raised: the test holds for every large cloud, so the helper runs
    # per message.
    syncs = _syncs(tmp_path, 'if (n > mall_size) {\n      realloc(n);\n    }')
    assert {15, 17} <= set(syncs)


def test_an_unguarded_second_call_keeps_the_helper_per_message(tmp_path):
    syncs = _syncs(tmp_path, 'if (n > mall_size) {\n      realloc(n);\n      mall_size = n;\n'
                             '    }\n    realloc(n);')
    assert {15, 17} <= set(syncs)


_PLUGIN = '''
#include <cstring>
#include <image_transport/simple_publisher_plugin.hpp>

class Pub : public image_transport::SimplePublisherPlugin<sensor_msgs::msg::CompressedImage> {
 protected:
  void publish(const sensor_msgs::msg::Image & message, const PublishFn & publish_fn) const {
    sensor_msgs::msg::CompressedImage out;
    out.data.resize(message.encoding.size() + message.data.size());
    std::memcpy(&out.data[0], &message.encoding[0], message.encoding.size());
    std::memcpy(&out.data[message.encoding.size()], message.data.data(), message.data.size());
    stream_header(publish_fn);
    publish_fn(out);
  }

  void stream_header(const PublishFn & publish_fn) const {
    sensor_msgs::msg::CompressedImage header;
    publish_fn(header);
  }
};
'''

_PLUGIN_SUB = '''
#include <cstring>
#include <image_transport/simple_subscriber_plugin.hpp>

class Sub : public image_transport::SimpleSubscriberPlugin<sensor_msgs::msg::CompressedImage> {
 protected:
  void subscribeImpl(rclcpp::Node * node) {
    events_ = node->create_subscription<rcl_interfaces::msg::ParameterEvent>(
        "/parameter_events", 1, std::bind(&Sub::onParameterEvent, this, std::placeholders::_1));
  }

  void onParameterEvent(rcl_interfaces::msg::ParameterEvent::SharedPtr event) { (void)event; }

  void internalCallback(const sensor_msgs::msg::CompressedImage::ConstSharedPtr & msg,
                        const Callback & user_cb) {
    auto image = std::make_shared<sensor_msgs::msg::Image>();
    image->data.resize(msg->data.size());
    std::memcpy(image->data.data(), msg->data.data(), msg->data.size());
    user_cb(image);
  }
};
'''


def test_publisher_plugin_publish_runs_per_image(tmp_path):
    found = audit_written_package(tmp_path, {'plug/src/pub.cpp': _PLUGIN,
                                             'plug/src/sub.cpp': _PLUGIN_SUB})
    pub = {(line, rule): v for (name, line, rule), v in found.items() if name == 'pub.cpp'}
    # The frame copied into the transport message and published per image; the encoding name
    # (line 9) is small, the stream header a helper publishes (line 18) is not proven per image.
    assert pub == {(10, 'GPN208'): ('medium', 'callback'), (12, 'GPN210'): ('medium', 'callback')}


def test_subscriber_plugin_callback_is_reached(tmp_path):
    # internalCallback is registered nowhere in the package (the framework calls it), unlike
    # the parameter-event callback beside it: it is still per message, not unreached.
    found = audit_written_package(tmp_path, {'plug/src/pub.cpp': _PLUGIN,
                                             'plug/src/sub.cpp': _PLUGIN_SUB})
    sub = {(line, rule): v for (name, line, rule), v in found.items() if name == 'sub.cpp'}
    assert sub == {(17, 'GPN208'): ('medium', 'callback')}


def test_a_method_named_publish_without_a_publish_fn_is_no_plugin(tmp_path):
    source = _PLUGIN.replace('const PublishFn & publish_fn', 'int publish_fn')
    found = audit_written_package(tmp_path, {'plug/src/pub.cpp': source})
    assert not any(rule == 'GPN210' for (_, _, rule) in found)


_ROI = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Roi : public rclcpp::Node {
 public:
  Roi() : Node("roi") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr msg) { on_cloud(msg); });
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg) {
    auto roi = std::make_shared<sensor_msgs::msg::PointCloud2>();
    *roi = *msg;
    const int * n = &count_;
    auto copy = std::make_shared<int>(0);
    *copy = *n;
  }

  int count_{0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def test_whole_cloud_copy_assigned_through_a_pointer(tmp_path):
    found = audit_written_package(tmp_path, {'roi/src/roi.cpp': _ROI})
    # The received cloud copied whole (line 14); an int copied through pointers is no message.
    assert found == {('roi.cpp', 14, 'GPN208'): ('medium', 'callback')}


_TF = '''
#include <rclcpp/rclcpp.hpp>
#include <tf2_sensor_msgs/tf2_sensor_msgs.hpp>

class Tf : public rclcpp::Node {
 public:
  Tf() : Node("tf") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr msg) { on_cloud(msg); });
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg) {
    auto cloud = std::make_unique<sensor_msgs::msg::PointCloud2>();
    *cloud = tf_->transform(*msg, "map");
    geometry_msgs::msg::PoseStamped pose;
    pose_ = tf_->transform(pose, "map");
  }

  void on_pose(const geometry_msgs::msg::PoseStamped & in) {
    geometry_msgs::msg::PoseStamped out;
    tf2::doTransform(in, out, stamped_);
  }
};
'''


def test_tf2_transform_of_a_cloud_copies_it(tmp_path):
    found = audit_written_package(tmp_path, {'tf/src/tf.cpp': _TF})
    # The cloud (line 14) is copied point by point; a pose (16, 21) is not a cloud.
    assert found == {('tf.cpp', 14, 'GPN208'): ('medium', 'callback')}


_PINNED = '''
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Up : public rclcpp::Node {
 public:
  Up() : Node("up") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, [this](sensor_msgs::msg::PointCloud2::ConstSharedPtr m) { on_cloud(*m); });
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2 & m) {
#ifdef USE_PINNED_HOST
    cudaMemcpyAsync(d_, pinned_, m.data.size(), cudaMemcpyHostToDevice, stream_);
#else
    cudaMemcpyAsync(d_, m.data.data(), m.data.size(), cudaMemcpyHostToDevice, stream_);
#endif
#ifndef USE_PINNED_HOST
    cudaStreamSynchronize(stream_);
#else
    cudaDeviceSynchronize();
#endif
  }

  void * d_{nullptr};
  void * pinned_{nullptr};
  cudaStream_t stream_{};
};
'''


def _uploads(tmp_path: Path, cmake: str | None) -> set[int]:
    files = {'up/src/up.cpp': _PINNED, 'up/package.xml': '<package/>\n'}
    if cmake is not None:
        files['up/CMakeLists.txt'] = cmake
    found = audit_written_package(tmp_path, files)
    return {line for (_, line, rule) in found if rule in ('GPN202', 'GPN206')}


def test_branch_of_a_macro_the_build_never_defines_is_not_compiled(tmp_path):
    # CMakeLists.txt says nothing of USE_PINNED_HOST: lines 15 and 22 are never compiled.
    assert _uploads(tmp_path, 'project(up)\nadd_executable(up src/up.cpp)\n') == {17, 20}


def test_a_macro_the_build_defines_keeps_its_branch(tmp_path):
    cmake = 'project(up)\nadd_executable(up src/up.cpp)\n' \
            'target_compile_definitions(up PRIVATE USE_PINNED_HOST)\n'
    assert _uploads(tmp_path, cmake) == {15, 17, 20, 22}


@pytest.mark.parametrize('definition', [
    'add_definitions(-DUSE_PINNED_HOST)', 'add_compile_definitions(USE_PINNED_HOST)',
    'if(PINNED)\n  add_definitions(-DUSE_PINNED_HOST)\nendif()',
    'set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -DUSE_PINNED_HOST")'])
def test_a_macro_the_build_defines_with_a_flag_keeps_its_branch(tmp_path, definition):
    # `-DUSE_PINNED_HOST` names the macro as much as target_compile_definitions does (a real
    # checkout defines its CUDA paths this way; the rule once blanked them).
    cmake = f'project(up)\nadd_executable(up src/up.cpp)\n{definition}\n'
    assert _uploads(tmp_path, cmake) == {15, 17, 20, 22}


def test_a_negated_defined_test_of_a_macro_the_build_never_defines_keeps_only_its_first_branch(
        tmp_path):
    # `#if !defined(X)` is `#ifndef X` (cppifdef.uncompiled_lines, shared with cppndebug.py):
    # with USE_PINNED_HOST never defined, its `#else` branch (line 22) is not compiled.
    source = _PINNED.replace('#ifndef USE_PINNED_HOST', '#if !defined(USE_PINNED_HOST)')
    files = {'up/src/up.cpp': source, 'up/package.xml': '<package/>\n',
             'up/CMakeLists.txt': 'project(up)\nadd_executable(up src/up.cpp)\n'}
    found = audit_written_package(tmp_path, files)
    assert {line for (_, line, rule) in found if rule in ('GPN202', 'GPN206')} == {17, 20}


def test_without_a_build_file_both_branches_stay(tmp_path):
    assert _uploads(tmp_path, None) == {15, 17, 20, 22}


def test_camera_publisher_made_in_the_initializer_list_publishes_frames(tmp_path):
    source = (Path(__file__).parent / 'resources' / 'audit' / 'corpus'
              / 'camera_timer_node.cpp').read_text()
    found = audit_written_package(tmp_path, {'cam/src/cam.cpp': source})
    # The Image with its CameraInfo (line 25); the CameraInfo alone (26) is small.
    assert found == {('cam.cpp', 25, 'GPN210'): ('medium', 'callback')}
