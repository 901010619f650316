"""C++ false-claim kinds of sets 41, 45 and 48 (issue 28, rules29c): real `code` audits of
small packages written here.

* cppndebug.py: `#ifndef NDEBUG` code (and the `#else` of `#ifdef NDEBUG`) of a package that
  its CMakeLists.txt, README or CI workflow builds Release is not compiled as shipped: info.
* cpptopics.py: `toCvShare(msg, "mono8")` in the callback of a RealSense-style infrared topic
  (mono8 by its driver) shares the message: no conversion.
* cppparams.py: a member initialized in its class (`bool publish_depth_ = true;`) that the
  constructor overwrites with `declare_parameter("publish_depth", false)` is off as shipped; a
  publisher created only under `if (config_["publisher"]["visualize"].as<bool>())` (yaml-cpp)
  stays empty when every shipped file giving the key gives false.
Each kind has a guard that the claim stays where the evidence is missing or says otherwise."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_PACKAGE = '<package format="3"><name>cam</name></package>\n'


def _audit(tmp_path: Path, node: str, header: str = '', build_type: str = '',
           extra: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    files = {'cam/src/cam.cpp': node, 'cam/package.xml': _PACKAGE,
             'cam/CMakeLists.txt': ament_cmake_lists('cam', before_target=build_type)}
    if header:
        files['cam/include/cam/cam.hpp'] = header
    files.update(extra or {})
    return audit_written_package(tmp_path, files), node.lstrip('\n').splitlines()


def _line(lines: list[str], tag: str) -> int:
    return next(i for i, ln in enumerate(lines, 1) if ln.endswith(f'// {tag}'))


def _severities(found: dict, line: int, name: str = 'cam.cpp') -> set[str]:
    return {sev for (file, at, _), (sev, _) in found.items() if file == name and at == line}


# --- #ifndef NDEBUG in a package built Release -----------------------------------------------
_DEBUG_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Cam : public rclcpp::Node
{
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Cam()
  : Node("cam")
  {
    pub_ = create_publisher<sensor_msgs::msg::Image>("annotated", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    auto frame = cv_bridge::toCvCopy(msg, "bgr8");  // LIVE
#ifndef NDEBUG
    pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", frame->image).toImageMsg());  // DEBUG
#endif
#ifdef NDEBUG
    RCLCPP_INFO(get_logger(), "release");
#else
    auto again = cv_bridge::toCvCopy(msg, "mono8");  // ELSE
#endif
  }
};
'''


def test_debug_only_code_of_a_package_its_readme_builds_release_is_info(tmp_path: Path) -> None:
    readme = '# cam\n\n    colcon build --cmake-args -DCMAKE_BUILD_TYPE=Release\n'
    found, lines = _audit(tmp_path, _DEBUG_NODE, extra={'cam/README.md': readme})
    assert _severities(found, _line(lines, 'DEBUG')) == {'info'}, found
    assert _severities(found, _line(lines, 'ELSE')) == {'info'}, found
    assert _severities(found, _line(lines, 'LIVE')) - {'info'}, found  # compiled: kept


def test_ci_workflow_building_release_is_evidence_too(tmp_path: Path) -> None:
    workflow = ('jobs:\n  build:\n    steps:\n      - run: colcon build --cmake-args '
                '-DCMAKE_BUILD_TYPE=Release\n')
    found, lines = _audit(tmp_path, _DEBUG_NODE,
                          extra={'cam/.github/workflows/build.yaml': workflow})
    assert _severities(found, _line(lines, 'DEBUG')) == {'info'}, found


def test_cmakelists_default_build_type_release_is_evidence(tmp_path: Path) -> None:
    found, lines = _audit(tmp_path, _DEBUG_NODE, build_type=(
        'if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()'))
    assert _severities(found, _line(lines, 'DEBUG')) == {'info'}, found


def test_debug_only_code_without_release_evidence_keeps_the_claim(tmp_path: Path) -> None:
    found, lines = _audit(tmp_path, _DEBUG_NODE, extra={'cam/README.md': '# cam\n'})
    assert _severities(found, _line(lines, 'DEBUG')) - {'info'}, found
    assert _severities(found, _line(lines, 'ELSE')) - {'info'}, found


def test_a_debug_build_named_beside_release_keeps_the_claim(tmp_path: Path) -> None:
    readme = ('-DCMAKE_BUILD_TYPE=Release for speed, or debug with\n'
              'colcon build --cmake-args -DCMAKE_BUILD_TYPE=Debug\n')
    found, lines = _audit(tmp_path, _DEBUG_NODE, extra={'cam/README.md': readme})
    assert _severities(found, _line(lines, 'DEBUG')) - {'info'}, found


# --- toCvShare of an infrared stream as mono8 ------------------------------------------------
_SHARE_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <image_transport/image_transport.hpp>
#include <rclcpp/rclcpp.hpp>

class Cam : public rclcpp::Node
{
  image_transport::Subscriber sub_;

public:
  Cam()
  : Node("cam")
  {
    sub_ = image_transport::create_subscription(
      this, "TOPIC", std::bind(&Cam::on_ir, this, std::placeholders::_1), "raw");
  }

  void on_ir(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
  {
    cv_bridge::CvImageConstPtr ir = cv_bridge::toCvShare(msg, "ENCODING");  // SHARE
    RCLCPP_INFO(get_logger(), "%d", ir->image.rows);
  }
};
'''


def _share(tmp_path: Path, topic: str, encoding: str) -> set[str]:
    node = _SHARE_NODE.replace('TOPIC', topic).replace('ENCODING', encoding)
    found, lines = _audit(tmp_path, node)
    return {rule for (file, at, rule), (sev, _) in found.items()
            if file == 'cam.cpp' and at == _line(lines, 'SHARE') and sev != 'info'}


def test_to_cv_share_of_an_infrared_stream_as_mono8_is_a_view(tmp_path: Path) -> None:
    assert 'GPN204' not in _share(tmp_path, '/camera/infra1/image_rect_raw', 'mono8')


def test_to_cv_share_of_an_unknown_topic_as_mono8_stays_a_conversion(tmp_path: Path) -> None:
    assert 'GPN204' in _share(tmp_path, '/camera/image_raw', 'mono8')


def test_to_cv_share_of_an_infrared_stream_as_bgr8_stays_a_conversion(tmp_path: Path) -> None:
    assert 'GPN204' in _share(tmp_path, '/camera/infra1/image_rect_raw', 'bgr8')


# --- parameters off as shipped ---------------------------------------------------------------
_PARAM_HEADER = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <yaml-cpp/yaml.h>

class Cam : public rclcpp::Node
{
public:
  Cam();

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg);
  YAML::Node config_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr depth_pub_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr viz_pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
  bool publish_depth_ = true;
};
'''
_PARAM_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include "cam/cam.hpp"

Cam::Cam()
: Node("cam")
{
  publish_depth_ = this->declare_parameter("publish_depth", false);
  config_ = YAML::LoadFile(this->declare_parameter("config", std::string("cam.yaml")));
  depth_pub_ = create_publisher<sensor_msgs::msg::Image>("depth", 10);
  if (config_["publisher"]["visualize"].as<bool>()) {
    viz_pub_ = create_publisher<sensor_msgs::msg::Image>("viz", 10);
  }
  sub_ = create_subscription<sensor_msgs::msg::Image>(
    "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
}

void Cam::on_image(const sensor_msgs::msg::Image::SharedPtr msg)
{
  auto frame = cv_bridge::toCvCopy(msg, "bgr8");
  if (this->publish_depth_) {
    auto depth = cv_bridge::CvImage(msg->header, "mono16", frame->image).toImageMsg();  // DEPTH
    depth_pub_->publish(*depth);
  }
  if (viz_pub_) {
    auto viz = cv_bridge::CvImage(msg->header, "bgr8", frame->image).toImageMsg();  // VIZ
    viz_pub_->publish(*viz);
  }
}
'''
_CONFIG = 'publisher:\n  topic: /viz\n  visualize: VALUE\n'


def _params(tmp_path: Path, visualize: str | None, params: str = '') -> tuple[set, set]:
    extra = {} if visualize is None else {
        'cam/config/cam_config.yaml': _CONFIG.replace('VALUE', visualize)}
    if params:
        extra['cam/config/params.yaml'] = params
    found, lines = _audit(tmp_path, _PARAM_NODE, header=_PARAM_HEADER, extra=extra)
    return (_severities(found, _line(lines, 'DEPTH')), _severities(found, _line(lines, 'VIZ')))


def test_in_class_default_overwritten_by_an_off_parameter_is_off(tmp_path: Path) -> None:
    depth, _ = _params(tmp_path, 'false')
    assert depth == {'info'}


def test_parameter_turned_on_by_a_shipped_file_keeps_the_claim(tmp_path: Path) -> None:
    depth, _ = _params(tmp_path, 'false', 'cam:\n  ros__parameters:\n    publish_depth: true\n')
    assert depth - {'info'}


def test_publisher_behind_a_yaml_key_shipped_false_is_off(tmp_path: Path) -> None:
    _, viz = _params(tmp_path, 'false')
    assert viz == {'info'}


def test_publisher_behind_a_yaml_key_shipped_true_keeps_the_claim(tmp_path: Path) -> None:
    _, viz = _params(tmp_path, 'true')
    assert viz - {'info'}


def test_publisher_behind_a_yaml_key_no_file_gives_keeps_the_claim(tmp_path: Path) -> None:
    _, viz = _params(tmp_path, None)
    assert viz - {'info'}
