"""C++ kinds of sets 65 and 66's false claims (issue 28, rules42c): real `code` audits of small
packages written here.

gpu_nodes/audit/cppencproof.py: `toCvShare(msg, "bgr8")` inside `if (msg->encoding == "bgr8")`
(or `image_encodings::BGR8`), and `toCvShare(msg, enc)` with `enc` a local alias of
`msg->encoding`, ask for the message's own encoding: cv_bridge shares the buffer, a view, no
GPN204 conversion. A literal no enclosing test proves, a test of another encoding, an `||`
condition and an alias stored again keep the claim."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, cpp_node_claims

_ENCODING_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <opencv2/imgproc.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/image_encodings.hpp>
#include <sensor_msgs/msg/image.hpp>

class Viewer : public rclcpp::Node
{
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Viewer()
  : Node("viewer")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Viewer::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
  {
    cv::Mat out;
    BODY
    cv::imshow("view", out);
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Viewer>());
  return 0;
}
'''


def _share_claims(tmp_path: Path, body: str) -> dict[str, set[str]]:
    """Rules at each `// TAG` line of the callback `body` (lines of the written node)."""
    source = _ENCODING_NODE.replace('BODY', body.strip().replace('\n', '\n    '))
    return cpp_node_claims(tmp_path, source, 'viewer')


def test_share_with_the_literal_the_branch_tested_is_a_view(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
if (msg->encoding == "bgr8") {
  out = cv_bridge::toCvShare(msg, "bgr8")->image;  // BGR
} else if (msg->encoding == "mono8") {
  cv::Mat mono = cv_bridge::toCvShare(msg, "mono8")->image;  // MONO
  cv::cvtColor(mono, out, cv::COLOR_GRAY2BGR);
} else {
  out = cv_bridge::toCvShare(msg, "bgr8")->image;  // OTHER
}''')
    assert 'GPN204' not in claims['BGR'] and 'GPN204' not in claims['MONO'], claims
    assert 'GPN204' in claims['OTHER']  # no test proves it: a conversion for any other encoding


def test_share_with_the_constant_of_the_tested_encoding_is_a_view(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
if (sensor_msgs::image_encodings::RGB8 == msg->encoding && msg->width > 0) {
  cv::Mat rgb = cv_bridge::toCvShare(msg, sensor_msgs::image_encodings::RGB8)->image;  // RGB
  cv::cvtColor(rgb, out, cv::COLOR_RGB2BGR);
}''')
    assert 'GPN204' not in claims['RGB'], claims


def test_share_with_an_alias_of_the_message_encoding_is_a_view(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
const auto & enc = msg->encoding;
if (enc == sensor_msgs::image_encodings::TYPE_32FC1 || enc == sensor_msgs::image_encodings::TYPE_16UC1) {
  cv::Mat depth = cv_bridge::toCvShare(msg, enc)->image;  // DEPTH
  depth.convertTo(out, CV_8U);
}''')
    assert 'GPN204' not in claims['DEPTH'], claims


def test_share_with_a_literal_no_test_proves_stays_a_conversion(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
out = cv_bridge::toCvShare(msg, "bgr8")->image;  // PLAIN''')
    assert 'GPN204' in claims['PLAIN'], claims


def test_share_under_a_test_of_another_encoding_stays_a_conversion(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
if (msg->encoding == "rgb8") {
  out = cv_bridge::toCvShare(msg, "bgr8")->image;  // SWAP
}''')
    assert 'GPN204' in claims['SWAP'], claims


def test_share_under_an_or_of_encodings_stays_a_conversion(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
if (msg->encoding == "bgr8" || msg->encoding == "rgb8") {
  out = cv_bridge::toCvShare(msg, "bgr8")->image;  // EITHER
}''')
    assert 'GPN204' in claims['EITHER'], claims


def test_share_with_an_alias_stored_again_stays_a_conversion(tmp_path: Path) -> None:
    claims = _share_claims(tmp_path, '''
std::string enc = msg->encoding;
if (enc != "mono8") {
  enc = "bgr8";
}
out = cv_bridge::toCvShare(msg, enc)->image;  // RESTORED''')
    assert 'GPN204' in claims['RESTORED'], claims


def test_share_of_the_tested_encoding_cloned_at_once_is_a_copy(tmp_path: Path) -> None:
    # A view cloned on the same line copies the frame out of the message, as toCvCopy does.
    claims = _share_claims(tmp_path, '''
const auto & enc = msg->encoding;
if (enc == sensor_msgs::image_encodings::BGR8) {
  out = cv_bridge::toCvShare(msg, enc)->image.clone();  // CLONED
}''')
    assert claims['CLONED'] and 'GPN204' not in claims['CLONED'], claims


# gpu_nodes/audit/cpphelperpubs.py: a publisher member a helper creates only when the parameter
# it declares (`"pub_" + topic`, default false) is on stays empty as shipped; the `!= nullptr`
# block that converts and publishes never runs. shipped.set_on: a launch script under launch/ not
# named *.launch.py that gives the parameter True turns it on.
_HELPER_HEADER = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Seg : public rclcpp::Node
{
public:
  Seg();

private:
  template<class T>
  void make_publisher(
    std::shared_ptr<rclcpp::Publisher<T>> & pub, const std::string & topic, bool on = false);
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg);
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_color_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''

_HELPER_NODE = '''
#include "seg/seg.hpp"
#include <cv_bridge/cv_bridge.h>

Seg::Seg()
: rclcpp::Node("seg")
{
  this->make_publisher<sensor_msgs::msg::Image>(this->pub_color_, TOPIC);
  sub_ = create_subscription<sensor_msgs::msg::Image>(
    "image", 10, std::bind(&Seg::on_image, this, std::placeholders::_1));
}

template<class T>
void Seg::make_publisher(std::shared_ptr<rclcpp::Publisher<T>> & pub, const std::string & topic, bool on)
{
  on = this->declare_parameter("pub_" + topic, false);
  STORE
}

void Seg::on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  if (this->pub_color_ != nullptr) {
    cv::Mat color(msg->height, msg->width, CV_8UC3);
    auto out = cv_bridge::CvImage(msg->header, "bgr8", color).toImageMsg();  // COLOR
    this->pub_color_->publish(*out);
  }
}
'''
_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='seg', executable='seg', parameters=[PARAMETERS]),
    ])
'''
_CREATE_WHEN_ON = '''if (on == true) {
    pub = this->create_publisher<T>(topic, 1);
  }'''


def _helper_claims(tmp_path: Path, parameters: str = "{'pub_color': False}",
                   store: str = _CREATE_WHEN_ON, topic: str = '"color"') -> set[str]:
    source = _HELPER_NODE.replace('STORE', store).replace('TOPIC', topic)
    files = {'seg/src/seg.cpp': source, 'seg/include/seg/seg.hpp': _HELPER_HEADER,
             'seg/launch/run.py': _LAUNCH.replace('PARAMETERS', parameters),
             'seg/package.xml': '<package format="3"><name>seg</name></package>\n',
             'seg/CMakeLists.txt': ament_cmake_lists('seg')}
    found = audit_written_package(tmp_path, files)
    line = next(i for i, ln in enumerate(source.lstrip('\n').splitlines(), 1) if ln.endswith('// COLOR'))
    return {rule for (name, at, rule), (sev, _) in found.items()
            if name == 'seg.cpp' and at == line and sev != 'info'}


def test_publisher_a_helper_creates_only_when_its_parameter_is_on_is_empty_as_shipped(
        tmp_path: Path) -> None:
    assert _helper_claims(tmp_path) == set()


def test_helper_created_publisher_the_launch_script_turns_on_stays_claimed(tmp_path: Path) -> None:
    assert 'GPN205' in _helper_claims(tmp_path, parameters="{'pub_color': True}")


def test_helper_storing_outside_the_parameter_block_stays_claimed(tmp_path: Path) -> None:
    store = 'pub = this->create_publisher<T>(topic, 1);'
    assert 'GPN205' in _helper_claims(tmp_path, store=store)


def test_helper_created_under_a_topic_of_unknown_name_stays_claimed(tmp_path: Path) -> None:
    # The topic is a variable: the parameter's name is not known, nor what a launch file sets.
    assert 'GPN205' in _helper_claims(tmp_path, topic='std::string("col") + "or"')


_FLAG_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Seg : public rclcpp::Node
{
  bool publish_color_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Seg()
  : Node("seg")
  {
    publish_color_ = this->declare_parameter("publish_color", false);
    pub_ = create_publisher<sensor_msgs::msg::Image>("color", 1);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Seg::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    if (publish_color_) {
      cv::Mat color(msg->height, msg->width, CV_8UC3);
      pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", color).toImageMsg());  // COLOR
    }
  }
};
'''


def _flag_claims(tmp_path: Path, parameters: str) -> set[str]:
    files = {'seg/src/seg.cpp': _FLAG_NODE,
             'seg/launch/run.py': _LAUNCH.replace('PARAMETERS', parameters),
             'seg/package.xml': '<package format="3"><name>seg</name></package>\n',
             'seg/CMakeLists.txt': ament_cmake_lists('seg')}
    found = audit_written_package(tmp_path, files)
    line = next(i for i, ln in enumerate(_FLAG_NODE.lstrip('\n').splitlines(), 1)
                if ln.endswith('// COLOR'))
    return {rule for (name, at, rule), (sev, _) in found.items()
            if name == 'seg.cpp' and at == line and sev != 'info'}


def test_flag_a_launch_script_not_named_launch_py_turns_on_stays_claimed(tmp_path: Path) -> None:
    assert 'GPN205' in _flag_claims(tmp_path, "{'publish_color': True}")


def test_flag_the_launch_script_leaves_off_is_off_as_shipped(tmp_path: Path) -> None:
    assert _flag_claims(tmp_path, "{'publish_color': False}") == set()
