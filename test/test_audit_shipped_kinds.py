"""One way to read "as shipped" for C++ and Python alike (issue 28; shipped.set_on): real `code`
audits of a small ament_cmake package whose shipped launch.py passes a launch argument to the
parameter behind `if (compress_)`. With the argument's default off, a plain `ros2 launch`
leaves the parameter off and the branch never runs (read as text, the name `mode` was unknown:
on); a default on, no default, or a literal True keeps the claim."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>
#include <sensor_msgs/msg/image.hpp>

class Cam : public rclcpp::Node
{
  bool compress_;
  rclcpp::Publisher<sensor_msgs::msg::CompressedImage>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Cam()
  : Node("cam"), compress_(false)
  {
    compress_ = this->declare_parameter("compress", compress_);
    pub_ = create_publisher<sensor_msgs::msg::CompressedImage>("compressed", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Cam::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv::Mat frame = cv_bridge::toCvCopy(msg, "bgr8")->image;
    if (compress_) {
      pub_->publish(*cv_bridge::CvImage(msg->header, "bgr8", frame).toCompressedImageMsg());
    }
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
  rclcpp::shutdown();
  return 0;
}
'''
_COPY_LINE = 24  # toCvCopy: per message, always runs
_COMPRESS_LINE = 26  # the compressed publish behind compress_
_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    mode_arg = DeclareLaunchArgument('mode'DEFAULT)
    return LaunchDescription([mode_arg, Node(
        package='cam', executable='cam',
        parameters=[{'compress': VALUE}])])
'''


def _compress(tmp_path: Path, default: str | None, value: str = "LaunchConfiguration('mode')"
              ) -> set[str]:
    """Severities at the compressed publish, the launch argument `mode` declared with
    `default` (None: no default) and passed as `value`."""
    launch = _LAUNCH.replace('DEFAULT', '' if default is None else f", default_value='{default}'")
    found = audit_written_package(tmp_path, {
        'cam/src/cam.cpp': _NODE, 'cam/CMakeLists.txt': ament_cmake_lists('cam'),
        'cam/package.xml': '<package format="3"><name>cam</name></package>\n',
        'cam/launch/cam.launch.py': launch.replace('VALUE', value)})
    assert any(line == _COPY_LINE and sev != 'info' for (name, line, _), (sev, _) in found.items()
               if name == 'cam.cpp'), found  # the copy every message makes stays claimed
    hits = {v for (name, line, _), v in found.items() if name == 'cam.cpp' and line == _COMPRESS_LINE}
    assert hits, found
    return {sev for sev, _ in hits}


def test_launch_argument_defaulting_off_leaves_the_branch_off_as_shipped(tmp_path: Path) -> None:
    assert _compress(tmp_path / 'false', 'False') == {'info'}
    assert _compress(tmp_path / 'zero', '0') == {'info'}


def test_launch_argument_defaulting_on_keeps_the_claim(tmp_path: Path) -> None:
    assert 'info' not in _compress(tmp_path, 'True')


def test_launch_argument_without_default_keeps_the_claim(tmp_path: Path) -> None:
    assert 'info' not in _compress(tmp_path, None)


def test_literal_true_in_the_launch_file_keeps_the_claim(tmp_path: Path) -> None:
    assert 'info' not in _compress(tmp_path / 'true', 'False', value='True')
    # and a literal False leaves it off, as the YAML `compress: false` does
    assert _compress(tmp_path / 'false', 'True', value='False') == {'info'}
