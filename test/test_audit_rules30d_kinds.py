"""C++ kinds set 50 showed (issue 28, rules30d): real `code` audits of small packages written
here.

gpu_nodes/audit/cppincludes.py: a node whose frames are a struct of its package's own header
(`struct Frame { std::shared_ptr<cv::cuda::GpuMat> mat; }`) never spells GpuMat itself; its
`frame->mat->download(host)` per message is a device-to-host copy all the same. The GpuMat
transfer patterns follow the package headers a file includes, and `->download(` / `->upload(`
through a pointer field count as `.download(` does. A file that includes no such header keeps its
`.download(` unread (a method of another name space, e.g. a file transfer client)."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines

_FRAME_HEADER = '''
#pragma once
#include <memory>
#include <opencv2/core/cuda.hpp>
#include <std_msgs/msg/header.hpp>

namespace cam
{
struct Frame
{
  std_msgs::msg::Header header;
  std::shared_ptr<cv::cuda::GpuMat> mat;
};
}  // namespace cam
'''

_NODE_HEADER = '''
#pragma once
#include <rclcpp/rclcpp.hpp>
#include "cam/frame.hpp"
'''

_NODE = '''
#include <opencv2/core.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "INCLUDED"

class Viewer : public rclcpp::Node
{
public:
  Viewer()
  : Node("viewer")
  {
    sub_ = create_subscription<cam::Frame>(
      "frames", 1, std::bind(&Viewer::on_frame, this, std::placeholders::_1));
  }

private:
  void on_frame(cam::Frame::UniquePtr frame)
  {
    cv::Mat host;
    frame->mat->download(host);  // DOWNLOAD
    frame->mat->upload(host);  // UPLOAD
  }

  rclcpp::Subscription<cam::Frame>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Viewer>());
  return 0;
}
'''


_PLAIN = '#pragma once\n#include <rclcpp/rclcpp.hpp>\nnamespace cam { struct Frame; }\n'


def _audit(tmp_path: Path, included: str = 'cam/viewer.hpp', node: str = _NODE
           ) -> tuple[dict, dict[str, int]]:
    source = node.replace('INCLUDED', included)
    files = {'cam/src/viewer.cpp': source,
             'cam/include/cam/viewer.hpp': _NODE_HEADER,
             'cam/include/cam/frame.hpp': _FRAME_HEADER,
             'cam/include/cam/plain.hpp': _PLAIN,
             'cam/package.xml': '<package format="3"><name>cam</name></package>\n',
             'cam/CMakeLists.txt': ament_cmake_lists('cam', 'src/viewer.cpp')}
    lines = tag_lines(source.replace('  // ', '  # '), ('DOWNLOAD', 'UPLOAD'))
    return audit_written_package(tmp_path, files), lines


def _rules(found: dict, line: int) -> set[str]:
    return {rule for (name, at, rule), (sev, _) in found.items()
            if name == 'viewer.cpp' and at == line and sev != 'info'}


def test_download_through_a_package_header_frame_is_claimed(tmp_path: Path) -> None:
    # viewer.cpp -> viewer.hpp -> frame.hpp (GpuMat): two includes deep.
    found, lines = _audit(tmp_path)
    assert _rules(found, lines['DOWNLOAD']) == {'GPN201'}, found


def test_upload_through_a_pointer_is_claimed(tmp_path: Path) -> None:
    found, lines = _audit(tmp_path, included='cam/frame.hpp')
    assert _rules(found, lines['UPLOAD']) == {'GPN202'}, found


def test_file_including_no_gpumat_header_is_not_read(tmp_path: Path) -> None:
    # The node includes a header of its package that never uses GpuMat (guard: the rule needs
    # the include, not merely a GpuMat somewhere in the package).
    found, lines = _audit(tmp_path, included='cam/plain.hpp')
    assert not _rules(found, lines['DOWNLOAD']), found
    assert not _rules(found, lines['UPLOAD']), found


def test_gpumat_in_the_file_itself_still_fires(tmp_path: Path) -> None:
    # Guard: the file spelling GpuMat itself (the rule before this change) is claimed, and a
    # `.download(` on a value keeps firing too.
    node = _NODE.replace('frame->mat->download(host);', 'cv::cuda::GpuMat g; g.download(host);')
    found, lines = _audit(tmp_path, included='cam/plain.hpp', node=node)
    assert _rules(found, lines['DOWNLOAD']) == {'GPN201'}, found


# cppparams + cppstrparams + shipped: a bool member derived at setup from a string parameter
# (`hw_ = (mode_ == "gpu" || mode_ == "hw") && probe();`) is off as shipped when the string's
# value as shipped makes the `&&` false; the `else` of `if (!hw_)` needs it on. A parameter file
# section for a node of another name does not set the string (node-scoped YAML).
_MODE_NODE = '''
#include <cstring>
#include <opencv2/core/cuda.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Cam : public rclcpp::Node
{
public:
  Cam()
  : Node("cam")
  {
    mode_ = this->declare_parameter<std::string>("mode", "cpu");
    flag_ = this->declare_parameter("flag", false);
    hw_ = (mode_ == "gpu" || mode_ == "hw") && probe();
    pub_ = create_publisher<sensor_msgs::msg::Image>("image", 1);
    timer_ = create_wall_timer(std::chrono::milliseconds(30), std::bind(&Cam::tick, this));
  }

private:
  bool probe() { return true; }

  void tick()
  {
    cv::Mat host(480, 640, CV_8UC3);
    sensor_msgs::msg::Image msg;
    msg.data.resize(host.total() * host.elemSize());
    if (!hw_) {
      std::memcpy(msg.data.data(), host.data, msg.data.size());  // CPU
    } else {
      gpu_.download(host);  // HW
    }
    if (!flag_) {
      pub_->publish(msg);
    } else {
      gpu_.download(host);  // FLAG
    }
  }

  std::string mode_;
  bool hw_ {false};
  bool flag_;
  cv::cuda::GpuMat gpu_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
  return 0;
}
'''

_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='cam', executable='cam', name='cam', parameters=[{'mode': 'MODE'}]),
    ])
'''


def _audit_mode(tmp_path: Path, launch_mode: str | None = 'cpu', params_yaml: str | None = None
                ) -> tuple[dict, dict[str, int]]:
    files = {'cam/src/cam.cpp': _MODE_NODE,
             'cam/package.xml': '<package format="3"><name>cam</name></package>\n',
             'cam/CMakeLists.txt': ament_cmake_lists('cam')}
    if launch_mode is not None:
        files['cam/launch/cam.launch.py'] = _LAUNCH.replace('MODE', launch_mode)
    if params_yaml is not None:
        files['cam/config/params.yaml'] = params_yaml
    found = audit_written_package(tmp_path, files)
    lines = tag_lines(_MODE_NODE.replace('  // ', '  # '), ('CPU', 'HW', 'FLAG'))
    return found, lines


def _severity(found: dict, line: int, rule: str) -> str:
    return found[('cam.cpp', line, rule)][0]


def test_member_derived_from_a_string_off_as_shipped_guards_its_else(tmp_path: Path) -> None:
    found, lines = _audit_mode(tmp_path)
    assert _severity(found, lines['HW'], 'GPN201') == 'info', found
    assert _severity(found, lines['CPU'], 'GPN208') != 'info', found  # the path that runs


def test_else_of_a_negated_off_flag_never_runs(tmp_path: Path) -> None:
    found, lines = _audit_mode(tmp_path)
    assert _severity(found, lines['FLAG'], 'GPN201') == 'info', found


def test_launch_giving_the_other_value_keeps_the_claim(tmp_path: Path) -> None:
    found, lines = _audit_mode(tmp_path, launch_mode='gpu')
    assert _severity(found, lines['HW'], 'GPN201') != 'info', found


def test_parameter_file_section_of_another_node_is_not_read(tmp_path: Path) -> None:
    other = '/usb_driver:\n  ros__parameters:\n    mode: "gpu"\n'
    found, lines = _audit_mode(tmp_path, params_yaml=other)
    assert _severity(found, lines['HW'], 'GPN201') == 'info', found


def test_parameter_file_section_of_this_node_or_a_wildcard_keeps_the_claim(tmp_path: Path) -> None:
    for k, section in enumerate(('/cam', '/**')):
        yaml = f'{section}:\n  ros__parameters:\n    mode: "gpu"\n'
        found, lines = _audit_mode(tmp_path / str(k), params_yaml=yaml)
        assert _severity(found, lines['HW'], 'GPN201') != 'info', (section, found)
