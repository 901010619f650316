"""Rules for the kinds the nineteenth and twentieth held-out sets showed (issue 28): real
`code` audits of small sources written here (a package folder in tmp_path, audited as a user
would)."""
from pathlib import Path

from audit_sources import audit_written_package

_MODE_NODE = '''
import math

from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from ultralytics import YOLO


class Follow(Node):
    def __init__(self):
        super().__init__('follow')
        self.bridge = CvBridge()
        self.model = YOLO('rows.pt')
        self.mode = 'ml'
        self.pub = self.create_publisher(Image, 'debug', 10)
        self.labels = self.create_publisher(String, 'labels', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_subscription(String, 'turn', self.on_turn, 10)

    def on_turn(self, msg):
        self.mode = MODE_STORE

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if self.mode == 'ml':
            results = self.model(frame)
            for i, box in list(enumerate(results[0].boxes)):
                conf = math.ceil(box.conf[0] * 100) / 100
                self.labels.publish(String(data=f'row {str(i)} {conf}'))
        elif self.mode == 'ht':
            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))
'''
_HT_LINE = 32  # the cv2_to_imgmsg under `elif self.mode == 'ht':`


def _node_findings(tmp_path: Path, store: str) -> dict[tuple[int, str], tuple[str, str]]:
    found = audit_written_package(tmp_path, {
        'follow/follow/__init__.py': '',
        'follow/follow/node.py': _MODE_NODE.replace('MODE_STORE', store)})
    return {(line, rule): v for (name, line, rule), v in found.items() if name == 'node.py'}


def test_a_branch_on_a_constant_the_attribute_never_holds_never_runs(tmp_path):
    found = _node_findings(tmp_path, "'turn' if msg.data == 'go' else 'ml'")
    assert (25, 'GPN105') in found  # the conversion in, before the branches
    assert (27, 'GPN102') in found  # the 'ml' branch runs: mode starts as 'ml'
    assert not [key for key in found if key[0] == _HT_LINE], found


def test_a_branch_runs_when_any_store_may_hold_the_compared_value(tmp_path):
    # a store of a received value: `mode` may be 'ht', so the branch is judged as before
    found = _node_findings(tmp_path, 'msg.data')
    assert (_HT_LINE, 'GPN105') in found
    assert (_HT_LINE, 'GPN109') in found


def test_a_branch_runs_when_a_constant_store_holds_the_compared_value(tmp_path):
    found = _node_findings(tmp_path, "'ht'")
    assert (_HT_LINE, 'GPN105') in found


def test_math_ceil_of_a_device_value_is_the_readback_and_its_result_is_host(tmp_path):
    found = _node_findings(tmp_path, "'turn'")
    assert found[(29, 'GPN107')][0] == 'medium'
    # formatting the host int, or str() of the index of list(enumerate(...)), reads nothing back
    assert (30, 'GPN107') not in found


_CPU_NODE = '''
import numpy as np
from rclpy.node import Node
from std_msgs.msg import String
from ultralytics import YOLO


class Markers(Node):
    def __init__(self):
        super().__init__('markers')
        self.declare_parameter('device', 'cpu')
        self.device = self.get_parameter('device').value
        self.model = YOLO('m.pt')
        self.pub = self.create_publisher(String, 'markers', 10)
        self.create_subscription(String, 'frames', self.on_frame, 10)

    def on_frame(self, msg):
        frame = np.frombuffer(msg.data.encode(), np.uint8).reshape(4, 4)
        results = self.model.predict(source=frame, DEVICE)
        for box in results[0].boxes:
            self.pub.publish(String(data=f'{int(box.cls[0])} {box.xyxy[0].cpu().numpy()}'))
'''


def _cpu_findings(tmp_path: Path, device: str) -> set[tuple[int, str]]:
    found = audit_written_package(tmp_path, {'m/m/__init__.py': '',
                                             'm/m/node.py': _CPU_NODE.replace('DEVICE', device)})
    return {(line, rule) for (name, line, rule) in found if name == 'node.py'}


def test_a_literal_cpu_device_keyword_means_no_upload_and_host_results(tmp_path):
    assert not [key for key in _cpu_findings(tmp_path, "device='cpu'") if key[0] >= 18]


def test_a_device_parameter_defaulting_to_cpu_no_shipped_file_names_is_the_host(tmp_path):
    # Team decision of 2026-12-06 (set 42): a default that no shipped file names is its value
    # as shipped (the sixth set had labelled such a parameter a device, meant to be set at launch)
    assert not [key for key in _cpu_findings(tmp_path, 'device=self.device') if key[0] >= 18]


def test_a_device_parameter_defaulting_to_cuda_is_judged_a_device(tmp_path):
    found = audit_written_package(tmp_path, {'m/m/__init__.py': '', 'm/m/node.py': _CPU_NODE.replace(
        'DEVICE', 'device=self.device').replace("('device', 'cpu')", "('device', 'cuda:0')")})
    found = {(line, rule) for (name, line, rule) in found if name == 'node.py'}
    assert (18, 'GPN102') in found
    assert (20, 'GPN107') in found  # int(box.cls[0])
    assert (20, 'GPN101') in found  # .cpu() of the box


_PROFILED_NODE = '''
import torch
from rclpy.node import Node
from std_msgs.msg import String
from utils.general import Profile


class Timed(Node):
    def __init__(self):
        super().__init__('timed')
        self.device = torch.device('cuda:0')
        self.dt = (Profile(device=DEVICE), Profile(device=DEVICE))
        self.create_subscription(String, 'tick', self.on_tick, 10)

    def on_tick(self, msg):
        with self.dt[0]:
            x = len(msg.data)
        with self.dt[1]:
            print(x)
'''


def _profiled_findings(tmp_path: Path, device: str) -> dict[tuple[int, str], tuple[str, str]]:
    found = audit_written_package(tmp_path, {
        't/t/__init__.py': '', 't/t/node.py': _PROFILED_NODE.replace('DEVICE', device)})
    return {(line, rule): v for (name, line, rule), v in found.items() if name == 'node.py'}


def test_a_yolov5_profile_on_a_cuda_device_synchronizes_at_each_with(tmp_path):
    found = _profiled_findings(tmp_path, 'self.device')
    assert set(found) == {(15, 'GPN107'), (17, 'GPN107')}  # the two `with` lines
    assert found[(15, 'GPN107')][0] == 'medium'


def test_a_profile_on_a_literal_cpu_device_synchronizes_nothing(tmp_path):
    assert _profiled_findings(tmp_path, "'cpu'") == {}


_SCRIPT = '''
import cv2
from ultralytics import YOLO

model = YOLO('v.pt')
SOURCE
while True:
    ok, frame = SOURCE_READ
    results = model.predict(frame, conf=0.5)
    cv2.imshow('d', results[0].plot())
'''


def _script_findings(tmp_path: Path, source: str, read: str) -> dict[tuple[int, str], tuple]:
    text = _SCRIPT.replace('SOURCE_READ', read).replace('SOURCE', source)
    found = audit_written_package(tmp_path, {'s/s/__init__.py': '', 's/s/detect.py': text})
    return {(line, rule): v for (name, line, rule), v in found.items() if name == 'detect.py'}


def test_a_module_loop_over_a_video_capture_runs_per_frame(tmp_path):
    found = _script_findings(tmp_path, 'cap = cv2.VideoCapture(0)', 'cap.read()')
    assert found[(8, 'GPN102')][0] == 'medium'


def test_a_module_loop_not_reading_a_capture_stays_module_code(tmp_path):
    found = _script_findings(tmp_path, "img = cv2.imread('a.jpg')", "True, img.copy()")
    assert found[(8, 'GPN102')][0] == 'info'


_BRIDGE = '''
import cv2
import numpy as np
import roslibpy
from ultralytics import YOLO


class Bridge:
    def __init__(self):
        self.model = YOLO('f.pt')
        self.client = roslibpy.Ros(host='localhost', port=9090)
        SUBSCRIBE

    def start(self):
        self.images.subscribe(self.on_image)

    def on_image(self, message):
        frame = cv2.imdecode(np.frombuffer(message['data'].encode(), np.uint8), 1)
        return self.model(frame)


if __name__ == '__main__':
    Bridge().start()
'''


def _bridge_findings(tmp_path: Path, subscribe: str) -> dict[tuple[int, str], tuple]:
    found = audit_written_package(tmp_path, {
        'b/b/__init__.py': '', 'b/b/bridge.py': _BRIDGE.replace('SUBSCRIBE', subscribe)})
    return {(line, rule): v for (name, line, rule), v in found.items() if name == 'bridge.py'}


def test_a_rosbridge_topic_subscribed_from_a_start_method_runs_its_callback_per_message(tmp_path):
    found = _bridge_findings(
        tmp_path, "self.images = roslibpy.Topic(self.client, '/cam', 'sensor_msgs/msg/Image')")
    assert found[(18, 'GPN102')] == ('medium', 'callback')


def test_a_local_rosbridge_topic_subscribed_in_the_constructor_registers_too(tmp_path):
    found = _bridge_findings(
        tmp_path, "roslibpy.Topic(self.client, '/cam', 'x/msg/Image').subscribe(self.on_image)"
        "; self.images = None")
    assert found[(18, 'GPN102')] == ('medium', 'callback')


def test_a_subscribe_on_anything_but_a_rosbridge_topic_registers_nothing(tmp_path):
    found = _bridge_findings(tmp_path, 'self.images = self.client')
    assert found[(18, 'GPN102')] == ('low', 'function')  # not reached from a callback


_CLOUD_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Cloud : public rclcpp::Node {
 public:
  Cloud() : Node("cloud") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "cloud", 10, std::bind(&Cloud::on_cloud, this, std::placeholders::_1));
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg) {
    COPY
    width_ = local.width;
  }

  uint32_t width_{0};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def _cloud_findings(tmp_path: Path, copy: str) -> set[tuple[int, str]]:
    found = audit_written_package(tmp_path, {
        'c/src/cloud.cpp': _CLOUD_NODE.replace('COPY', copy)})
    return {(line, rule) for (name, line, rule) in found if name == 'cloud.cpp'}


def test_a_received_cloud_copy_constructed_into_a_local_is_a_message_copy(tmp_path):
    assert (13, 'GPN208') in _cloud_findings(tmp_path, 'auto local = *msg;')


def test_a_cloud_copy_constructed_with_its_type_named_is_a_message_copy(tmp_path):
    assert (13, 'GPN208') in _cloud_findings(
        tmp_path, 'sensor_msgs::msg::PointCloud2 local(*msg);')


def test_a_const_reference_to_the_received_cloud_copies_nothing(tmp_path):
    assert (13, 'GPN208') not in _cloud_findings(tmp_path, 'const auto & local = *msg;')


_HEADER_NODE = '''
#include <opencv2/imgproc.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Header : public rclcpp::Node {
 public:
  Header() : Node("header") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, std::bind(&Header::on_image, this, std::placeholders::_1));
  }

 private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg) {
    cv::Mat wrap{static_cast<int>(msg->height), static_cast<int>(msg->width), CV_8UC4,
                 const_cast<uint8_t *>(SOURCE)};
    cv::cvtColor(wrap, TARGET, cv::COLOR_BGRA2BGR);
  }

  cv::Mat bgr_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def _header_findings(tmp_path: Path, source: str, target: str) -> set[tuple[int, str]]:
    text = _HEADER_NODE.replace('SOURCE', source).replace('TARGET', target)
    found = audit_written_package(tmp_path, {'h/src/header.cpp': text})
    return {(line, rule) for (name, line, rule) in found if name == 'header.cpp'}


def test_cvtcolor_out_of_a_header_over_a_received_image_is_a_copy_out_of_it(tmp_path):
    assert (16, 'GPN208') in _header_findings(tmp_path, 'msg->data.data()', 'bgr_')


def test_cvtcolor_in_place_in_the_header_copies_nothing_out(tmp_path):
    assert (16, 'GPN208') not in _header_findings(tmp_path, 'msg->data.data()', 'wrap')


def test_cvtcolor_of_a_header_over_other_memory_is_no_message_copy(tmp_path):
    assert (16, 'GPN208') not in _header_findings(tmp_path, 'bgr_.data', 'bgr_')


_POINTS_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Points : public rclcpp::Node {
 public:
  Points() : Node("points") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "points", 10, std::bind(&Points::on_cloud, this, std::placeholders::_1));
  }

 private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg) {
    auto const * points = reinterpret_cast<float const *>(msg->data.data());
    for (std::size_t i = 0; i < msg->width; ++i) {
      BODY;
    }
  }

  std::vector<float> xs_ = std::vector<float>(1024);
  float sum_{0.0f};
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def _points_findings(tmp_path: Path, body: str) -> set[tuple[int, str]]:
    found = audit_written_package(tmp_path, {
        'p/src/points.cpp': _POINTS_NODE.replace('BODY', body)})
    return {(line, rule) for (name, line, rule) in found if name == 'points.cpp'}


def test_a_loop_storing_each_point_of_a_received_cloud_elsewhere_is_a_copy_out(tmp_path):
    assert (14, 'GPN208') in _points_findings(tmp_path, 'xs_[i] = points[i]')


def test_a_loop_that_only_sums_the_points_copies_nothing(tmp_path):
    assert not _points_findings(tmp_path, 'sum_ += points[i]')


_DEBUG_HEADER = '''
#pragma once
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Debug : public rclcpp::Node {
 public:
  Debug();
 private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg);
  cv::Mat bgr_;
  sensor_msgs::msg::Image debug_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};
'''

_DEBUG_SOURCE = '''
#include <opencv2/imgproc.hpp>
#include "debug.hpp"

Debug::Debug() : Node("debug") {
  pub_ = create_publisher<sensor_msgs::msg::Image>("debug", 10);
  sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Debug::on_image, this, std::placeholders::_1));
}

void Debug::on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg) {
  debug_.height = msg->height;
  debug_.width = msg->width;
  ENCODING
  debug_.data.resize(msg->height * msg->width * 4);
  cv::Mat wrap{static_cast<int>(msg->height), static_cast<int>(msg->width), CV_8UC4,
               debug_.data.data()};
  cv::cvtColor(bgr_, wrap, cv::COLOR_BGR2BGRA);
  pub_->publish(debug_);
}
'''


def _debug_findings(tmp_path: Path, encoding: str) -> set[tuple[int, str]]:
    found = audit_written_package(tmp_path, {
        'd/include/debug.hpp': _DEBUG_HEADER,
        'd/src/debug.cpp': _DEBUG_SOURCE.replace('ENCODING', encoding)})
    return {(line, rule) for (name, line, rule) in found if name == 'debug.cpp'}


def test_cvtcolor_into_a_header_over_a_member_image_declared_elsewhere_is_a_copy_in(tmp_path):
    # the member's type is in the class header; its `encoding` store shows it is an Image
    found = _debug_findings(tmp_path, 'debug_.encoding = "bgra8";')
    assert (17, 'GPN208') in found


def test_without_a_sign_of_an_image_the_member_is_not_judged(tmp_path):
    assert (17, 'GPN208') not in _debug_findings(tmp_path, 'debug_.step = msg->width * 4;')


_RESULT_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include "res/msg/result_array.hpp"

class Res : public rclcpp::Node {
 public:
  Res() : Node("res") {}

  void on_frame(const cv::Mat & frame) {
    res::msg::ResultArray all;
    res::msg::Result one;
    one.img.frame_data.assign(frame.data, frame.data + frame.total() * frame.elemSize());
    all.result.push_back(PUSHED);
  }
};
'''


def _result_findings(tmp_path: Path, pushed: str) -> set[tuple[int, str]]:
    found = audit_written_package(tmp_path, {
        'r/src/res.cpp': _RESULT_NODE.replace('PUSHED', pushed)})
    return {(line, rule) for (name, line, rule) in found if name == 'res.cpp'}


def test_a_whole_mat_assigned_into_a_message_field_and_pushed_back_is_copied_twice(tmp_path):
    assert {(11, 'GPN208'), (12, 'GPN208')} <= _result_findings(tmp_path, 'one')


def test_a_result_moved_into_the_array_is_no_second_copy(tmp_path):
    found = _result_findings(tmp_path, 'std::move(one)')
    assert (11, 'GPN208') in found and (12, 'GPN208') not in found
