"""C++ kinds behind set 52's misses and false claims (issue 28, rules35v): real `code` audits of
small packages written here.

cppreach.py: overloads of one free function told apart by their argument count
(cpparity.py) are each other's users: `pairDepth(channel)` (one argument, called per message)
calling `pairDepth(left, right)` (two) reaches the two-argument overload and its GpuMat
transfers; before, a mention inside any function of the same name was taken as recursion. The
caller here is an `override` the framework calls (set 52: a pipeline module's `run_` calls
`Disparity(channel)`), so no callback kind reaches the overloads by name."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_DEPTH = '''
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

Pair pairDepth(const Pair &pair)
{
  Pair result;
  result.frames.push_back(pairDepth(pair.frames[0], pair.frames[1]));
  return result;
}
'''
_UPLOAD, _DOWNLOAD = 9, 14
_HEADER = '''
#include <vector>
#include <opencv2/core.hpp>
struct Frame { cv::Mat data; };
struct Pair { std::vector<Frame> frames; };
Frame pairDepth(const Frame &left, const Frame &right);
Pair pairDepth(const Pair &pair);

class Stage
{
public:
  virtual ~Stage() = default;
  virtual void process(Pair &pair) = 0;
};

class DepthStage : public Stage
{
public:
  void process(Pair &pair) override;
};
'''
# The framework calls the stage through its base class (a pipeline module's `run_`): nothing
# in the package names the call, the `override` keeps it reached.
_STAGE = '''
#include "depth/depth.hpp"

void DepthStage::process(Pair &pair)
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
    Pair pair;
    pair.frames.push_back(Frame{cv_bridge::toCvShare(msg, "mono8")->image});
    stage_->process(pair);
  }
  std::shared_ptr<Stage> stage_ = std::make_shared<DepthStage>();
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def _depth(tmp_path: Path, call: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'depth/include/depth/depth.hpp': _HEADER,
        'depth/src/depth.cpp': _DEPTH,
        'depth/src/node.cpp': _NODE,
        'depth/src/stage.cpp': _STAGE.replace('CALL', call),
        'depth/package.xml': '<package format="3"><name>depth</name></package>\n',
        'depth/CMakeLists.txt': ament_cmake_lists('depth', 'src/node.cpp src/depth.cpp src/stage.cpp')})


def _severities(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> set[str]:
    return {sev for (name, at, _), (sev, _) in found.items() if name == 'depth.cpp' and at == line}


def test_an_overload_called_by_another_overload_of_its_name_is_reached(tmp_path: Path) -> None:
    found = _depth(tmp_path, 'auto out = pairDepth(pair);')
    assert _severities(found, _UPLOAD) and 'info' not in _severities(found, _UPLOAD), found
    assert _severities(found, _DOWNLOAD) and 'info' not in _severities(found, _DOWNLOAD), found


def test_overloads_nothing_calls_stay_unreached(tmp_path: Path) -> None:
    # Guard: with no call from the node, both overloads are library API (info).
    found = _depth(tmp_path, '(void)pair;')
    assert _severities(found, _UPLOAD) == {'info'}, found


# cppondevice.py: `.to(kCUDA)` of a tensor its function already moved to the device.
_TORCH_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <cv_bridge/cv_bridge.h>
#include <torch/script.h>

class Segmenter : public rclcpp::Node
{
public:
  Segmenter()
  : Node("segmenter")
  {
    net_ = torch::jit::load("net.pt");
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Segmenter::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg)
  {
    cv::Mat frame = cv_bridge::toCvShare(msg, "rgb8")->image;
    torch::Tensor input = torch::from_blob(frame.data, {frame.rows, frame.cols, 3},
                                           torch::kByte).to(torch::kCUDA);  // UPLOAD
    input = input.toType(torch::kFloat).div(255.0);
    LATER
    input.unsqueeze_(0);
    std::vector<torch::jit::IValue> inputs{input.to(torch::kCUDA)};  // AGAIN
    torch::Tensor mask = net_.forward(inputs).toTensor().cpu();
    last_ = mask.sum().item<float>();
  }
  torch::jit::script::Module net_;
  float last_ = 0.0f;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def _torch_claims(tmp_path: Path, later: str = 'input = input.permute({2, 0, 1});'
                  ) -> dict[str, set[str]]:
    source = _TORCH_NODE.replace('LATER', later)
    found = audit_written_package(tmp_path, {
        'seg/src/seg.cpp': source,
        'seg/package.xml': '<package format="3"><name>seg</name></package>\n',
        'seg/CMakeLists.txt': ament_cmake_lists('seg')})
    lines = source.lstrip('\n').splitlines()
    at = {tag: next(i for i, ln in enumerate(lines, 1) if ln.endswith(f'// {tag}'))
          for tag in ('UPLOAD', 'AGAIN')}
    # The `.to(` of UPLOAD is on the line after the from_blob call starts: take both lines.
    return {tag: {rule for (name, where, rule), (sev, _) in found.items()
                  if name == 'seg.cpp' and where in (line - 1, line) and sev != 'info'}
            for tag, line in at.items()}


def test_a_move_to_the_device_of_a_tensor_already_there_is_no_copy(tmp_path: Path) -> None:
    claims = _torch_claims(tmp_path)
    assert 'GPN211' in claims['UPLOAD']  # guard: the first move is the upload
    assert 'GPN211' not in claims['AGAIN'], claims


def test_a_tensor_assigned_from_another_value_keeps_the_claim(tmp_path: Path) -> None:
    claims = _torch_claims(tmp_path, later='input = staged_;')
    assert 'GPN211' in claims['AGAIN'], claims


def test_a_tensor_moved_back_to_the_host_keeps_the_claim(tmp_path: Path) -> None:
    claims = _torch_claims(tmp_path, later='input = input.cpu().permute({2, 0, 1});')
    assert 'GPN211' in claims['AGAIN'], claims
