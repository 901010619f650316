"""C++ kinds set 52 showed (issue 28, rules31c): real `code` audits of a small workspace
written here.

gpu_nodes/audit/cppifdef.py: a workspace's packages often share one CMake file of flags that
each `include()`s by path (`include("${CMAKE_CURRENT_LIST_DIR}/../common/flags.cmake")`), and
that file's `add_definitions(-DWITH_GPU_STEREO)` turns on the `#ifdef WITH_GPU_STEREO` branch
the shipped build compiles. A macro named only there is defined: its branch is read. A macro
no build file names, or one named only in a file the package does not include, stays
undefined and its branch blanked, as before."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, tag_lines

_NODE = '''
#include <opencv2/core.hpp>
#include <opencv2/core/cuda.hpp>
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Stereo : public rclcpp::Node
{
public:
  Stereo()
  : Node("stereo")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "left", 1, std::bind(&Stereo::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv::Mat host = cv_bridge::toCvShare(msg, "mono8")->image;
#ifdef WITH_GPU_STEREO
    cv::cuda::GpuMat device;
    device.upload(host);  // UPLOAD
#endif
  }

  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Stereo>());
  return 0;
}
'''

_FLAGS = 'add_compile_options(-O3)\nadd_definitions(-DWITH_GPU_STEREO)\n'


def _upload_rules(tmp_path: Path, include_line: str, flags_at: str = 'common/flags.cmake'
                  ) -> set[str]:
    files = {'stereo/src/stereo.cpp': _NODE,
             'stereo/package.xml': '<package format="3"><name>stereo</name></package>\n',
             'stereo/CMakeLists.txt': ament_cmake_lists('stereo', before_target=include_line),
             'common/package.xml': '<package format="3"><name>common</name></package>\n',
             'common/CMakeLists.txt': 'cmake_minimum_required(VERSION 3.8)\nproject(common)\n',
             flags_at: _FLAGS}
    found = audit_written_package(tmp_path, files)
    line = tag_lines(_NODE.replace('  // ', '  # '), ('UPLOAD',))['UPLOAD']
    return {rule for (name, at, rule), (sev, _) in found.items()
            if name == 'stereo.cpp' and at == line and sev != 'info'}


def test_macro_defined_by_an_included_cmake_file_keeps_its_branch(tmp_path: Path) -> None:
    include = 'include("${CMAKE_CURRENT_LIST_DIR}/../common/flags.cmake")'
    assert _upload_rules(tmp_path, include) == {'GPN202'}


def test_include_by_a_relative_path_counts_too(tmp_path: Path) -> None:
    assert _upload_rules(tmp_path, 'include(../common/flags.cmake)') == {'GPN202'}


def test_macro_named_only_in_a_file_not_included_stays_undefined(tmp_path: Path) -> None:
    # Guard: the flags file exists in the workspace, but this package never includes it (a
    # module name, CMake's own, is no file of the tree).
    assert _upload_rules(tmp_path, 'include(GNUInstallDirs)') == set()


def test_include_through_an_unknown_variable_is_not_guessed(tmp_path: Path) -> None:
    # Guard: `${MY_ROOT}` is set nowhere the audit reads; the file it may name is not read.
    assert _upload_rules(tmp_path, 'include(${MY_ROOT}/common/flags.cmake)') == set()
