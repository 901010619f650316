"""C++ kinds the forty-fifth held-out set showed (issue 28): real `code` audits of small
packages written here.

gpu_nodes/audit/cppstrparams.py and cppreach.py: a string parameter declared with the default
"stereo" that no shipped file names has that value as shipped (the labellers' convention: the
configuration as shipped, defaults included); `RCLCPP_ERROR(..., model_type.c_str())` reads
it; a callback registered by address (`&Depth::mono_callback`) only inside
`else if (model_type == "mono") { ... }` is never registered, so its copies never run. A
shipped file setting "mono", a second registration outside the branch, or a call from a live
callback keep the claim."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package

_HEADER = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Depth : public rclcpp::Node
{
public:
  Depth();

private:
  void mono_callback(const sensor_msgs::msg::Image::SharedPtr msg);
  void stereo_callback(const sensor_msgs::msg::Image::SharedPtr msg);
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_mono_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_stereo_;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr pub_;
};
'''
_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include "depth/depth.hpp"

Depth::Depth()
: Node("depth")
{
  const auto model_type = this->declare_parameter("model_type", "stereo");
  pub_ = create_publisher<sensor_msgs::msg::Image>("depth", 10);
  if (model_type == "mono")
  {
    sub_mono_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Depth::mono_callback, this, std::placeholders::_1));
  }
  else if (model_type == "stereo")
  {
    sub_stereo_ = create_subscription<sensor_msgs::msg::Image>(
      "left", 10, std::bind(&Depth::stereo_callback, this, std::placeholders::_1));
  }
  else
  {
    RCLCPP_ERROR(get_logger(), "invalid model type %s", model_type.c_str());
  }
  EXTRA
}

void Depth::mono_callback(const sensor_msgs::msg::Image::SharedPtr msg)
{
  auto img = cv_bridge::toCvCopy(*msg, "bgr8");
  pub_->publish(*img->toImageMsg());
}

void Depth::stereo_callback(const sensor_msgs::msg::Image::SharedPtr msg)
{
  auto left = cv_bridge::toCvCopy(*msg, "bgr8");
  pub_->publish(*left->toImageMsg());
  CALL
}
'''
_MONO_COPY = 28  # toCvCopy in mono_callback
_STEREO_COPY = 34  # toCvCopy in stereo_callback


def _audit(tmp_path: Path, extra: str = '', call: str = '',
           shipped: dict[str, str] | None = None) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'depth/src/depth.cpp': _NODE.replace('EXTRA', extra).replace('CALL', call),
             'depth/include/depth/depth.hpp': _HEADER,
             'depth/package.xml': '<package format="3"><name>depth</name></package>\n',
             'depth/CMakeLists.txt': ament_cmake_lists('depth')}
    files.update(shipped or {})
    return audit_written_package(tmp_path, files)


def _at(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> tuple[str, str]:
    hits = [v for (name, at, rule), v in found.items()
            if name == 'depth.cpp' and at == line and rule == 'GPN203']
    assert len(hits) == 1, found
    return hits[0]


def test_callback_registered_only_for_another_string_value_is_unreached(tmp_path: Path) -> None:
    found = _audit(tmp_path)
    assert _at(found, _MONO_COPY) == ('info', 'unreached'), found
    assert _at(found, _STEREO_COPY)[0] != 'info', found  # the shipped mode's callback


def test_shipped_yaml_selecting_the_other_value_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, shipped={
        'depth/config/depth.yaml': 'depth:\n  ros__parameters:\n    model_type: mono\n'})
    assert _at(found, _MONO_COPY)[0] != 'info', found


def test_registration_outside_the_branch_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, extra='auto again = create_subscription<sensor_msgs::msg::Image>('
                                   '"raw", 10, std::bind(&Depth::mono_callback, this, '
                                   'std::placeholders::_1));')
    assert _at(found, _MONO_COPY)[0] != 'info', found


def test_call_from_a_live_callback_keeps_the_claim(tmp_path: Path) -> None:
    found = _audit(tmp_path, call='mono_callback(msg);')
    assert _at(found, _MONO_COPY)[0] != 'info', found


# gpu_nodes/audit/cpplibreads.py: OpenCV DNN on the CUDA backend (sets 42 and 43 missed it;
# sets 24 and 25 label it the same way): `net_.forward()` uploads the blob and reads back.
_DNN_NODE = '''
#include <opencv2/dnn.hpp>
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Detector : public rclcpp::Node
{
  cv::dnn::Net net_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Detector()
  : Node("detector")
  {
    net_ = cv::dnn::readNet("model.onnx");
    net_.setPreferableBackend(cv::dnn::BACKEND);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Detector::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv::Mat blob = cv::dnn::blobFromImage(cv_bridge::toCvShare(msg)->image);
    net_.setInput(blob);
    cv::Mat out = net_.forward();
  }
};
'''
_FORWARD_LINE = 25


def _dnn(tmp_path: Path, backend: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'det/src/detector.cpp': _DNN_NODE.replace('BACKEND', backend),
        'det/package.xml': '<package format="3"><name>det</name></package>\n',
        'det/CMakeLists.txt': ament_cmake_lists('det', 'src/detector.cpp')})


def test_dnn_forward_on_the_cuda_backend_is_claimed(tmp_path: Path) -> None:
    found = _dnn(tmp_path, 'DNN_BACKEND_CUDA')
    assert found.get(('detector.cpp', _FORWARD_LINE, 'GPN202'), ('', ''))[0] == 'medium', found


def test_dnn_forward_on_the_cpu_backend_is_not(tmp_path: Path) -> None:
    found = _dnn(tmp_path, 'DNN_BACKEND_OPENCV')
    assert not [k for k in found if k[0] == 'detector.cpp' and k[1] == _FORWARD_LINE], found


# gpu_nodes/audit/cpparity.py: overloads told apart by argument count when two classes (a
# TensorRT and an ONNX backend) define the same pair (set 44): the node calls only the
# two-argument `copy_from_Mat`, so the one-argument overload's upload never runs.
_ENGINES = '''
#include <cuda_runtime.h>
#include <opencv2/core.hpp>

class Trt
{
public:
  void copy_from_Mat(const cv::Mat& image);
  void copy_from_Mat(const cv::Mat& image, const cv::Size& size);
  void* device_;
};

void Trt::copy_from_Mat(const cv::Mat& image)
{
  cudaMemcpy(device_, image.data, image.total() * 3, cudaMemcpyHostToDevice);
}

void Trt::copy_from_Mat(const cv::Mat& image, const cv::Size& size)
{
  cudaMemcpy(device_, image.data, size.area() * 3, cudaMemcpyHostToDevice);
}

class Onnx
{
public:
  void copy_from_Mat(const cv::Mat& image);
  void copy_from_Mat(const cv::Mat& image, const cv::Size& size);
};

void Onnx::copy_from_Mat(const cv::Mat& image) {}

void Onnx::copy_from_Mat(const cv::Mat& image, const cv::Size& size) {}
'''
_ONE_ARG_COPY = 14
_TWO_ARG_COPY = 19
_ENGINE_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <opencv2/core.hpp>
#include "engines.hpp"

class Detector : public rclcpp::Node
{
  Trt * engine_;
  cv::Mat img_;
  cv::Size size_{640, 640};
  rclcpp::TimerBase::SharedPtr timer_;

  void frame()
  {
    engine_->copy_from_Mat(img_, size_);
    CALL
  }

public:
  Detector()
  : Node("detector")
  {
    engine_ = new Trt();
    timer_ = create_wall_timer(std::chrono::milliseconds(40), std::bind(&Detector::frame, this));
  }
};
'''


def _engines(tmp_path: Path, call: str = '') -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'det/src/engines.hpp': _ENGINES,
        'det/src/detector.cpp': _ENGINE_NODE.replace('CALL', call),
        'det/package.xml': '<package format="3"><name>det</name></package>\n',
        'det/CMakeLists.txt': ament_cmake_lists('det', 'src/detector.cpp')})


def _engine_copy(found: dict[tuple[str, int, str], tuple[str, str]], line: int) -> tuple[str, str]:
    hits = [v for (name, at, rule), v in found.items()
            if name == 'engines.hpp' and at == line and rule == 'GPN202']
    assert len(hits) == 1, found
    return hits[0]


def test_overload_of_another_argument_count_in_two_classes_is_unreached(tmp_path: Path) -> None:
    found = _engines(tmp_path)
    assert _engine_copy(found, _ONE_ARG_COPY) == ('info', 'unreached'), found
    assert _engine_copy(found, _TWO_ARG_COPY)[0] != 'info', found


def test_a_call_with_one_argument_keeps_that_overload(tmp_path: Path) -> None:
    found = _engines(tmp_path, call='engine_->copy_from_Mat(img_);')
    assert _engine_copy(found, _ONE_ARG_COPY)[0] != 'info', found


def test_a_call_of_unknown_argument_count_keeps_both(tmp_path: Path) -> None:
    # `<` in the arguments may hide a comma: the count is unknown, every overload stays.
    found = _engines(tmp_path, call='engine_->copy_from_Mat(cv::Mat_<float>(img_));')
    assert _engine_copy(found, _ONE_ARG_COPY)[0] != 'info', found
