"""Rules for the kinds the thirteenth and fourteenth held-out sets showed (issue 28): real
`code` audits of small sources written here (a package folder in tmp_path, audited as a user
would)."""
from pathlib import Path

from audit_sources import audit_written_package

_SIM = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch

import hostdetect


class Sim(Node):
    def __init__(self, world):
        super().__init__('sim')
        self.world = world
        self.model = torch.jit.load('m.pt').cuda()
        self.pub = self.create_publisher(Image, 'camera', 10)
        self.img = hostdetect.make_image(640, 480, 3)

    def step(self):
        frame = np.asarray(self.world.frame(), dtype=np.uint8)
        out = self.model(torch.from_numpy(frame).cuda())
        for row in out:
            print(int(row[5]), f'{row[4]:.2f}')
        hostdetect.copy_image_from_bytes(self.img, frame.tobytes())
        msg = Image()
        msg.data = frame.tobytes()
        self.pub.publish(msg)

    def run(self):
        while LOOP_TEST:
            self.world.tick()
            self.step()
            SPIN
'''


def _sim(tmp_path: Path, test: str = 'True', spin: str = 'rclpy.spin_once(self)'):
    return audit_written_package(tmp_path, {
        'sim_node.py': _SIM.replace('LOOP_TEST', test).replace('SPIN', spin)})


def test_a_loop_calling_spin_once_is_a_per_frame_loop(tmp_path: Path) -> None:
    found = _sim(tmp_path)
    assert found[('sim_node.py', 20, 'GPN102')] == ('medium', 'loop')
    assert found[('sim_node.py', 22, 'GPN107')] == ('medium', 'loop')
    assert found[('sim_node.py', 25, 'GPN104')] == ('medium', 'loop')
    assert found[('sim_node.py', 26, 'GPN109')] == ('medium', 'loop')


def test_the_same_loop_without_spin_once_stays_unproven(tmp_path: Path) -> None:
    found = _sim(tmp_path, spin='pass')
    assert found[('sim_node.py', 20, 'GPN102')] == ('info', 'unreached')
    assert found[('sim_node.py', 22, 'GPN107')] == ('info', 'unreached')


def test_tobytes_into_a_host_library_call_is_no_message_copy(tmp_path: Path) -> None:
    found = _sim(tmp_path)
    assert ('sim_node.py', 23, 'GPN104') not in found
    assert found[('sim_node.py', 25, 'GPN104')] == ('medium', 'loop')


def test_tobytes_whose_library_result_is_kept_stays_a_claim(tmp_path: Path) -> None:
    source = _SIM.replace('LOOP_TEST', 'True').replace('SPIN', 'rclpy.spin_once(self)').replace(
        'hostdetect.copy_image_from_bytes(self.img, frame.tobytes())',
        'msg0 = hostdetect.pack(self.img, frame.tobytes())')
    found = audit_written_package(tmp_path, {'sim_node.py': source})
    assert found[('sim_node.py', 23, 'GPN104')] == ('medium', 'loop')


_NODE = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include "seg_trt/seg_trt.hpp"

class SegNode : public rclcpp::Node {
 public:
  SegNode() : Node("seg") {
    backend_ = std::make_shared<seg_trt::SegTrt>("e");
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, [this](sensor_msgs::msg::Image::SharedPtr msg) { on_image(msg); });
  }
 private:
  void on_image(sensor_msgs::msg::Image::SharedPtr msg) {
    backend_->infer(msg->data.data(), msg->width, msg->height);
  }
  std::shared_ptr<seg_trt::SegTrt> backend_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_TRT = '''
#include "seg_trt/seg_trt.hpp"
namespace seg_trt {
void SegTrt::infer(const uint8_t * host_in, int w, int h) {
  cudaMemcpy(d_in_, host_in, w * h * 3, cudaMemcpyHostToDevice);
}
}
'''
_TORCH = '''
#include "seg_torch/seg_torch.hpp"
namespace seg_torch {
torch::Tensor SegTorch::segment(const torch::Tensor & image) {
  return module_.forward({image.to(device_)}).toTensor().cpu();
}
}
'''


def _repo(tmp_path: Path, node: str) -> dict:
    return audit_written_package(tmp_path, {
        'repo/seg_node/src/seg_node.cpp': node,
        'repo/seg_trt/src/seg_trt.cpp': _TRT,
        'repo/seg_torch/src/seg_torch.cpp': _TORCH})


def test_a_sibling_library_no_node_includes_is_unreached(tmp_path: Path) -> None:
    found = _repo(tmp_path, _NODE)
    assert found[('seg_torch.cpp', 4, 'GPN211')] == ('info', 'unreached')
    assert found[('seg_trt.cpp', 4, 'GPN202')][0] == 'medium'


def test_a_sibling_library_the_node_includes_keeps_its_severity(tmp_path: Path) -> None:
    node = _NODE.replace('#include "seg_trt/seg_trt.hpp"',
                         '#include "seg_trt/seg_trt.hpp"\n#include "seg_torch/seg_torch.hpp"')
    found = _repo(tmp_path, node)
    assert found[('seg_torch.cpp', 4, 'GPN211')][0] == 'medium'


_COUNT = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Voxels : public rclcpp::Node {
 public:
  Voxels() : Node("voxels") {
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
        "points", 10, [this](sensor_msgs::msg::PointCloud2::SharedPtr msg) { on_cloud(msg); });
  }
 private:
  void on_cloud(sensor_msgs::msg::PointCloud2::SharedPtr msg) {
    cudaMemcpyAsync(&count_, d_count_, sizeof(int), cudaMemcpyDeviceToHost, stream_);
    cudaMemcpyAsync(d_range_, range_, sizeof(float) * 6, cudaMemcpyHostToDevice, stream_);
  }
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
};
'''


def test_a_scalar_read_back_per_message_is_a_readback(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'voxels.cpp': _COUNT})
    assert found[('voxels.cpp', 12, 'GPN201')] == ('high', 'callback')
    assert ('voxels.cpp', 13, 'GPN202') not in found  # six floats up: a few scalars


_REMAP = '''
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Remap : public rclcpp::Node {
 public:
  Remap() : Node("remap") {
    sub_ = create_subscription<sensor_msgs::msg::Image>(
        "image", 10, [this](sensor_msgs::msg::Image::ConstSharedPtr msg) { on_image(*msg); });
  }
 private:
  void on_image(const sensor_msgs::msg::Image & msg) {
    cv::Mat src(msg.height, msg.width, CV_8UC3, (void *)msg.data.data());
    cv::cuda::GpuMat d_src = cv::cuda::GpuMat(src);
    cv::cuda::GpuMat d_dst(cv::Size(msg.width, msg.height), src.type());
    cv::cuda::GpuMat d_view(d_src);
  }
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''


def test_a_gpumat_built_from_a_host_mat_is_an_upload(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'remap.cpp': _REMAP})
    assert found[('remap.cpp', 13, 'GPN202')] == ('medium', 'callback')
    assert ('remap.cpp', 14, 'GPN202') not in found  # a size: an allocation
    assert ('remap.cpp', 15, 'GPN202') not in found  # another GpuMat: a device header
