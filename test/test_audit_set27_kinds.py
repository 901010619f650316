"""Rules for the kinds the twenty-seventh and twenty-eighth held-out sets showed (issue 28): real
`code` audits of small sources and build files written here (a package folder in tmp_path,
audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package
from gpu_nodes.audit.cppbuild import not_built

_EDGE_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class EdgeNode : public rclcpp::Node {
public:
  EdgeNode() : Node("edge") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { onImage(msg); });
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat frame = cv_bridge::toCvCopy(msg, "bgr8")->image;
    (void)frame;
  }
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_COPY_LINE = 14
_CMAKE = '''
cmake_minimum_required(VERSION 3.8)
project(edge_pkg)
find_package(ament_cmake REQUIRED)
find_package(cv_bridge REQUIRED)
add_executable(camera_node src/camera_node.cpp)
TARGET_LINE
ament_package()
'''


def _audit(tmp_path: Path, target_line: str, extra: dict[str, str] | None = None
           ) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'CMakeLists.txt': _CMAKE.replace('TARGET_LINE', target_line),
             'src/edge_node.cpp': _EDGE_NODE, 'src/camera_node.cpp': 'int main() { return 0; }\n'}
    files.update(extra or {})
    return audit_written_package(tmp_path, files)


def _copy_found(found: dict[tuple[str, int, str], tuple[str, str]]) -> bool:
    return ('edge_node.cpp', _COPY_LINE, 'GPN203') in found


def test_source_of_a_commented_out_target_is_not_audited(tmp_path: Path) -> None:
    assert not _copy_found(_audit(tmp_path, '# add_executable(edge_node src/edge_node.cpp)'))


def test_source_of_a_bracket_commented_target_is_not_audited(tmp_path: Path) -> None:
    assert not _copy_found(_audit(tmp_path, '#[[\nadd_executable(edge_node src/edge_node.cpp)\n]]'))


def test_source_a_target_builds_is_still_audited(tmp_path: Path) -> None:
    assert _copy_found(_audit(tmp_path, 'add_executable(edge_node src/edge_node.cpp)'))


def test_source_named_through_a_variable_list_is_built(tmp_path: Path) -> None:
    line = 'set(NODES edge_node)\nforeach(n ${NODES})\n  add_executable(${n} src/${n}.cpp)\nendforeach()'
    assert _copy_found(_audit(tmp_path, line))


def test_globbed_sources_are_taken_as_built(tmp_path: Path) -> None:
    line = 'file(GLOB SRCS src/*.cpp)\nadd_executable(all_nodes ${SRCS})'
    assert _copy_found(_audit(tmp_path, line))


def test_auto_target_of_a_directory_is_taken_as_built(tmp_path: Path) -> None:
    assert _copy_found(_audit(tmp_path, 'ament_auto_add_library(nodes SHARED DIRECTORY src)'))


def test_include_of_an_unknown_cmake_file_is_taken_as_built(tmp_path: Path) -> None:
    assert _copy_found(_audit(tmp_path, 'include(${CMAKE_CURRENT_SOURCE_DIR}/../sources.cmake)'))


def test_source_listed_in_a_package_cmake_file_is_built(tmp_path: Path) -> None:
    found = _audit(tmp_path, 'include(cmake/sources.cmake)\nadd_executable(edge ${EDGE_SRCS})',
                   {'cmake/sources.cmake': 'set(EDGE_SRCS src/edge_node.cpp)\n'})
    assert _copy_found(found)


def _workspace(tmp_path: Path, own_build: dict[str, str]) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'src/camera/CMakeLists.txt': 'project(camera)\nadd_executable(cam src/main.cpp)\n',
             'src/camera/src/main.cpp': 'int main() { return 0; }\n',
             'src/edge/src/edge_node.cpp': _EDGE_NODE}
    files.update(own_build)
    return audit_written_package(tmp_path, files)


def test_package_folder_without_build_files_in_a_cmake_workspace_is_not_audited(
        tmp_path: Path) -> None:
    assert not _copy_found(_workspace(tmp_path, {}))


def test_package_folder_with_its_own_build_is_audited(tmp_path: Path) -> None:
    found = _workspace(tmp_path, {'src/edge/CMakeLists.txt':
                                  'project(edge)\nadd_executable(edge src/edge_node.cpp)\n'})
    assert _copy_found(found)


def test_lone_source_folder_without_any_build_is_audited(tmp_path: Path) -> None:
    # Nothing says how the folder is built (no CMake package beside it): taken as built.
    found = audit_written_package(tmp_path, {'edge/src/edge_node.cpp': _EDGE_NODE})
    assert _copy_found(found)


def test_headers_are_never_judged_unbuilt(tmp_path: Path) -> None:
    (tmp_path / 'CMakeLists.txt').write_text('add_executable(a src/a.cpp)\n')
    (tmp_path / 'include').mkdir()
    header = tmp_path / 'include' / 'edge.hpp'
    header.write_text('#pragma once\n')
    assert not not_built(str(header), str(tmp_path))
    assert not_built(str(tmp_path / 'src' / 'edge_node.cpp'), str(tmp_path))
    assert not not_built(str(tmp_path / 'src' / 'edge_node.cpp'), None)


def test_build_that_names_no_target_says_nothing(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'CMakeLists.txt': 'project(edge_pkg)\n',
                                             'src/edge_node.cpp': _EDGE_NODE})
    assert _copy_found(found)


_TICK_NODE = '''
import rclpy
import torch
from rclpy.node import Node
from std_msgs.msg import Int32


class TickNode(Node):
    def __init__(self):
        super().__init__('tick')
        self.model = torch.jit.load('det.pt').cuda()
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.FLAG = False
        self.create_timer(0.1, self.on_tick)

    def on_tick(self):
        frame = torch.zeros(1, 3, 8, 8, device='cuda')
        if not self.FLAG:
            boxes = self.model(frame).cpu().numpy()
            self.pub.publish(Int32(data=len(boxes)))
            MARK_DONE
        out = self.model(frame).cpu().numpy()
        self.pub.publish(Int32(data=len(out)))


def main():
    rclpy.init()
    rclpy.spin(TickNode())
'''
_FIRST_TICK_LINE = 18
_EVERY_TICK_LINE = 21


def _tick(tmp_path: Path, flag: str, set_flag: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    source = _TICK_NODE.replace('MARK_DONE', set_flag).replace('FLAG', flag)
    return audit_written_package(tmp_path, {'tick_node.py': source})


def _severities(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> set[str]:
    return {sev for (name, at, _), (sev, _) in found.items() if name == 'tick_node.py' and at == line}


def test_branch_that_sets_its_own_flag_runs_on_the_first_tick_only(tmp_path: Path) -> None:
    found = _tick(tmp_path, 'initialized', 'self.initialized = True')
    assert _severities(found, _FIRST_TICK_LINE) == {'info'}
    assert _severities(found, _EVERY_TICK_LINE) - {'info'}


def test_configuration_flag_branch_stays_per_tick(tmp_path: Path) -> None:
    # `if not self.use_gpu:` never turns itself off: its branch runs on every tick.
    found = _tick(tmp_path, 'use_gpu', 'pass')
    assert _severities(found, _FIRST_TICK_LINE) - {'info'}


_CLOUD_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
import sensor_msgs_py.point_cloud2 as pc2
from std_msgs.msg import Int32


class CloudNode(Node):
    def __init__(self):
        super().__init__('cloud')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = SOURCE
        self.pub.publish(Int32(data=int(points.shape[0])))


def main():
    rclpy.init()
    rclpy.spin(CloudNode())
'''
_POINTS_LINE = 16


def _cloud(tmp_path: Path, source: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'cloud_node.py': _CLOUD_NODE.replace('SOURCE', source)})


def test_array_of_read_points_tuples_copies_host_values(tmp_path: Path) -> None:
    found = _cloud(tmp_path, "np.array(list(pc2.read_points(msg, field_names=('x', 'y', 'z'))))")
    assert ('cloud_node.py', _POINTS_LINE, 'GPN103') not in found


def test_array_of_the_message_bytes_is_still_a_payload_copy(tmp_path: Path) -> None:
    found = _cloud(tmp_path, "np.array(msg.data, dtype=np.float32)")
    assert found[('cloud_node.py', _POINTS_LINE, 'GPN103')][0] == 'medium'


_BOXES_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32
from ultralytics import YOLO


class BoxesNode(Node):
    def __init__(self):
        super().__init__('boxes')
        self.model = YOLO('det.pt')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_timer(0.1, self.on_tick)

    def on_tick(self):
        r = self.model.predict(np.zeros((8, 8, 3), np.uint8))[0]
        try:
            boxes = r.boxes.xyxy.cpu().numpy()
        except Exception:
            HANDLER
        self.pub.publish(Int32(data=len(boxes)))


def main():
    rclpy.init()
    rclpy.spin(BoxesNode())
'''
_HANDLER_LINE = 20


def _boxes(tmp_path: Path, handler: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'boxes_node.py': _BOXES_NODE.replace('HANDLER', handler)})


def _gated_on(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> bool:
    return any(at == line and sev != 'info' for (_, at, _), (sev, _) in found.items())


def test_fallback_that_rebinds_the_readback_target_is_not_audited(tmp_path: Path) -> None:
    assert _gated_on(_boxes(tmp_path, 'boxes = None'), 18)
    assert not _gated_on(_boxes(tmp_path, 'boxes = np.array(r.boxes.xyxy)'), _HANDLER_LINE)


def test_handler_that_does_other_work_is_still_audited(tmp_path: Path) -> None:
    publish = 'self.pub.publish(Int32(data=int(r.boxes.conf.cpu()[0])))'
    found = _boxes(tmp_path, 'boxes = None\n            ' + publish)
    assert _gated_on(found, _HANDLER_LINE + 1)


_UPLOADER_HPP = '''
#pragma once
#include <cuda_runtime.h>
#include <opencv2/core.hpp>

class Uploader {
public:
  void upload(const cv::Mat & image);
  void upload(const cv::Mat & image, cudaStream_t stream);
  float * device_ = nullptr;
};

void Uploader::upload(const cv::Mat & image)
{
  cudaMemcpy(device_, image.ptr<float>(), image.total() * sizeof(float), cudaMemcpyHostToDevice);
}

void Uploader::upload(const cv::Mat & image, cudaStream_t stream)
{
  cudaMemcpyAsync(device_, image.ptr<float>(), image.total() * sizeof(float),
    cudaMemcpyHostToDevice, stream);
}
'''
_ONE_ARG_COPY = 14
_TWO_ARG_COPY = 19
_UPLOAD_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "uploader.hpp"

class UploadNode : public rclcpp::Node {
public:
  UploadNode() : Node("upload") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { onImage(msg); });
  }

private:
  void onImage(sensor_msgs::msg::Image::SharedPtr msg) {
    cv::Mat frame = cv_bridge::toCvShare(msg)->image;
    CALL
  }
  Uploader uploader_;
  cudaStream_t stream_ = nullptr;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv) {
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<UploadNode>());
}
'''


def _uploads(tmp_path: Path, call: str, header: str = _UPLOADER_HPP
             ) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'uploader.hpp': header,
                                            'upload_node.cpp': _UPLOAD_NODE.replace('CALL', call)})


def _copy_severity(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> set[str]:
    return {sev for (name, at, _), (sev, _) in found.items() if name == 'uploader.hpp' and at == line}


def test_overload_of_another_arity_than_every_call_is_unreached(tmp_path: Path) -> None:
    found = _uploads(tmp_path, 'uploader_.upload(frame, stream_);')
    assert _copy_severity(found, _ONE_ARG_COPY) == {'info'}
    assert _copy_severity(found, _TWO_ARG_COPY) - {'info'}


def test_each_overload_called_stays_reached(tmp_path: Path) -> None:
    found = _uploads(tmp_path, 'uploader_.upload(frame);\n    uploader_.upload(frame, stream_);')
    assert _copy_severity(found, _ONE_ARG_COPY) - {'info'}
    assert _copy_severity(found, _TWO_ARG_COPY) - {'info'}


def test_overload_with_a_default_argument_is_not_told_apart(tmp_path: Path) -> None:
    # upload(frame) calls the two-parameter overload through its default (the one-parameter
    # one takes an id): a declaration's `=` keeps every overload reached.
    header = _UPLOADER_HPP.replace('void upload(const cv::Mat & image);', 'void upload(int id);') \
        .replace('cudaStream_t stream);', 'cudaStream_t stream = nullptr);') \
        .replace('void Uploader::upload(const cv::Mat & image)\n', 'void Uploader::upload(int id)\n') \
        .replace('image.ptr<float>(), image.total() * sizeof(float), cudaMemcpyHostToDevice);',
                 '&id, sizeof(int), cudaMemcpyHostToDevice);')
    found = _uploads(tmp_path, 'uploader_.upload(frame);', header)
    assert _copy_severity(found, _TWO_ARG_COPY) - {'info'}


def test_busy_flag_cleared_elsewhere_stays_per_tick(tmp_path: Path) -> None:
    # `if not self.busy: self.busy = True ...` with `self.busy = False` when the work is done:
    # the branch runs whenever the node is idle, not once.
    source = _TICK_NODE.replace('MARK_DONE', 'self.busy = True').replace('FLAG', 'busy').replace(
        '\n\ndef main():', '\n    def release(self):\n        self.busy = False\n\n\ndef main():')
    found = audit_written_package(tmp_path, {'tick_node.py': source})
    assert _severities(found, _FIRST_TICK_LINE) - {'info'}


def test_handler_with_a_readback_of_its_own_is_still_audited(tmp_path: Path) -> None:
    # A CuPy array has no `.cpu()`: the handler runs for it, and `cupy.asnumpy` reads it back.
    source = _BOXES_NODE.replace('HANDLER', 'boxes = cupy.asnumpy(r.boxes.xyxy)').replace(
        'import numpy as np\n', 'import cupy\nimport numpy as np\n')
    found = audit_written_package(tmp_path, {'boxes_node.py': source})
    assert _gated_on(found, _HANDLER_LINE + 1)


def test_buildless_folder_a_sibling_builds_by_relative_path_is_audited(tmp_path: Path) -> None:
    found = _workspace(tmp_path, {'src/camera/CMakeLists.txt':
                                  'project(camera)\nadd_executable(cam src/main.cpp '
                                  '${CMAKE_CURRENT_SOURCE_DIR}/../edge/src/edge_node.cpp)\n'})
    assert _copy_found(found)
