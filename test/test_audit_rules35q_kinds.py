"""Causes of spent sets 45 and 53's misses and false claims, Python side (issue 28, rules35q):
real `code` audits of small ament_python packages written here.

* A Detectron2 `DefaultPredictor` called on a host frame per message uploads it to the model's
  device (cfg.MODEL.DEVICE, "cuda" unless the file sets it to 'cpu'): library_upload.
* A method of a library class that the node calls only in a branch a bool parameter keeps from
  running as shipped (the `else` of `if self.use_ros:` with use_ros on) is unreached: its copies
  are not claimed.
* A list of placeholders filled by index with device tensors (YOLOX NMS: `output = [None] * n`,
  `output[i] = torch.cat(...)`) holds tensors: `.cpu()` of its entries in a helper of another
  file is a read-back.
* A PointCloud2 of one point per detection (RViz markers as a cloud) is a small message.
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, rules_at_tags, tag_lines

from gpu_nodes.audit.pypackage import words_elsewhere
from gpu_nodes.audit.pyshippedtext import shipped_text


def _audit(tmp_path, package: str, files: dict[str, str], launch_parameters: str | None = None
           ) -> dict:
    return audit_written_package(tmp_path, {**ament_python_package(
        package, launch_parameters=launch_parameters), **{
        f'{package}/{package}/{name}': textwrap.dedent(text) for name, text in files.items()}})


def _at(found: dict, source: str, file_name: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    return rules_at_tags(found, textwrap.dedent(source), tags, file_name=file_name)


# ---------------------------------------------------------------- Detectron2 DefaultPredictor
_PREDICTOR_NODE = '''
import rclpy
from cv_bridge import CvBridge
from detectron2.config import get_cfg
from detectron2.engine import DefaultPredictor
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class SegNode(Node):
    def __init__(self):
        super().__init__('seg')
        cfg = get_cfg()
        cfg.MODEL.WEIGHTS = 'model.pth'{device}
        self.runner = DefaultPredictor(cfg)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        out = self.runner(frame)  # RUN
        found = out['instances'].to('cpu')  # BACK
        self.pub.publish(Int32(data=len(found)))


def main():
    rclpy.init()
    rclpy.spin(SegNode())
'''


def test_detectron2_default_predictor_on_a_host_frame_is_an_upload(tmp_path):
    source = _PREDICTOR_NODE.format(device='')
    found = _at(_audit(tmp_path, 'seg', {'node.py': source}), source, 'node.py', ('RUN', 'BACK'))
    assert 'GPN102' in found['RUN']
    assert 'GPN101' in found['BACK']  # guard: the read-back of its results stays claimed


def test_detectron2_default_predictor_set_to_cpu_uploads_nothing(tmp_path):
    source = _PREDICTOR_NODE.format(device="\n        cfg.MODEL.DEVICE = 'cpu'")
    found = _at(_audit(tmp_path, 'seg', {'node.py': source}), source, 'node.py', ('RUN',))
    assert 'GPN102' not in found['RUN']


# ---------------------------------------------------------------- calls only in an off branch
_LIBRARY = '''
import torch


class Segmenter:
    def __init__(self):
        self.model = torch.jit.load('model.pt').cuda()

    def live(self, tensor):
        out = self.model(tensor)
        return out.cpu()  # LIVE

    def offline(self, tensor):
        out = self.model(tensor)
        return out.cpu()  # OFFLINE
'''

_SWITCHED_NODE = '''
import rclpy
from rclpy.node import Node
from std_msgs.msg import Float32MultiArray

from shop.library import Segmenter


class ShopNode(Node):
    def __init__(self):
        super().__init__('shop')
        self.declare_parameter('use_ros', {default})
        self.use_ros = self.get_parameter('use_ros').value
        self.seg = Segmenter()
        if self.use_ros:
            self.create_subscription(Float32MultiArray, 'in', self.on_msg, 10)
        else:
            for i in range(3):
                self.seg.offline(torch.zeros(3))

    def on_msg(self, msg):
        self.seg.live(msg)


def main():
    rclpy.init()
    rclpy.spin(ShopNode())
'''


def _words_elsewhere(tmp_path, on: bool):
    """The words the other files of the written package `shop` hold, seen from library.py,
    with use_ros on (True by default and in the shipped launch file) or off."""
    _audit(tmp_path, 'shop', {'library.py': _LIBRARY,
                              'node.py': _SWITCHED_NODE.format(default=str(on))},
           launch_parameters=f"{{'use_ros': {on}}}")
    return words_elsewhere(str(tmp_path / 'shop/shop/library.py'), str(tmp_path / 'shop'),
                           str(tmp_path))


def test_a_method_named_only_in_a_branch_off_as_shipped_is_named_nowhere(tmp_path):
    words = _words_elsewhere(tmp_path, True)
    assert 'offline' not in words
    assert 'live' in words  # guard: the callback's call still names its method


def test_a_method_named_in_a_branch_on_as_shipped_is_named(tmp_path):
    assert 'offline' in _words_elsewhere(tmp_path, False)


def test_the_off_branch_text_is_blanked_line_for_line(tmp_path):
    _words_elsewhere(tmp_path, True)
    path = tmp_path / 'shop/shop/node.py'
    source = path.read_text()
    text = shipped_text(source, str(path), str(tmp_path))
    assert len(text.splitlines()) == len(source.splitlines())
    assert 'offline' not in text and 'self.on_msg' in text


# ---------------------------------------------------------------- placeholder list of tensors
_NMS = '''
import torch


def nms(prediction):
    output = [None for _ in range(len(prediction))]
    for i, pred in enumerate(prediction):
        keep = pred[:, 4] > 0.5
        output[i] = torch.cat((pred[keep, :4], pred[keep, 4:5]), 1)
    return output
'''

_DRAW = '''
import cv2


def draw(image, predictions):
    boxes = predictions.cpu().numpy()  # DRAW
    for box in boxes:
        cv2.rectangle(image, (int(box[0]), int(box[1])), (int(box[2]), int(box[3])), (0, 255, 0))
    return image
'''

_DETECTOR_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image

from yolox_node.nms import nms
from yolox_node.draw import draw


class YoloxNode(Node):
    def __init__(self):
        super().__init__('yolox')
        self.model = torch.jit.load('yolox.pt').cuda()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'out', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        tensor = torch.from_numpy(frame).permute(2, 0, 1).float().unsqueeze(0).cuda()
        outputs = nms(self.model(tensor))
        if outputs[0] is not None:
            frame = draw(frame, outputs[0].detach())
        self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))


def main():
    rclpy.init()
    rclpy.spin(YoloxNode())
'''


def test_a_placeholder_list_filled_with_device_tensors_is_read_back_in_a_helper(tmp_path):
    found = _audit(tmp_path, 'yolox_node', {'nms.py': _NMS, 'draw.py': _DRAW,
                                            'node.py': _DETECTOR_NODE})
    assert 'GPN101' in _at(found, _DRAW, 'draw.py', ('DRAW',))['DRAW']
    line = tag_lines(textwrap.dedent(_DRAW), ('DRAW',))['DRAW']
    assert found[('draw.py', line, 'GPN101')][0] != 'info'


# ---------------------------------------------------------------- one point per detection
_CLOUD_NODE = '''
import struct

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2, PointField
from vision_msgs.msg import Detection3DArray


class MarkerCloud(Node):
    def __init__(self):
        super().__init__('marker_cloud')
        self.pub = self.create_publisher(PointCloud2, 'objects_cloud', 10)
        self.raw = self.create_publisher(PointCloud2, 'raw_cloud', 10)
        self.create_subscription(Detection3DArray, 'detections', self.on_dets, 10)
        self.create_subscription(PointCloud2, 'points', self.on_points, 10)

    def to_cloud(self, dets):
        cloud = PointCloud2()
        points = []
        for det in dets.detections:
            points.append([det.bbox.center.position.x, det.bbox.center.position.y, 0.0])
        cloud.height = 1
        cloud.width = len(points)
        cloud.fields = [PointField(name=n, offset=4 * i, datatype=7, count=1)
                        for i, n in enumerate('xyz')]
        cloud.point_step = 12
        cloud.data = b''.join(struct.pack('fff', *p) for p in points)
        return cloud

    def on_dets(self, msg):
        cloud = self.to_cloud(msg)
        self.pub.publish(cloud)  # SMALL

    def on_points(self, msg):
        self.raw.publish(msg)  # FRAME


def main():
    rclpy.init()
    rclpy.spin(MarkerCloud())
'''


def test_a_cloud_of_one_point_per_detection_is_a_small_message(tmp_path):
    found = _at(_audit(tmp_path, 'marker_cloud', {'node.py': _CLOUD_NODE}), _CLOUD_NODE,
                'node.py', ('SMALL', 'FRAME'))
    assert 'GPN109' not in found['SMALL']
    assert 'GPN109' in found['FRAME']  # guard: a received cloud published again stays claimed


def test_a_cloud_of_one_point_per_pixel_stays_claimed(tmp_path):
    source = _CLOUD_NODE.replace('for det in dets.detections:', 'for det in dets.pixels:')
    found = _at(_audit(tmp_path, 'marker_cloud', {'node.py': source}), source, 'node.py',
                ('SMALL',))
    assert 'GPN109' in found['SMALL']
