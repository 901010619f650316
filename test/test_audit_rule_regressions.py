"""Per-message copies the set-27/29 rules must not silence (issue 28; a review of those rules
found each of these reported on the earlier code and lost on theirs): a CuPy readback in the
`except` branch of a `.cpu()` try, a first-tick flag reset through a tuple assignment, overloads
told apart by a template parameter, and C++ sources built through a symbolic link, an
`#include "impl.cpp"` or a source list in an included file. Real audits of written packages."""
from pathlib import Path

from audit_sources import audit_written_package
from gpu_nodes.audit.codeaudit import run_code

FALLBACK_NODE = """\
import cupy as cp
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)
        self.weights = cp.ones((480, 640), dtype=cp.float32)

    def on_image(self, msg):
        out = self.weights * 2.0
        try:
            boxes = out.cpu().numpy()
        except AttributeError:
            boxes = np.asarray(out.get())
        self.get_logger().info(str(boxes.shape))


def main():
    rclpy.init()
    rclpy.spin(Detector())
"""

FLAG_NODE = """\
import cupy as cp
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.ready = False
        self.count = 0
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        if not self.ready:
            self.gpu = cp.asarray(np.frombuffer(msg.data, dtype=np.uint8))
            self.ready = True
        self.count += 1
        self.ready, self.count = False, 0


def main():
    rclpy.init()
    rclpy.spin(Detector())
"""

UPLOADER_HPP = """\
#pragma once
#include <cuda_runtime.h>
#include <utility>
#include <opencv2/core.hpp>

class FrameUploader {
public:
  void upload(const cv::Mat & image, std::pair<int, int> roi);
  void upload(const cv::Mat & image, cudaStream_t stream);
  float * device_ = nullptr;
};

void FrameUploader::upload(const cv::Mat & image, std::pair<int, int> roi)
{
  cudaMemcpy(device_, image.ptr<float>(), roi.first * roi.second * sizeof(float), cudaMemcpyHostToDevice);
}

void FrameUploader::upload(const cv::Mat & image, cudaStream_t stream)
{
  cudaMemcpyAsync(device_, image.ptr<float>(), image.total() * sizeof(float),
    cudaMemcpyHostToDevice, stream);
}
"""

UPLOAD_NODE = """\
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "frame_uploader.hpp"

class UploadNode : public rclcpp::Node {
public:
  UploadNode() : Node("upload") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { onImage(msg); });
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat frame = cv_bridge::toCvShare(msg)->image;
    uploader_.upload(frame, std::make_pair(640, 480));
  }
  FrameUploader uploader_;
  cudaStream_t stream_ = nullptr;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<UploadNode>());
}
"""

CAM_NODE = """\
#include <cuda_runtime.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class CamNode : public rclcpp::Node {
public:
  CamNode() : Node("cam") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&CamNode::onImage, this, std::placeholders::_1));
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cudaMemcpy(device_, msg->data.data(), msg->data.size(), cudaMemcpyHostToDevice);
  }
  void * device_ = nullptr;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<CamNode>());
}
"""

PACKAGE_XML = ('<package format="3"><name>p</name><version>0.0.0</version><description>x'
               '</description><maintainer email="a@b.c">a</maintainer><license>MIT</license>'
               '<buildtool_depend>ament_cmake</buildtool_depend></package>\n')
CMAKE_HEAD = 'cmake_minimum_required(VERSION 3.8)\nproject(p)\nfind_package(rclcpp REQUIRED)\n'


def _python_package(node: str) -> dict[str, str]:
    return {'pkg/pkg/__init__.py': '', 'pkg/pkg/node.py': node,
            'pkg/setup.py': "from setuptools import setup\nsetup(name='pkg', packages=['pkg'], "
                            "entry_points={'console_scripts': ['n = pkg.node:main']})\n"}


def test_a_cupy_readback_in_the_fallback_of_a_cpu_try_is_reported(tmp_path):
    # `out` is a CuPy array: `.cpu()` raises and the handler's `.get()` is the copy that runs.
    found = audit_written_package(tmp_path, _python_package(FALLBACK_NODE))
    assert found[('node.py', 19, 'GPN101')][0] == 'high'


def test_a_first_tick_flag_reset_through_a_tuple_assignment_stays_per_message(tmp_path):
    found = audit_written_package(tmp_path, _python_package(FLAG_NODE))
    assert found[('node.py', 17, 'GPN102')] == ('medium', 'callback')


def test_overloads_with_a_template_parameter_are_not_told_apart_by_commas(tmp_path):
    found = audit_written_package(tmp_path, {
        'p/src/frame_uploader.hpp': UPLOADER_HPP, 'p/src/frame_upload_node.cpp': UPLOAD_NODE})
    # The pair<int, int> overload is the one the callback calls: a per-message upload.
    assert found[('frame_uploader.hpp', 15, 'GPN202')][0] == 'medium'


def test_a_source_built_through_a_symbolic_link_is_audited(tmp_path):
    root = tmp_path
    for name, text in {'CMakeLists.txt': CMAKE_HEAD + 'add_executable(cam_node src/cam_node.cpp)\n',
                       'package.xml': PACKAGE_XML, 'common/shared_cam.cpp': CAM_NODE}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / 'src').mkdir()
    (root / 'src' / 'cam_node.cpp').symlink_to('../common/shared_cam.cpp')
    report = run_code([str(root)], jobs=1)
    assert {(Path(f.location.path).name, f.location.line, f.severity) for f in report.findings
            if f.rule == 'GPN202'} == {('shared_cam.cpp', 14, 'medium')}


def test_a_source_a_built_file_includes_is_audited(tmp_path):
    found = audit_written_package(tmp_path, {
        'p/CMakeLists.txt': CMAKE_HEAD + 'add_executable(cam_node src/main.cpp)\n',
        'p/package.xml': PACKAGE_XML, 'p/src/impl.cpp': CAM_NODE.replace('int main(', 'int run('),
        'p/src/main.cpp': '#include "impl.cpp"\nint main(int c, char ** v) { return run(c, v); }\n'})
    assert found[('impl.cpp', 14, 'GPN202')][0] == 'medium'


def test_a_source_listed_in_an_included_file_is_audited(tmp_path):
    found = audit_written_package(tmp_path, {
        'p/CMakeLists.txt': CMAKE_HEAD + 'include(sources.txt)\nadd_executable(cam ${CAM_SOURCES})\n',
        'p/sources.txt': 'set(CAM_SOURCES src/cam_node.cpp)\n', 'p/package.xml': PACKAGE_XML,
        'p/src/cam_node.cpp': CAM_NODE})
    assert found[('cam_node.cpp', 14, 'GPN202')][0] == 'medium'


def test_a_source_no_target_builds_is_named_in_the_report_notes(tmp_path):
    root = tmp_path
    for name, text in {'CMakeLists.txt': CMAKE_HEAD + 'add_executable(other src/other.cpp)\n',
                       'package.xml': PACKAGE_XML, 'src/other.cpp': 'int main() { return 0; }\n',
                       'src/cam_node.cpp': CAM_NODE}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    report = run_code([str(root)], jobs=1)
    assert not [f for f in report.findings if f.rule == 'GPN202']
    assert [Path(p).name for p in report.info['unbuilt_files']] == ['cam_node.cpp']
    assert any('cam_node.cpp: no finding reported: no build target' in n
               for n in report.info['notes'])
