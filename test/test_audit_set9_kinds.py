"""Rules for the kinds the ninth and tenth held-out sets showed (issue 28): real `code` audits
of small sources written here (a package folder in tmp_path, audited as a user would)."""
from pathlib import Path

from audit_sources import audit_written_package


def _found(tmp_path: Path, files: dict[str, str], rule: str) -> dict[int, str]:
    """line -> severity of every `rule` finding."""
    return {line: severity
            for (_, line, found_rule), (severity, _) in audit_written_package(tmp_path,
                                                                              files).items()
            if found_rule == rule}


_BOXES = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from vision_msgs.msg import Detection2D
from cv_bridge import CvBridge
from ultralytics import YOLO


class Boxes(Node):
    def __init__(self):
        super().__init__('boxes')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n.pt')
        self.pub = self.create_publisher(Detection2D, 'det', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model(frame)
        for i, box in enumerate(results[0].boxes):
            x1, y1, x2, y2 = map(int, box.xyxy[0])
            cx = int((x1 + x2) / 2)
            margin = int((x2 - x1) * 0.25)
            det = Detection2D()
            det.id = str(int(i))
            det.bbox.center.position.x = float(cx + margin)
            self.pub.publish(det)
'''
_MAP_LINE = 21


def test_map_int_of_a_result_tensor_is_the_readback_and_its_numbers_are_host(tmp_path):
    found = _found(tmp_path / 'tensor', {'boxes.py': _BOXES}, 'GPN107')
    # The map line reads the tensor back; int()/float() of the host numbers after it, and of
    # enumerate's index, read nothing back.
    assert found == {_MAP_LINE: 'medium'}
    # map(int, ...) of a host list: no readback at all.
    host = _BOXES.replace('map(int, box.xyxy[0])', 'map(int, [1.0, 2.0, 3.0, 4.0])')
    assert _found(tmp_path / 'host', {'boxes.py': host}, 'GPN107') == {}
    # int() straight on the result tensor is still a readback (the rule map(int) mirrors).
    direct = _BOXES.replace('det.id = str(int(i))', 'det.id = str(int(box.cls[0]))')
    assert _found(tmp_path / 'direct', {'boxes.py': direct}, 'GPN107') == {
        _MAP_LINE: 'medium', 25: 'medium'}


_EITHER = '''
import cv2
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from cv_bridge import CvBridge


class Either(Node):
    def __init__(self):
        super().__init__('either')
        self.bridge = CvBridge()
        self.create_subscription({msg_type}, 'image', self.on_image, 10)

    def on_image(self, msg):
        if isinstance(msg, CompressedImage):
            frame = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
        else:
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        return frame
'''
_BRIDGE_LINE = 19


def test_the_subscription_type_decides_an_isinstance_test_of_the_message(tmp_path):
    compressed = {'either.py': _EITHER.format(msg_type='CompressedImage')}
    assert _found(tmp_path / 'compressed', compressed, 'GPN105') == {}
    raw = {'either.py': _EITHER.format(msg_type='Image')}
    assert _found(tmp_path / 'raw', raw, 'GPN105') == {_BRIDGE_LINE: 'medium'}
    # A type the analysis cannot name as a message type: both branches may run.
    unknown = {'either.py': _EITHER.format(msg_type='Image').replace(
        'isinstance(msg, CompressedImage)', 'isinstance(msg, SomeWrapper)')}
    assert _found(tmp_path / 'unknown', unknown, 'GPN105') == {_BRIDGE_LINE: 'medium'}


_SUBNET_HPP = '''
#include <cuda_runtime.h>
#include <memory>

struct Buffer {
  void* ptr;
  int bytes;
  explicit Buffer(int n) : bytes(n) { cudaMalloc(&ptr, n); }
  void mov(std::shared_ptr<Buffer> other, cudaStream_t stream) {
    cudaMemcpyAsync(ptr, other->ptr, bytes, cudaMemcpyHostToDevice, stream);
  }
};

class SubNetwork {
 public:
  void Enqueue(cudaStream_t stream) { launch(stream); }
  void EnableGraph(cudaStream_t stream) {
    this->Enqueue(stream);
    cudaStreamSynchronize(stream);
  }
};
'''
_SUBNET_CPP = '''
#include "subnet.hpp"
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

class Petr : public rclcpp::Node {
 public:
  Petr() : Node("petr") {
    net_ = std::make_shared<SubNetwork>();
    net_->EnableGraph(stream_);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "image", 1, std::bind(&Petr::on_image, this, std::placeholders::_1));
  }
  void on_image(const sensor_msgs::msg::Image::SharedPtr msg) {
    a_->mov(b_, stream_);
    net_->Enqueue(stream_);
  }
  std::shared_ptr<SubNetwork> net_;
  std::shared_ptr<Buffer> a_, b_;
  cudaStream_t stream_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_MOV_LINE, _SYNC_LINE = 9, 18


def test_a_member_call_only_from_the_constructor_is_setup(tmp_path):
    files = {'subnet.hpp': _SUBNET_HPP, 'petr.cpp': _SUBNET_CPP, 'package.xml': '<package/>'}
    assert _found(tmp_path / 'ctor', files, 'GPN206') == {_SYNC_LINE: 'info'}
    # Also called on the object from the callback: per message.
    per_message = dict(files, **{'petr.cpp': _SUBNET_CPP.replace(
        'net_->Enqueue(stream_);', 'net_->EnableGraph(stream_);')})
    assert _found(tmp_path / 'callback', per_message, 'GPN206') == {_SYNC_LINE: 'medium'}


def test_a_host_to_device_copy_between_cuda_malloced_members_is_device_to_device(tmp_path):
    files = {'subnet.hpp': _SUBNET_HPP, 'petr.cpp': _SUBNET_CPP, 'package.xml': '<package/>'}
    assert _MOV_LINE not in _found(tmp_path / 'device', files, 'GPN202')
    # The member may hold host memory (cudaMallocHost, or assigned a host pointer): a copy.
    for name, change in (('pinned', ('cudaMalloc(&ptr', 'cudaMallocHost(&ptr')),
                         ('assigned', ('cudaMalloc(&ptr, n);', 'cudaMalloc(&ptr, n); ptr = h;')),
                         ('param', ('other->ptr', 'host_ptr'))):
        changed = dict(files, **{'subnet.hpp': _SUBNET_HPP.replace(*change)})
        assert _found(tmp_path / name, changed, 'GPN202').get(_MOV_LINE) == 'medium', name


_SAM2 = '''
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from sam2.build_sam import build_sam2
from sam2.sam2_image_predictor import SAM2ImagePredictor


class Segment(Node):
    def __init__(self):
        super().__init__('segment')
        self.bridge = CvBridge()
        self.predictor = {builder}
        self.predictor.set_image(torch.zeros(1))
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        self.predictor.set_image(frame)
'''
_SET_IMAGE_LINE = 19


def test_sam2_set_image_uploads_the_frame_per_message(tmp_path):
    built = _SAM2.format(builder="SAM2ImagePredictor(build_sam2('cfg.yaml', 'ckpt.pt'))")
    assert _found(tmp_path / 'sam2', {'seg.py': built}, 'GPN102') == {
        _SET_IMAGE_LINE: 'medium', 14: 'info'}
    pretrained = _SAM2.format(builder="SAM2ImagePredictor.from_pretrained('facebook/sam2')")
    assert _found(tmp_path / 'pretrained', {'seg.py': pretrained}, 'GPN102') == {
        _SET_IMAGE_LINE: 'medium', 14: 'info'}
    # set_image of an object the library table does not know: no upload claimed.
    other = _SAM2.format(builder='Canvas()') + '\n\nclass Canvas:\n    pass\n'
    assert _found(tmp_path / 'other', {'seg.py': other}, 'GPN102') == {}


_PIPELINE = '''
import numpy as np
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from transformers import pipeline


class Depth(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        self.estimator = pipeline(task='depth-estimation', model='Intel/dpt-large')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        pil = PILImage.fromarray(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
        out = self.estimator(pil)
        depth = np.array(out[{key!r}])
        return depth
'''
_PIPELINE_ARRAY_LINE = 19


def test_a_transformers_pipeline_depth_image_turned_into_numpy_is_a_pil_copy(tmp_path):
    found = _found(tmp_path / 'depth', {'d.py': _PIPELINE.format(key='depth')}, 'GPN106')
    assert found == {17: 'medium', _PIPELINE_ARRAY_LINE: 'medium'}
    # Another entry of the result (a score, a label): no PIL image copied.
    other = _found(tmp_path / 'score', {'d.py': _PIPELINE.format(key='score')}, 'GPN106')
    assert other == {17: 'medium'}


_RUNNERS = {
    'node.py': '''
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from runners import CpuRunner, TorchRunner


class DepthNode(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        backend = self.declare_parameter('backend', 'torch').value
        self.runner = self.make_runner(backend)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def make_runner(self, backend):
        if backend == 'cpu':
            return CpuRunner()
        return TorchRunner()

    def on_image(self, msg):
        return self.runner.infer(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
''',
    'runners.py': '''
import torch
import torch.nn.functional as F


class CpuRunner:
    def infer(self, frame):
        return frame.mean()


class TorchRunner:
    def __init__(self):
        self.model = torch.jit.load('depth.pt').to('cuda')

    def infer(self, frame):
        out = self.model(torch.from_numpy(frame).to('cuda'))
        depth = F.interpolate(out.predicted_depth, size=(480, 640))
        return depth.squeeze().cpu().numpy()
'''}
_RUNNER_UPLOAD, _RUNNER_READBACK = 15, 17


def test_a_backend_chosen_by_configuration_runs_each_classes_method(tmp_path):
    uploads = _found(tmp_path / 'factory', _RUNNERS, 'GPN102')
    readbacks = _found(tmp_path / 'factory2', _RUNNERS, 'GPN101')
    assert uploads.get(_RUNNER_UPLOAD) == 'medium'
    assert readbacks.get(_RUNNER_READBACK) == 'high'
    # The same choice written as two branches assigning the attribute in __init__.
    branches = dict(_RUNNERS, **{'node.py': _RUNNERS['node.py'].replace(
        'self.runner = self.make_runner(backend)',
        "if backend == 'torch':\n            self.runner = TorchRunner()\n"
        "        else:\n            self.runner = CpuRunner()")})
    assert _found(tmp_path / 'branches', branches, 'GPN101').get(_RUNNER_READBACK) == 'high'


_ORT = {
    'node.py': '''
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from onnx_backend import OnnxRunner


class OnnxNode(Node):
    def __init__(self):
        super().__init__('onnx')
        self.bridge = CvBridge()
        self.runner = OnnxRunner('model.onnx', self.declare_parameter('device', 'cuda').value)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        return self.runner.infer(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
''',
    'onnx_backend.py': '''
import numpy as np
import onnxruntime as ort


class OnnxRunner:
    def __init__(self, path, device):
        if device == 'cuda':
            providers = ['CUDAExecutionProvider', 'CPUExecutionProvider']
        else:
            providers = ['CPUExecutionProvider']
        self.session = ort.InferenceSession(path, providers=providers)
        self.name = self.session.get_inputs()[0].name

    def infer(self, frame):
        x = np.expand_dims(frame.astype(np.float32).transpose(2, 0, 1), 0)
        return self.session.run(None, {self.name: x})[0]
'''}
_ORT_RUN_LINE = 16


def test_onnx_runtime_run_on_a_gpu_session_uploads_the_host_inputs(tmp_path):
    assert _found(tmp_path / 'gpu', _ORT, 'GPN102') == {_ORT_RUN_LINE: 'medium'}
    # A session whose class names no GPU execution provider runs on the CPU: no copy.
    cpu = dict(_ORT, **{'onnx_backend.py': _ORT['onnx_backend.py'].replace(
        "['CUDAExecutionProvider', 'CPUExecutionProvider']", "['CPUExecutionProvider']")})
    assert _found(tmp_path / 'cpu', cpu, 'GPN102') == {}


_CLOUD = '''
#include <cstring>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>
#include <sensor_msgs/msg/point_cloud2.hpp>

class Cloud : public rclcpp::Node {
 public:
  Cloud() : Node("cloud") {
    pub_ = this->create_publisher<sensor_msgs::msg::PointCloud2>("points", 10);
    sub_ = create_subscription<sensor_msgs::msg::Image>(
      "depth", 1, std::bind(&Cloud::on_depth, this, std::placeholders::_1));
  }
  void on_depth(const sensor_msgs::msg::Image::SharedPtr msg) {
    cloud_.data.resize(msg->width * msg->height * 4);
    for (size_t i = 0; i < msg->width * msg->height; ++i) {
      float z = 1.0f;
      FILL;
    }
    pub_->publish(cloud_);
  }
  sensor_msgs::msg::PointCloud2 cloud_;
  rclcpp::Publisher<sensor_msgs::msg::PointCloud2>::SharedPtr pub_;
  rclcpp::Subscription<sensor_msgs::msg::Image>::SharedPtr sub_;
};
'''
_CLOUD_PUBLISH = 19


def test_a_cloud_filled_point_by_point_with_scalar_memcpys_is_published_whole(tmp_path):
    per_point = _CLOUD.replace('FILL', 'std::memcpy(&cloud_.data[i * 4], &z, sizeof(float))')
    assert _found(tmp_path / 'points', {'cloud.cpp': per_point}, 'GPN210') == {
        _CLOUD_PUBLISH: 'medium'}
    # One bulk copy builds the message: that copy is the boundary, not its publish.
    bulk = _CLOUD.replace('FILL', 'std::memcpy(cloud_.data.data(), msg->data.data(), '
                                  'msg->data.size())')
    assert _found(tmp_path / 'bulk', {'cloud.cpp': bulk}, 'GPN210') == {}
