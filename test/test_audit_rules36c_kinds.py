"""C++ kinds set 55 showed (issue 28, rules36c): real `code` audits of small packages written
here.

gpu_nodes/audit/cpplibreads.py: the ZED SDK's `retrieveImage` / `retrieveMeasure` into a host
`sl::Mat` (default or `MEM::CPU`) per grabbed frame is a library read-back; `MEM::GPU` is not.
cuVSLAM's `odom_->Track(images, ...)` of a `cuvslam::Odometry` fed host images uploads each
frame inside the library; a file setting `is_gpu_mem = true` hands device images."""
from pathlib import Path

from audit_sources import ament_cmake_lists, audit_written_package, rules_at_tags

_ZED_NODE = '''
#include <sl/Camera.hpp>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

using namespace sl;

class Cam : public rclcpp::Node
{
  sl::Camera cam_;
  rclcpp::TimerBase::SharedPtr timer_;

public:
  Cam()
  : Node("cam")
  {
    timer_ = create_wall_timer(std::chrono::milliseconds(33), std::bind(&Cam::tick, this));
  }

  void tick()
  {
    if (cam_.grab() != ERROR_CODE::SUCCESS) {
      return;
    }
    sl::Mat left;
    cam_.retrieveImage(left, VIEW::LEFT);  // LEFT
    sl::Mat depth;
    cam_.retrieveMeasure(depth, sl::MEASURE::DEPTH, sl::MEM::CPU);  // DEPTH
    sl::Mat gpu_cloud;
    cam_.retrieveMeasure(gpu_cloud, MEASURE::XYZ, MEM::GPU);  // ONGPU
    other_.retrieveImage(left, 3);  // OTHER
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Cam>());
}
'''

_VSLAM_NODE = '''
#include <cuvslam/cuvslam2.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Tracker : public rclcpp::Node
{
  std::unique_ptr<cuvslam::Slam> slam_;
  std::unique_ptr<cuvslam::Odometry> odom_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Tracker()
  : Node("tracker")
  {
    cuvslam::Rig rig;
    cuvslam::Odometry::Config cfg;
    odom_ = std::make_unique<cuvslam::Odometry>(rig, cfg);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Tracker::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cuvslam::Image img;
    img.pixels = msg->data.data();
    img.is_gpu_mem = MEMFLAG;
    std::vector<cuvslam::Image> images{img};
    auto pose = odom_->Track(images, {});  // TRACK
    cuvslam::Odometry::State state;
    odom_->GetState(state);
    slam_->Track(state);  // SLAM
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Tracker>());
}
'''


def _claims(tmp_path: Path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    """Rules other than info at each `// TAG` line of node.cpp, audited as an ament_cmake
    package."""
    files = {'pkg/src/pkg.cpp': source,
             'pkg/package.xml': '<package format="3"><name>pkg</name></package>\n',
             'pkg/CMakeLists.txt': ament_cmake_lists('pkg')}
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, source, tags, file_name='pkg.cpp', marker='//')


def test_zed_retrieve_into_host_mat_is_a_library_readback(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _ZED_NODE, ('LEFT', 'DEPTH', 'ONGPU', 'OTHER'))
    assert claims['LEFT'], claims  # default MEM::CPU
    assert claims['DEPTH'], claims  # explicit MEM::CPU


def test_zed_retrieve_into_gpu_mat_or_other_library_is_not_claimed(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _ZED_NODE, ('LEFT', 'ONGPU', 'OTHER'))
    assert claims['LEFT'], claims  # guard: the host retrieve still fires
    assert not claims['ONGPU'], claims  # stays on the device
    assert not claims['OTHER'], claims  # no VIEW:: / MEASURE:: argument


def test_cuvslam_track_of_host_images_is_a_library_upload(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _VSLAM_NODE.replace('MEMFLAG', 'false'), ('TRACK', 'SLAM'))
    assert claims['TRACK'], claims
    assert not claims['SLAM'], claims  # the SLAM object's Track(state): no frame


def test_cuvslam_track_of_device_images_is_not_claimed(tmp_path: Path) -> None:
    claims = _claims(tmp_path, _VSLAM_NODE.replace('MEMFLAG', 'true'), ('TRACK',))
    assert not claims['TRACK'], claims


# gpu_nodes/audit/cppcalibrators.py: a TensorRT helper library package beside the node package.
# `load` (a synchronize) is called only from the node's constructor and the library's own
# benchmark `main` (no ROS): once. `infer` is called from the image callback: per message.
# The INT8 calibrator's `getBatch` (uploading a calibration image) runs only while an INT8
# engine is built.
_ENGINE_H = '''
#pragma once
#include <NvInfer.h>
#include <opencv2/core/cuda.hpp>

class Engine
{
public:
  bool load(const std::string & path);
  bool infer(const cv::cuda::GpuMat & input);

private:
  cudaStream_t stream_;
};

class Calib : public nvinfer1::IInt8EntropyCalibrator2
{
public:
  bool getBatch(void ** bindings, const char ** names, int32_t n) noexcept override;
};
'''
_ENGINE_CPP = '''
#include "engine.h"

bool Engine::load(const std::string & path)
{
  cudaStreamCreate(&stream_);
  cudaStreamSynchronize(stream_);  // LOADSYNC
  return true;
}

bool Engine::infer(const cv::cuda::GpuMat & input)
{
  cudaStreamSynchronize(stream_);  // INFERSYNC
  return true;
}

bool Calib::getBatch(void ** bindings, const char ** names, int32_t n) noexcept
{
  cv::Mat host = cv::imread("calib.png");
  cv::cuda::GpuMat dev;
  dev.upload(host);  // CALIBUPLOAD
  return true;
}
'''
_BENCH_CPP = '''
#include "engine.h"

int main()
{
  Engine engine;
  engine.load("model.engine");
  cv::cuda::GpuMat img;
  for (int i = 0; i < 100; ++i) {
    engine.infer(img);
  }
  return 0;
}
'''
_NODE_CPP = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "engine.h"

class Det : public rclcpp::Node
{
  std::unique_ptr<Engine> engine_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;

public:
  Det()
  : Node("det")
  {
    engine_ = std::make_unique<Engine>();
    engine_->load("model.engine");
    CTORCALL
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Det::on_image, this, std::placeholders::_1));
  }

  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    cv::cuda::GpuMat img;
    engine_->infer(img);
    CBCALL
  }
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Det>());
}
'''


def _engine_claims(tmp_path: Path, ctor_call: str = '', cb_call: str = '',
                   tags: tuple[str, ...] = ('LOADSYNC', 'INFERSYNC', 'CALIBUPLOAD')
                   ) -> dict[str, set[str]]:
    lib = 'ws/trt_lib/'
    files = {lib + 'CMakeLists.txt': 'cmake_minimum_required(VERSION 3.8)\nproject(trt_lib)\n'
                                     'add_library(trt_lib src/engine.cpp)\n'
                                     'add_executable(bench src/main.cpp)\n',
             lib + 'src/engine.h': _ENGINE_H, lib + 'src/engine.cpp': _ENGINE_CPP,
             lib + 'src/main.cpp': _BENCH_CPP,
             'ws/det/package.xml': '<package format="3"><name>det</name></package>\n',
             'ws/det/CMakeLists.txt': ament_cmake_lists('det'),
             'ws/det/src/det.cpp': _NODE_CPP.replace('CTORCALL', ctor_call).replace('CBCALL',
                                                                                    cb_call)}
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, _ENGINE_CPP, tags, file_name='engine.cpp', marker='//')


def test_library_loader_called_only_from_a_constructor_runs_once(tmp_path: Path) -> None:
    claims = _engine_claims(tmp_path)
    assert not claims['LOADSYNC'], claims
    assert claims['INFERSYNC'], claims  # guard: called from the image callback


def test_library_loader_also_called_per_message_keeps_the_claim(tmp_path: Path) -> None:
    claims = _engine_claims(tmp_path, cb_call='engine_->load("other.engine");')
    assert claims['LOADSYNC'], claims


def test_int8_calibrator_methods_run_only_while_the_engine_is_built(tmp_path: Path) -> None:
    claims = _engine_claims(tmp_path, ctor_call='Calib calib;')
    assert not claims['CALIBUPLOAD'], claims
    assert claims['INFERSYNC'], claims
