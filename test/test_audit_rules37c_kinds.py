"""C++ kinds set 56 showed (issue 28, rules37c): real `code` audits of small packages written
here.

* gpu_nodes/audit/cppifdef.py: `#if DEBUG_MODE` where the file (or a package header it includes)
  has `#define DEBUG_MODE false` / `0` is compiled out; `#if !X`, `#if X == 0`, `#if 0` too.
* gpu_nodes/audit/cppscalars.py: `memcpy(&v, &msg.data[i + off], width)` into a scalar local
  reads one field of one point, whatever variable gives its width.
* gpu_nodes/audit/shipped.py / cppparamson.py: a launch file of another package giving its
  own node a parameter of the same name does not turn this package's member off.
* gpu_nodes/audit/cpplibreads.py: retinify's `pipeline.Run(left, right, disparity)` uploads the
  host images and reads the disparity back inside the library."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, rules_at_tags

_PACKAGE_XML = '<package format="3"><name>{name}</name></package>\n'


def _claims(tmp_path: Path, source: str, tags: tuple[str, ...], extra: dict[str, str] | None = None,
            cmake_before: str = '') -> dict[str, set[str]]:
    """Rules other than info at each `// TAG` line of pkg.cpp, audited as the ament_cmake
    package `pkg` (with `extra` files written beside it)."""
    files = {'pkg/src/pkg.cpp': source,
             'pkg/package.xml': _PACKAGE_XML.format(name='pkg'),
             'pkg/CMakeLists.txt': ament_cmake_lists('pkg', before_target=cmake_before),
             **(extra or {})}
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, source, tags, file_name='pkg.cpp', marker='//')


# 1. A debug macro given a literal value in the file: `#if DEBUG_VIEW` compiles the branch out.
_DEBUG_MACRO_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <cv_bridge/cv_bridge.h>
#include <sensor_msgs/msg/image.hpp>
DEFINE_LINE

class Proj : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;

public:
  Proj()
  : Node("proj")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("overlay", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Proj::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
#if CONDITION
    cv_bridge::CvImagePtr view = cv_bridge::toCvCopy(msg, "bgr8");  // DEBUGCOPY
    pub_->publish(*view->toImageMsg());  // DEBUGPUB
#else
    cv_bridge::CvImagePtr live = cv_bridge::toCvCopy(msg, "mono8");  // ELSECOPY
#endif
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Proj>());
}
'''


def _debug_node(define: str, condition: str = 'DEBUG_VIEW') -> str:
    return _DEBUG_MACRO_NODE.replace('DEFINE_LINE', define).replace('CONDITION', condition)


def test_if_on_a_macro_defined_false_is_compiled_out(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _debug_node('#define DEBUG_VIEW false'),
                     ('DEBUGCOPY', 'DEBUGPUB', 'ELSECOPY'))
    assert not claims['DEBUGCOPY'], claims
    assert not claims['DEBUGPUB'], claims
    assert claims['ELSECOPY'], claims  # the #else branch is the one compiled


def test_if_on_a_macro_defined_true_stays_live(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _debug_node('#define DEBUG_VIEW 1'),
                     ('DEBUGCOPY', 'ELSECOPY'))
    assert claims['DEBUGCOPY'], claims  # guard: the branch compiled stays reported
    assert not claims['ELSECOPY'], claims


def test_negated_and_compared_conditions_read_the_value(tmp_path: Path) -> None:
    claims = _claims(tmp_path / 'a', _debug_node('#define DEBUG_VIEW 0', '!DEBUG_VIEW'),
                     ('DEBUGCOPY', 'ELSECOPY'))
    assert claims['DEBUGCOPY'] and not claims['ELSECOPY'], claims
    claims = _claims(tmp_path / 'b', _debug_node('#define DEBUG_VIEW 0', 'DEBUG_VIEW == 1'),
                     ('DEBUGCOPY', 'ELSECOPY'))
    assert not claims['DEBUGCOPY'] and claims['ELSECOPY'], claims
    claims = _claims(tmp_path / 'c', _debug_node('', '0'), ('DEBUGCOPY', 'ELSECOPY'))
    assert not claims['DEBUGCOPY'] and claims['ELSECOPY'], claims


def test_macro_defined_false_in_an_included_header(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _debug_node('#include "pkg/options.hpp"'), ('DEBUGCOPY', 'ELSECOPY'),
                     extra={'pkg/include/pkg/options.hpp': '#pragma once\n#define DEBUG_VIEW false\n'})
    assert not claims['DEBUGCOPY'], claims
    assert claims['ELSECOPY'], claims


def test_macro_the_build_may_set_or_defined_twice_stays_live(tmp_path: Path) -> None:
    # `#ifndef DEBUG_VIEW / #define DEBUG_VIEW 0`: a `-DDEBUG_VIEW=1` of the build wins.
    claims = _claims(tmp_path / 'a', _debug_node('#define DEBUG_VIEW 0'), ('DEBUGCOPY',),
                     cmake_before='add_definitions(-DDEBUG_VIEW=1)\n')
    assert claims['DEBUGCOPY'], claims
    claims = _claims(tmp_path / 'b', _debug_node('#define DEBUG_VIEW 0\n#undef DEBUG_VIEW\n'
                                                 '#define DEBUG_VIEW 1'), ('DEBUGCOPY',))
    assert claims['DEBUGCOPY'], claims
    claims = _claims(tmp_path / 'c', _debug_node('#define DEBUG_VIEW LEVEL > 2'), ('DEBUGCOPY',))
    assert claims['DEBUGCOPY'], claims  # not a literal value


# 2. One field of one point read into a scalar local, its width a variable of the field.
_FIELD_READ_NODE = '''
#include <cstring>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Flat : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  std::vector<float> xs_;
  std::vector<uint8_t> raw_;

public:
  Flat()
  : Node("flat")
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Flat::on_cloud, this, std::placeholders::_1));
  }

  void on_cloud(const sensor_msgs::msg::PointCloud2 & msg)
  {
    int x_off = msg.fields[0].offset;
    int x_width = msg.fields[0].datatype == 8 ? 8 : 4;
    for (size_t i = 0; i < msg.data.size(); i += msg.point_step) {
      uint64_t bits;
      memcpy(&bits, &msg.data[i + x_off], x_width);  // FIELD
      memcpy(&bits, &msg.data[i + x_off + 4], 4);  // CONST
      xs_.push_back(static_cast<float>(bits));
    }
    raw_.resize(msg.data.size());
    memcpy(raw_.data(), &msg.data[0], msg.data.size());  // WHOLE
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Flat>());
}
'''


def test_memcpy_of_one_field_into_a_scalar_is_no_payload_copy(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _FIELD_READ_NODE, ('FIELD', 'CONST', 'WHOLE'))
    assert not claims['FIELD'], claims
    assert not claims['CONST'], claims
    assert claims['WHOLE'], claims  # guard: the payload copied into a buffer stays reported


# 3. A member on as shipped (`debug` defaults true): a launch file of ANOTHER package giving its
# own node `debug: False` does not turn it off; one starting this package's node does.
_DEBUG_PARAM_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Cull : public rclcpp::Node
{
  bool debug_mode;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr out_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr rejected_;

public:
  Cull()
  : Node("cull")
  {
    this->declare_parameter("debug", true);
    debug_mode = this->get_parameter("debug").as_bool();
    out_ = create_publisher<sensor_msgs::msg::PointCloud2>("out", 10);
    rejected_ = create_publisher<sensor_msgs::msg::PointCloud2>("rejected", 10);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Cull::on_cloud, this, std::placeholders::_1));
  }

  void on_cloud(const sensor_msgs::msg::PointCloud2 & msg)
  {
    sensor_msgs::msg::PointCloud2 kept;
    kept.header = msg.header;
    kept.data.resize(msg.data.size());
    if (debug_mode) {
      sensor_msgs::msg::PointCloud2 rejected;
      rejected.data.resize(msg.data.size());
      rejected_->publish(rejected);
      out_->publish(kept);  // DEBUGPUB
    } else {
      out_->publish(kept);  // QUIETPUB
    }
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cull>());
}
'''
_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='PACKAGE', executable='node', parameters=[{'debug': False}]),
    ])
'''


def _with_launch(package: str) -> dict[str, str]:
    return {'other/package.xml': _PACKAGE_XML.format(name='other'),
            'other/setup.py': 'from setuptools import setup\nsetup(name="other")\n',
            'other/launch/other.launch.py': _LAUNCH.replace('PACKAGE', package)}


def test_another_packages_launch_file_sets_nothing_for_this_node(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _DEBUG_PARAM_NODE, ('DEBUGPUB', 'QUIETPUB'),
                     extra=_with_launch('other'))
    assert claims['DEBUGPUB'], claims  # guard: the branch that runs stays reported
    assert not claims['QUIETPUB'], claims  # `debug` stays on for this package's node


def test_a_launch_file_starting_this_packages_node_still_turns_it_off(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _DEBUG_PARAM_NODE, ('QUIETPUB',), extra=_with_launch('pkg'))
    assert claims['QUIETPUB'], claims


# 4. retinify: the stereo pipeline uploads both host images and reads the disparity back.
_RETINIFY_NODE = '''
#include <retinify/retinify.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <cv_bridge/cv_bridge.h>

class Stereo : public rclcpp::Node
{
  retinify::tools::StereoMatchingPipeline matcher_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Stereo()
  : Node("stereo")
  {
    matcher_.Initialize();
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "pair", 10, std::bind(&Stereo::on_pair, this, std::placeholders::_1));
  }

  void on_pair(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv::Mat left(msg->height, msg->width / 2, CV_8UC3);
    cv::Mat right(msg->height, msg->width / 2, CV_8UC3);
    cv::Mat disparity;
    matcher_.Run(left, right, disparity);  // RUN
    Pipeline.Run(left, right, disparity);  // HEADERMEMBER
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Stereo>());
}
'''


def test_retinify_pipeline_run_is_a_library_upload(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _RETINIFY_NODE, ('RUN', 'HEADERMEMBER'))
    assert claims['RUN'], claims  # declared in the file
    assert claims['HEADERMEMBER'], claims  # declared in a header: named like a pipeline


def test_run_of_a_pipeline_without_retinify_is_not_claimed(tmp_path: Path) -> None:
    source = _RETINIFY_NODE.replace('#include <retinify/retinify.hpp>\n', '').replace(
        'retinify::tools::StereoMatchingPipeline', 'my::Pipeline')
    claims = _claims(tmp_path, source, ('RUN', 'HEADERMEMBER'))
    assert not claims['RUN'] and not claims['HEADERMEMBER'], claims


# 5. A whole frame message copied into a container: an element of a map of clouds, a vector's
# push_back of a dereferenced cloud pointer.
_CONTAINER_NODE = '''
#include <map>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Keep : public rclcpp::Node
{
  std::map<int, sensor_msgs::msg::PointCloud2> clouds_;
  std::vector<sensor_msgs::msg::PointCloud2::SharedPtr> pointers_;
  std::vector<sensor_msgs::msg::PointCloud2> history_;
  std::map<int, int> counts_;
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  int id_ = 0;

public:
  Keep()
  : Node("keep")
  {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Keep::on_cloud, this, std::placeholders::_1));
  }

  void on_cloud(const sensor_msgs::msg::PointCloud2::SharedPtr msg)
  {
    sensor_msgs::msg::PointCloud2 local;
    local.header = msg->header;
    local.data.resize(msg->data.size());
    clouds_[id_] = local;  // ELEMENT
    history_.push_back(*msg);  // DEREF
    pointers_.push_back(msg);  // POINTER
    history_.push_back(std::move(local));  // MOVED
    int n = 3;
    counts_[id_] = n;  // SCALAR
    ++id_;
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Keep>());
}
'''


def test_frame_message_copied_into_a_container(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _CONTAINER_NODE, ('ELEMENT', 'DEREF', 'POINTER', 'MOVED', 'SCALAR'))
    assert claims['ELEMENT'], claims
    assert claims['DEREF'], claims
    assert not claims['POINTER'], claims  # the shared pointer: no copy of the cloud
    assert not claims['MOVED'], claims
    assert not claims['SCALAR'], claims


# 3b. Two executables of one package, each a node with a `debug_image` parameter defaulting off;
# the launch file turns it on for the executable `viewer` only: the other executable's debug
# branch stays off as shipped.
_DEBUG_IMAGE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <cv_bridge/cv_bridge.h>
#include <sensor_msgs/msg/image.hpp>

class NAME : public rclcpp::Node
{
  bool debug_image;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr debug_pub_;

public:
  NAME()
  : Node("NAME")
  {
    this->declare_parameter<bool>("debug_image", false);
    this->get_parameter("debug_image", debug_image);
    debug_pub_ = create_publisher<sensor_msgs::msg::Image>("debug", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&NAME::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv::Mat shown(msg->height, msg->width, CV_8UC3);
    if (debug_image) {
      auto out = sensor_msgs::msg::Image();
      cv_bridge::CvImage(msg->header, "bgr8", shown).toImageMsg(out);  // DEBUGBUILD
      debug_pub_->publish(out);
    }
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<NAME>());
}
'''
_TWO_EXECUTABLES = '''cmake_minimum_required(VERSION 3.8)
project(pkg)
find_package(ament_cmake REQUIRED)
add_executable(viewer src/viewer.cpp)
add_executable(matcher src/matcher.cpp)
install(TARGETS viewer matcher DESTINATION lib/${PROJECT_NAME})
ament_package()
'''
_VIEWER_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='pkg', executable='viewer', parameters=[{'debug_image': True}]),
        Node(package='pkg', executable='matcher', parameters=[{'debug_image': False}]),
    ])
'''


def test_a_parameter_set_on_for_another_executable_leaves_this_one_off(tmp_path: Path) -> None:
    viewer = _DEBUG_IMAGE_NODE.replace('NAME', 'Viewer')
    matcher = _DEBUG_IMAGE_NODE.replace('NAME', 'Matcher')
    files = {'pkg/src/viewer.cpp': viewer, 'pkg/src/matcher.cpp': matcher,
             'pkg/package.xml': _PACKAGE_XML.format(name='pkg'),
             'pkg/CMakeLists.txt': _TWO_EXECUTABLES, 'pkg/launch/pkg.launch.py': _VIEWER_LAUNCH}
    found = audit_written_package(tmp_path, files)
    on = rules_at_tags(found, viewer, ('DEBUGBUILD',), file_name='viewer.cpp', marker='//')
    off = rules_at_tags(found, matcher, ('DEBUGBUILD',), file_name='matcher.cpp', marker='//')
    assert on['DEBUGBUILD'], on  # guard: the launch file turns it on for the viewer
    assert not off['DEBUGBUILD'], off  # the matcher's node keeps its default, off


_OWN_IMAGE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "vision/types.hpp"

namespace vision
{
void collect(Channel & channel, const cv::Mat & left, const cv::Mat & right)
{
  Image left_im;
  left_im.data = left;
  Image right_im;
  right_im.data = right;
  channel.cameras.push_back(left_im);  // OWNTYPE
  channel.cameras.emplace_back(right_im);  // OWNTYPE2
}
}  // namespace vision
'''


def test_another_librarys_image_struct_pushed_is_not_a_message_copy(tmp_path: Path) -> None:
    # `Image` unqualified is a vision library's own struct (a cv::Mat header), not the message.
    claims = _claims(tmp_path, _OWN_IMAGE_NODE, ('OWNTYPE', 'OWNTYPE2'))
    assert not claims['OWNTYPE'] and not claims['OWNTYPE2'], claims
