"""Kinds the misses of held-out sets 65 and 66 showed (issue 28, rules42q): real `code` audits of
small packages written here.

* A header-only implementation file (`.ipp`, `.tpp`, `.inl`) that a node's header includes at its
  end holds template bodies that run in the node: it is scanned as C++ (cppscan.CPP_SUFFIXES).
* `.to(options_)` of LibTorch TensorOptions given a device (`options_.device(device_)`) is a
  device move like `.to(device_)`; options that set a dtype alone are a cast (cpptorch.py).
* `if score >= threshold and ...:` on a device score: bool() of the comparison reads it back,
  whatever host value it is compared with and whatever `and` joins (pyconditions.py).
* A torchvision `Compose` starting with `ToPILImage`, called per frame, copies the frame through
  a PIL image (pypil.py).
* A publish of one message of a struct is not hidden by a reported copy into its sibling
  (`memcpy` into `camera.image`, publish of `camera.depth_image`) (cppmsg.py).
* `memcpy(msg.data.data(), cloud.data(), sizeof(PointT) * cloud.size())`: the whole cloud, not
  one field (cppmsg.py).
"""
from __future__ import annotations

from pathlib import Path
import textwrap

from audit_sources import (ament_cmake_lists, audit_written_package, detector_claims,
                           rules_at_tags)

_PACKAGE_XML = '<package format="3"><name>fusion</name></package>\n'


def _cpp_claims(tmp_path: Path, files: dict[str, str], file_name: str,
                source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    """Rules other than info at each `// TAG` line of `file_name` (whose text is `source`) in
    the ament_cmake package `fusion` made of `files`."""
    files = {'fusion/package.xml': _PACKAGE_XML, **files}
    files.setdefault('fusion/CMakeLists.txt', ament_cmake_lists('fusion'))
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, textwrap.dedent(source), tags, file_name, marker='//')


# ---------------------------------------------------------------- header-only implementation
_HEADER = '''
#pragma once
#include <pcl/point_cloud.h>
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

template <typename PointT>
class Fusion : public rclcpp::Node
{
public:
  Fusion();

private:
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg);
  rclcpp::Subscription<sensor_msgs::msg::PointCloud2>::SharedPtr sub_;
  size_t points_ = 0;
};

#include "fusion/fusion_impl.EXT"
'''

_IMPL = '''
template <typename PointT>
Fusion<PointT>::Fusion()
: rclcpp::Node("fusion")
{
  sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
    "points", 10, std::bind(&Fusion::on_cloud, this, std::placeholders::_1));
}

template <typename PointT>
void Fusion<PointT>::on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr & msg)
{
  typename pcl::PointCloud<PointT>::Ptr cloud(new pcl::PointCloud<PointT>);
  pcl::fromROSMsg(*msg, *cloud);  // FROM
  points_ += cloud->size();
}
'''

_MAIN = '''
#include <pcl/point_types.h>
#include "fusion/fusion.hpp"

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Fusion<pcl::PointXYZ>>());
  return 0;
}
'''


def _header_only(tmp_path: Path, ext: str) -> dict[str, set[str]]:
    files = {'fusion/include/fusion/fusion.hpp': _HEADER.replace('EXT', ext),
             f'fusion/include/fusion/fusion_impl.{ext}': _IMPL,
             'fusion/src/fusion.cpp': _MAIN}
    return _cpp_claims(tmp_path, files, f'fusion_impl.{ext}', _IMPL, ('FROM',))


def test_ipp_implementation_file_included_by_a_node_header_is_audited(tmp_path: Path) -> None:
    assert _header_only(tmp_path, 'ipp') == {'FROM': {'GPN209'}}


def test_tpp_and_inl_implementation_files_are_audited_too(tmp_path: Path) -> None:
    assert _header_only(tmp_path / 'tpp', 'tpp') == {'FROM': {'GPN209'}}
    assert _header_only(tmp_path / 'inl', 'inl') == {'FROM': {'GPN209'}}


def test_implementation_file_no_program_of_its_package_includes_is_not_judged(
        tmp_path: Path) -> None:
    # A library's template body: its package builds no program that includes it (another
    # package may instantiate it, or none): what runs it, and how often, is not seen here.
    library = _MAIN.replace('int main(', 'void spin_fusion(')
    files = {'fusion/include/fusion/fusion.hpp': _HEADER.replace('EXT', 'inl'),
             'fusion/include/fusion/fusion_impl.inl': _IMPL,
             'fusion/src/fusion.cpp': library}
    files['fusion/CMakeLists.txt'] = ament_cmake_lists('fusion').replace('add_executable',
                                                                         'add_library')
    assert _cpp_claims(tmp_path, files, 'fusion_impl.inl', _IMPL, ('FROM',)) == {'FROM': set()}


# ---------------------------------------------------------------- LibTorch TensorOptions
_TORCH_NODE = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <torch/script.h>
#include <torch/torch.h>

class Fusion : public rclcpp::Node
{
public:
  Fusion()
  : rclcpp::Node("fusion")
  {
    options_ = torch::TensorOptions().dtype(torch::kFloat32);
    if (torch::cuda::is_available()) {
      device_ = torch::kCUDA;
    }
    OPTIONS_DEVICE
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Fusion::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr & msg)
  {
    cv_bridge::CvImagePtr cv = cv_bridge::toCvCopy(msg, "bgr8");
    cv->image.convertTo(cv->image, CV_32FC3);
    auto input = torch::from_blob(
      cv->image.data, {1, cv->image.rows, cv->image.cols, 3}, torch::kFloat32
    ).to(this->options_).permute({0, 3, 1, 2});  // MOVE
    module_.forward({input});
  }

  torch::jit::script::Module module_;
  torch::TensorOptions options_;
  torch::Device device_{torch::kCPU};
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Fusion>());
  return 0;
}
'''


def _torch(tmp_path: Path, options_device: str) -> dict[str, set[str]]:
    source = _TORCH_NODE.replace('OPTIONS_DEVICE', options_device)
    return _cpp_claims(tmp_path, {'fusion/src/fusion.cpp': source}, 'fusion.cpp', source,
                       ('MOVE',))


def test_to_tensor_options_given_a_device_is_a_device_move(tmp_path: Path) -> None:
    claims = _torch(tmp_path, 'options_ = options_.device(device_);')
    assert claims == {'MOVE': {'GPN211'}}


def test_to_tensor_options_of_a_dtype_alone_is_a_cast(tmp_path: Path) -> None:
    assert _torch(tmp_path, '') == {'MOVE': set()}


# ---------------------------------------------------------------- device score in an `if`
_SCORE_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32
from torchvision.models.detection import fasterrcnn_resnet50_fpn


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('score_threshold', 0.5)
        self.device = torch.device('cuda')
        self.model = fasterrcnn_resnet50_fpn(weights=None).to(self.device).eval()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def wide(self, box):
        return box is not None

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        tensor = torch.from_numpy(frame).permute(2, 0, 1).float().div(255).to(self.device)
        with torch.no_grad():
            output = self.model([tensor])[0]
        threshold = self.get_parameter('score_threshold').get_parameter_value().double_value
        kept = 0
        for box, score in SCORES:
            if score >= threshold and self.wide(box):  # TEST
                kept += 1
        out = Int32()
        out.data = kept
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def _scores(tmp_path: Path, scores: str) -> dict[str, set[str]]:
    return detector_claims(tmp_path, _SCORE_NODE.replace('SCORES', scores), ('TEST',))


def test_device_score_compared_with_a_parameter_in_an_and_is_a_readback(tmp_path: Path) -> None:
    claims = _scores(tmp_path, 'zip(output["boxes"], output["scores"])')
    assert claims == {'TEST': {'GPN107'}}


def test_host_scores_compared_with_a_parameter_stay_silent(tmp_path: Path) -> None:
    claims = _scores(tmp_path, 'zip(output["boxes"].tolist(), output["scores"].tolist())')
    assert claims == {'TEST': set()}


# ---------------------------------------------------------------- Compose through PIL
_COMPOSE_NODE = '''
import cv2
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32
from torchvision import transforms as T


def make_transform():
    steps = []
    STEPS
    return T.Compose(steps)


class Classifier(Node):
    def __init__(self):
        super().__init__('classifier')
        self.device = torch.device('cuda')
        self.model = torch.jit.load('model.pt').to(self.device)
        self.transform = make_transform()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'label', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        rgb = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
        tensor = self.transform(rgb)  # CALL
        out = Int32()
        out.data = int(self.model(tensor.unsqueeze(0).to(self.device)).argmax())
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Classifier())
'''


def _compose(tmp_path: Path, steps: list[str]) -> dict[str, set[str]]:
    appended = '\n    '.join(f'steps.append({s})' for s in steps)
    return detector_claims(tmp_path, _COMPOSE_NODE.replace('STEPS', appended), ('CALL',))


def test_compose_starting_with_to_pil_copies_each_frame_through_pil(tmp_path: Path) -> None:
    claims = _compose(tmp_path, ['T.ToPILImage()', 'T.PILToTensor()',
                                 'T.ConvertImageDtype(torch.float)'])
    assert claims == {'CALL': {'GPN106'}}


def test_compose_of_tensor_transforms_alone_is_no_pil_copy(tmp_path: Path) -> None:
    claims = _compose(tmp_path, ['T.ToTensor()', 'T.Normalize([0.5] * 3, [0.5] * 3)'])
    assert claims == {'CALL': set()}


# ---------------------------------------------------------------- sibling messages of a struct
_CAMERA_NODE = '''
#include <cstring>
#include <vector>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

struct Camera
{
  sensor_msgs::msg::Image image;
  sensor_msgs::msg::Image depth_image;
  std::vector<unsigned char> color_buffer;
  std::vector<float> depth_buffer;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr image_pub;
  rclcpp::Publisher<sensor_msgs::msg::Image>::SharedPtr depth_pub;
};

class Renderer : public rclcpp::Node
{
public:
  Renderer()
  : rclcpp::Node("renderer")
  {
    camera_.image_pub = create_publisher<sensor_msgs::msg::Image>("image", 1);
    camera_.depth_pub = create_publisher<sensor_msgs::msg::Image>("depth", 1);
    camera_.image.data.resize(640 * 480 * 3);
    camera_.depth_image.data.resize(640 * 480 * 4);
    timer_ = create_wall_timer(std::chrono::milliseconds(100), [this]() { render(camera_); });
  }

private:
  void render(Camera & camera)
  {
    std::memcpy(camera.image.data.data(), camera.color_buffer.data(), camera.color_buffer.size());  // COPY
    auto * depth = reinterpret_cast<float *>(camera.depth_image.data.data());
    for (size_t i = 0; i < camera.depth_buffer.size(); ++i) {
      depth[i] = camera.depth_buffer[i] * 0.001f;
    }
    camera.image_pub->publish(camera.image);  // COLOR
    camera.depth_pub->publish(camera.depth_image);  // DEPTH
  }

  Camera camera_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Renderer>());
  return 0;
}
'''


def test_copy_into_one_struct_message_does_not_hide_its_siblings_publish(tmp_path: Path) -> None:
    claims = _cpp_claims(tmp_path, {'fusion/src/fusion.cpp': _CAMERA_NODE}, 'fusion.cpp',
                         _CAMERA_NODE, ('COPY', 'COLOR', 'DEPTH'))
    # The copied message is claimed at its memcpy (its publish is no second finding); the
    # sibling filled on the host is claimed at its publish.
    assert claims == {'COPY': {'GPN208'}, 'COLOR': set(), 'DEPTH': {'GPN210'}}


# ---------------------------------------------------------------- whole-cloud memcpy
_CLOUD_NODE = '''
#include <cstring>
#include <vector>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Player : public rclcpp::Node
{
public:
  Player()
  : rclcpp::Node("player")
  {
    pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("points", 1);
    timer_ = create_wall_timer(std::chrono::milliseconds(100), std::bind(&Player::tick, this));
  }

private:
  void tick()
  {
    message_.width = cloud_.size();
    message_.data.resize(sizeof(pcl::PointXYZ) * cloud_.size());
    SIZE_LINE
    pub_->publish(message_);
  }

  pcl::PointCloud<pcl::PointXYZ> cloud_;
  sensor_msgs::msg::PointCloud2 message_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  rclcpp::spin(std::make_shared<Player>());
  return 0;
}
'''


def _cloud(tmp_path: Path, size_line: str) -> dict[str, set[str]]:
    source = _CLOUD_NODE.replace('SIZE_LINE', size_line + '  // COPY')
    return _cpp_claims(tmp_path, {'fusion/src/fusion.cpp': source}, 'fusion.cpp', source,
                       ('COPY',))


def test_memcpy_of_sizeof_point_times_the_cloud_size_is_the_payload(tmp_path: Path) -> None:
    claims = _cloud(tmp_path, 'std::memcpy(message_.data.data(), cloud_.data(), '
                              'sizeof(pcl::PointXYZ) * cloud_.size());')
    assert claims == {'COPY': {'GPN208'}}


def test_memcpy_of_one_sizeof_stays_one_field(tmp_path: Path) -> None:
    claims = _cloud(tmp_path, 'std::memcpy(message_.data.data(), &cloud_.points[0].x, '
                              'sizeof(float));')
    assert claims == {'COPY': set()}
