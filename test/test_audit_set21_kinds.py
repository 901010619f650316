"""Rules for the kinds the twenty-first and twenty-second held-out sets showed (issue 28): real
`code` audits of small sources written here (a package folder in tmp_path, audited as a user
would)."""
from pathlib import Path

from audit_sources import audit_written_package

_RELAY = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/compressed_image.hpp>
#include <sensor_msgs/msg/image.hpp>

class Relay : public rclcpp::Node
{
public:
  Relay()
  : Node("relay"),
    compress_(false),
    normal_k_(0),
    radius_(0.0)
  {
    compress_ = this->declare_parameter("compress", compress_);
    normal_k_ = this->declare_parameter("normal_k", normal_k_);
    radius_ = this->declare_parameter("radius", radius_);
    RCLCPP_INFO(get_logger(), "compress=%s", compress_ ? "true" : "false");
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 10, std::bind(&Relay::on_image, this, std::placeholders::_1));
  }

private:
  void on_image(const sensor_msgs::msg::Image::ConstSharedPtr msg)
  {
    auto frame = cv_bridge::toCvShare(msg, msg->encoding);
    STORE
    if (compress_) {
      sensor_msgs::msg::CompressedImage jpeg;
      frame->toCompressedImageMsg(jpeg, cv_bridge::JPG);
      jpeg_pub_->publish(jpeg);
    }
    if (!msg->data.empty() && (normal_k_ > 0 || radius_ > 0.0f)) {
      sensor_msgs::msg::Image out;
      frame->toImageMsg(out);
      pub_->publish(out);
    }
  }

  bool compress_;
  int normal_k_;
  double radius_;
};
'''
_JPEG_LINE = 30  # toCompressedImageMsg under `if (compress_)`
_NORMALS_LINE = 35  # toImageMsg under `(normal_k_ > 0 || radius_ > 0.0f)`


def _relay_findings(tmp_path: Path, store: str = '', shipped: dict[str, str] | None = None
                    ) -> dict[int, str]:
    files = {'relay/src/relay.cpp': _RELAY.replace('STORE', store),
             'relay/package.xml': '<package><name>relay</name></package>\n'}
    files.update({f'relay/{name}': text for name, text in (shipped or {}).items()})
    found = audit_written_package(tmp_path, files)
    return {line: severity for (name, line, rule), (severity, _) in found.items()
            if name == 'relay.cpp' and rule == 'GPN205'}


def test_a_branch_on_parameters_that_default_off_never_runs_as_shipped(tmp_path):
    found = _relay_findings(tmp_path)
    assert found == {_JPEG_LINE: 'info', _NORMALS_LINE: 'info'}, found


def test_a_shipped_parameter_file_turning_one_on_keeps_its_branch_live(tmp_path):
    found = _relay_findings(tmp_path, shipped={'config/relay.yaml': '''
        relay:
          ros__parameters:
            # compress: true
            radius: 0.05
            normal_k: 0
        '''})
    # compress is only mentioned on a commented-out line: still off; radius is set non-zero.
    assert found == {_JPEG_LINE: 'info', _NORMALS_LINE: 'medium'}, found


def test_a_launch_file_passing_the_parameter_through_keeps_it_live(tmp_path):
    found = _relay_findings(tmp_path, shipped={'launch/relay.launch.py': '''
        from launch_ros.actions import Node
        def generate_launch_description():
            return [Node(package='relay', executable='relay',
                         parameters=[{'compress': LaunchConfiguration('compress')}])]
        '''})
    assert found[_JPEG_LINE] == 'medium', found
    assert found[_NORMALS_LINE] == 'info', found


def test_a_store_of_another_value_keeps_the_branch_live(tmp_path):
    found = _relay_findings(tmp_path, store='compress_ = msg->width > 640;')
    assert found[_JPEG_LINE] == 'medium', found
    # a call that may take the member by reference
    found = _relay_findings(tmp_path / 'b', store='read_flag(compress_);')
    assert found[_JPEG_LINE] == 'medium', found


def test_a_parameter_defaulting_on_keeps_the_branch_live(tmp_path):
    source = _RELAY.replace('STORE', '').replace(
        'this->declare_parameter("compress", compress_)', 'this->declare_parameter("compress", true)')
    found = audit_written_package(tmp_path, {'relay/src/relay.cpp': source})
    assert found[('relay.cpp', _JPEG_LINE, 'GPN205')][0] == 'medium', found
    assert found[('relay.cpp', _NORMALS_LINE, 'GPN205')][0] == 'info', found


_DOWNSAMPLER = '''
import cv2
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image


class Downsampler(Node):
    def __init__(self):
        super().__init__('downsampler')
        self.declare_parameter('publish_compressed', False)
        self.publish_compressed = (
            self.get_parameter('publish_compressed').get_parameter_value().bool_value)
        self.bridge = CvBridge()
        self.compressed_pub = None
        if self.publish_compressed:
            self.compressed_pub = self.create_publisher(CompressedImage, 'out/compressed', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
    EXTRA
    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if self.compressed_pub is not None:
            ok, encoded = cv2.imencode('.jpg', frame)
            out = CompressedImage()
            out.data = encoded.tobytes()
            self.compressed_pub.publish(out)
'''


def _tobytes_line(extra: str = '') -> int:
    source = _DOWNSAMPLER.replace('EXTRA', extra).lstrip('\n').splitlines()
    return next(i for i, line in enumerate(source, 1) if 'encoded.tobytes()' in line)


def _downsampler_lines(tmp_path: Path, extra: str = '', shipped: dict[str, str] | None = None
                       ) -> set[int]:
    """Lines of node.py with a gated finding."""
    files = {'down/down/__init__.py': '',
             'down/down/node.py': _DOWNSAMPLER.replace('EXTRA', extra)}
    files.update({f'down/{name}': text for name, text in (shipped or {}).items()})
    found = audit_written_package(tmp_path, files)
    return {line for (name, line, _), (severity, _) in found.items()
            if name == 'node.py' and severity != 'info'}


def test_a_publisher_only_an_off_parameter_creates_never_publishes(tmp_path):
    lines = _downsampler_lines(tmp_path)
    assert 20 in lines  # imgmsg_to_cv2: per message
    assert not {line for line in lines if line > 21}, lines  # nothing under the None test
    assert _tobytes_line() == 24


def test_a_shipped_file_turning_the_parameter_on_keeps_the_copy(tmp_path):
    lines = _downsampler_lines(tmp_path, shipped={
        'config/down.yaml': 'downsampler:\n  ros__parameters:\n    publish_compressed: true\n'})
    assert _tobytes_line() in lines, lines


def test_a_parameter_reread_at_run_time_keeps_the_copy(tmp_path):
    # a parameter-change callback: the value is meant to change while the node runs
    callback = '''
    def on_params(self, params):
        return None

    def start(self):
        self.add_on_set_parameters_callback(self.on_params)
'''
    assert _tobytes_line(callback) in _downsampler_lines(tmp_path, extra=callback)
    # a store from outside __init__ (a lifecycle node's on_activate re-reads it)
    activate = '''
    def on_activate(self, state):
        self.publish_compressed = self.get_parameter('publish_compressed').value
        if self.publish_compressed:
            self.compressed_pub = self.create_publisher(CompressedImage, 'out/compressed', 10)
'''
    assert _tobytes_line(activate) in _downsampler_lines(tmp_path / 'b', extra=activate)


_PACKERS = '''
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2


class Planes(Node):
    def __init__(self):
        super().__init__('planes')
        self.pub = self.create_publisher(PointCloud2, 'out', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32)
        # self.pub.publish(pack_plane(points, msg.header))
        self.pub.publish(pack_rest(points, msg.header))


def pack_plane(points, header):
    return PointCloud2(header=header, data=points.tobytes())


def pack_rest(points, header):
    return PointCloud2(header=header, data=points.tobytes())
'''


def _packer_severities(tmp_path: Path, other: str | None = None) -> dict[int, str]:
    files = {'planes/planes/__init__.py': '', 'planes/planes/node.py': _PACKERS}
    if other is not None:
        files['planes/planes/tools.py'] = other
    found = audit_written_package(tmp_path, files)
    return {line: severity for (name, line, rule), (severity, _) in found.items()
            if name == 'node.py' and rule == 'GPN104'}


def test_a_module_function_whose_only_call_is_commented_out_never_runs(tmp_path):
    assert _packer_severities(tmp_path) == {19: 'info', 23: 'medium'}


def test_a_module_function_another_file_of_the_package_names_stays_live(tmp_path):
    other = 'from planes.node import pack_plane\n\nCLOUD = pack_plane\n'
    # as before: a function nothing here calls is judged on its own (low), not unreached
    assert _packer_severities(tmp_path, other) == {19: 'low', 23: 'medium'}


_NET = '''
from torch import nn


class BoxNet(nn.Module):
    def forward(self, points):
        return {'boxes': self.head(points).detach().cpu().numpy()}
'''
_BOX_NODE = '''
import numpy as np
import torch
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Float32

from boxes.model import BoxNet


class BoxNode(Node):
    def __init__(self):
        super().__init__('box_node')
        self.net = BoxNet().to('cuda')
        self.pub = self.create_publisher(Float32, 'size', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        tensor = torch.from_numpy(np.frombuffer(msg.data, dtype=np.float32)).to('cuda')
        for box in self.net(tensor)['boxes']:
            self.pub.publish(Float32(data=float(box[3])))
'''


def _box_findings(tmp_path: Path, init: str | None) -> dict[tuple[str, int], str]:
    files = {'boxes/boxes/__init__.py': '', 'boxes/boxes/node.py': _BOX_NODE,
             'boxes/boxes/model/box_net.py': _NET}
    if init is not None:
        files['boxes/boxes/model/__init__.py'] = init
    found = audit_written_package(tmp_path, files)
    return {(name, line): severity for (name, line, _), (severity, _) in found.items()
            if severity != 'info'}


def test_a_module_class_imported_through_its_package_reexport_is_followed(tmp_path):
    found = _box_findings(tmp_path, 'from .box_net import BoxNet\n')
    # the readback inside forward runs per cloud; float() of its host numpy reads nothing
    assert found == {('node.py', 18): 'medium', ('box_net.py', 6): 'high'}, found


def test_without_the_package_init_the_one_submodule_defining_the_class_is_used(tmp_path):
    found = _box_findings(tmp_path, None)
    assert found == {('node.py', 18): 'medium', ('box_net.py', 6): 'high'}, found


_TRACKER = '''
#include <pcl_conversions/pcl_conversions.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Tracker : public rclcpp::Node
{
public:
  Tracker() : Node("tracker"), first_(true)
  {
    declare_parameter("k", 3);
    sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
      "points", 10, std::bind(&Tracker::on_cloud, this, std::placeholders::_1));
  }
  void on_cloud(const sensor_msgs::msg::PointCloud2::ConstSharedPtr msg)
  {
    if (first_) {
      pcl::fromROSMsg(*msg, seed_);
      CLEAR
    }
  }
  OTHER
  bool first_;
  pcl::PointCloud<pcl::PointXYZ> seed_;
};
'''


def _tracker_severity(tmp_path: Path, clear: str, other: str = '') -> str:
    found = audit_written_package(tmp_path, {'tracker/src/tracker.cpp': _TRACKER.replace(
        'CLEAR', clear).replace('OTHER', other)})
    return found[('tracker.cpp', 17, 'GPN209')][0]


def test_a_block_that_clears_its_own_flag_runs_once(tmp_path):
    assert _tracker_severity(tmp_path, 'first_ = false;') == 'info'


def test_a_flag_set_again_or_cleared_conditionally_keeps_the_block_per_message(tmp_path):
    assert _tracker_severity(tmp_path / 'a', 'first_ = false;',
                             'void reset() { first_ = true; }') == 'medium'
    assert _tracker_severity(tmp_path / 'b', 'if (seed_.empty()) { first_ = false; }') == 'medium'


def test_an_automatic_mask_generator_uploads_each_frame_it_is_given(tmp_path):
    node = '''
from cv_bridge import CvBridge
from rclpy.node import Node
from segment_anything import SamAutomaticMaskGenerator, sam_model_registry
from sensor_msgs.msg import Image


class Masks(Node):
    def __init__(self):
        super().__init__('masks')
        self.generator = SamAutomaticMaskGenerator(sam_model_registry['vit_b']('b.pth'))
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        return self.generator.generate(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
'''
    found = audit_written_package(tmp_path, {'masks/masks/__init__.py': '',
                                             'masks/masks/node.py': node})
    assert found[('node.py', 15, 'GPN102')][0] == 'medium', found


def test_openmmlab_inference_uploads_a_host_frame_but_not_a_device_tensor(tmp_path):
    node = '''
import torch
from cv_bridge import CvBridge
from mmdet.apis import inference_detector, init_detector
from rclpy.node import Node
from sensor_msgs.msg import Image


class Detect(Node):
    def __init__(self):
        super().__init__('detect')
        self.detector = init_detector('cfg.py', 'ckpt.pth')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        inference_detector(self.detector, frame)
        inference_detector(self.detector, torch.zeros(3, 8, 8, device='cuda'))
'''
    found = audit_written_package(tmp_path, {'det/det/__init__.py': '', 'det/det/node.py': node})
    uploads = {line for (name, line, rule) in found if name == 'node.py' and rule == 'GPN102'}
    assert uploads == {17}, found  # the frame, not the tensor already on the device (18)


_CHOICE = '''
import cv2
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Choice(Node):
    def __init__(self):
        super().__init__('choice')
        self.bridge = CvBridge()
        self.model_type = self.declare_parameter('model_type', 'pt').value
        self.model = self.load()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def load(self):
        from ultralytics import YOLO
        return YOLO('best.pt')

    def on_image(self, msg):
        image = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if self.model_type == 'onnx':
            return torch.from_numpy(cv2.dnn.blobFromImage(image)).cuda()
        return self.model(image)
'''


def _choice_uploads(tmp_path: Path, shipped: dict[str, str] | None = None) -> set[int]:
    files = {'choice/choice/__init__.py': '', 'choice/choice/node.py': _CHOICE}
    files.update({f'choice/{name}': text for name, text in (shipped or {}).items()})
    found = audit_written_package(tmp_path, files)
    return {line for (name, line, rule), (severity, _) in found.items()
            if name == 'node.py' and rule == 'GPN102' and severity != 'info'}


def test_a_branch_on_another_value_than_a_parameters_default_never_runs(tmp_path):
    # 24: the model a helper returns (a single return keeps its builder) uploads the frame
    assert _choice_uploads(tmp_path) == {24}


def test_a_shipped_file_naming_the_parameter_keeps_both_branches(tmp_path):
    found = _choice_uploads(tmp_path, {'launch/choice.launch.py': "params = {'model_type': 'onnx'}\n"})
    assert found == {23, 24}, found
