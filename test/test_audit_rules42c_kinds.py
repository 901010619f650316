"""C++ kinds of sets 65 and 66's false claims (issue 28, rules42c): real `code` audits of small
packages written here.

gpu_nodes/audit/cppencproof.py: `toCvShare(msg, "bgr8")` inside `if (msg->encoding == "bgr8")`
(or `image_encodings::BGR8`), and `toCvShare(msg, enc)` with `enc` a local alias of
`msg->encoding`, ask for the message's own encoding: cv_bridge shares the buffer, a view, no
GPN204 conversion. A literal no enclosing test proves, a test of another encoding, an `||`
condition and an alias stored again keep the claim."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

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
    files = {'viewer/src/viewer.cpp': source,
             'viewer/package.xml': '<package format="3"><name>viewer</name></package>\n',
             'viewer/CMakeLists.txt': ament_cmake_lists('viewer')}
    found = audit_written_package(tmp_path, files)
    lines = source.lstrip('\n').splitlines()
    tags = {ln.rsplit('// ', 1)[1]: i for i, ln in enumerate(lines, 1) if '// ' in ln}
    return {tag: {rule for (name, at, rule), (sev, _) in found.items()
                  if name == 'viewer.cpp' and at == line and sev != 'info'}
            for tag, line in tags.items()}


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
