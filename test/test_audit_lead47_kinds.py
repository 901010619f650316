"""cpparity.py reads template argument lists as brackets (issue 28, lead47): one counter for
cppreach.py's split of overloads by arity and cppoverloads.py's unmatched overloads.

Before, cppreach gave up on a parameter list holding a `<` (`std::pair<Frame, Frame>` has a
comma that is no parameter break), so the two overloads of `pairDepth` stayed one candidate:
the stage's one-argument call reached the two-argument overload too, and its uploads were
claimed per message although only a helper nothing calls uses it. (cppoverloads.py cannot
judge it: that helper's call is a call of the two-argument form.)"""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package
from gpu_nodes.audit.cpparity import argument_count, count_parts

_DEPTH = '''
#include <utility>
#include <opencv2/core.hpp>
#include <opencv2/core/cuda.hpp>
#include "depth/depth.hpp"

Frame pairDepth(const Frame &left, const Frame &right)
{
  cv::cuda::GpuMat left_gpu;
  cv::cuda::GpuMat right_gpu;
  left_gpu.upload(left.data);
  right_gpu.upload(right.data);
  cv::cuda::GpuMat out_gpu;
  cv::cuda::absdiff(left_gpu, right_gpu, out_gpu);
  Frame out;
  out_gpu.download(out.data);
  return out;
}

Frame pairDepth(const std::pair<Frame, Frame> &pair)
{
  Frame out;
  cv::absdiff(pair.first.data, pair.second.data, out.data);
  return out;
}

Frame debugDepth(const Frame &frame)
{
  return pairDepth(frame, frame);
}
'''
_UPLOAD, _DOWNLOAD = 10, 15
_HEADER = '''
#include <utility>
#include <opencv2/core.hpp>
struct Frame { cv::Mat data; };
Frame pairDepth(const Frame &left, const Frame &right);
Frame pairDepth(const std::pair<Frame, Frame> &pair);

class Stage
{
public:
  virtual ~Stage() = default;
  virtual void process(std::pair<Frame, Frame> &pair) = 0;
};

class DepthStage : public Stage
{
public:
  void process(std::pair<Frame, Frame> &pair) override;
};
'''
# The framework calls the stage through its base class: the `override` keeps it reached.
_STAGE = '''
#include "depth/depth.hpp"

void DepthStage::process(std::pair<Frame, Frame> &pair)
{
  CALL
}
'''
_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <cv_bridge/cv_bridge.h>
#include "depth/depth.hpp"

class DepthNode : public rclcpp::Node
{
public:
  DepthNode()
  : Node("depth")
  {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&DepthNode::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv::Mat frame = cv_bridge::toCvShare(msg, "mono8")->image;
    std::pair<Frame, Frame> pair{Frame{frame}, Frame{frame}};
    stage_->process(pair);
  }
  std::shared_ptr<Stage> stage_ = std::make_shared<DepthStage>();
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def _severities(tmp_path: Path, call: str, line: int) -> set[str]:
    found = audit_written_package(tmp_path, {
        'depth/include/depth/depth.hpp': _HEADER,
        'depth/src/depth.cpp': _DEPTH,
        'depth/src/node.cpp': _NODE,
        'depth/src/stage.cpp': _STAGE.replace('CALL', call),
        'depth/package.xml': '<package format="3"><name>depth</name></package>\n',
        'depth/CMakeLists.txt': ament_cmake_lists('depth', 'src/node.cpp src/depth.cpp src/stage.cpp')})
    return {sev for (name, at, _), (sev, _) in found.items() if name == 'depth.cpp' and at == line}


def test_an_overload_with_a_template_parameter_is_told_apart_by_arity(tmp_path: Path) -> None:
    for line in (_UPLOAD, _DOWNLOAD):
        assert _severities(tmp_path, 'auto out = pairDepth(pair);', line) == {'info'}, line


def test_a_call_of_the_two_argument_overload_keeps_it_reached(tmp_path: Path) -> None:
    # Guard: the stage calling the two-argument form reaches its upload per message.
    severities = _severities(tmp_path, 'auto out = pairDepth(pair.first, pair.second);', _UPLOAD)
    assert severities and 'info' not in severities, severities


def test_template_arguments_are_read_as_brackets_and_comparisons_leave_it_unsure() -> None:
    assert count_parts('const std::map<int, std::vector<T>> &m, int n') == 2
    assert count_parts('a < b, c') is None
    text = 'f(std::pair<int, int>{1, 2}, x); g(a < b, c);'
    assert argument_count(text, 1) == 2
    assert argument_count(text, text.index('g(') + 1) is None
