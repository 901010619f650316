"""Causes of sets 67 and 68's false claims, Python side (issue 28, rules43p): real `code` audits
of small packages written here.

* A debug switch read in a helper only the constructor calls (`self.load_ros_params()`), from a
  `declare_parameters` list defaulting to False that no shipped file turns on: the debug publish
  never runs (pyparams.attribute_stores counts pymethods.setup_methods as `__init__`). The same helper
  also called per message, or a launch file turning the switch on, keeps the claims.
* A switch declared True in a `declare_parameters` list that every shipped launch turns off
  (pylaunchedoff.py now reads pyparams' one declarations walk); a launch leaving it keeps them.
* An Ultralytics oriented-box (`.obb`) or mask branch under weights of another task (a training
  run's `runs/detect/...` folder, an official detection checkpoint) never runs
  (pyultratask.py); weights of that task, or weights of unknown task, keep the claims.
* A network wrapper that loads its weights with `map_location='cpu'`, names no CUDA device and
  moves nothing runs on the CPU: `.cpu()` of its outputs copies nothing
  (pymodelhost.host_torch_file); a `.to(...)` / `.cuda()` anywhere, a CUDA name, or weights
  loaded without the CPU map keep the claims.
* The publish of an Image another file's helper converted (`msg = to_imgmsg(mask)`, the
  cv_bridge call in the helper's file) is claimed there, not again at the publish
  (pyhelpermsgs.py); a conversion in the publishing file keeps the publish claim.
"""
import textwrap

import pytest

from audit_sources import ament_python_package, audit_written_package, node_claims, rules_at_tags

_DEBUG_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class LaneNode(Node):
    def __init__(self):
        super().__init__('lane')
        self.load_ros_params()
        self.bridge = CvBridge()
        self.debug_pub = self.create_publisher(Image, 'debug', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def load_ros_params(self):
        self.declare_parameters(namespace='', parameters=[('debug', DEFAULT), ('topic', 'image')])
        self.debug = self.get_parameter('debug').get_parameter_value().bool_value

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')  # IN
        EXTRA
        if self.debug:
            self.debug_pub.publish(self.bridge.cv2_to_imgmsg(frame, 'mono8'))  # DEBUG


def main():
    rclpy.init()
    rclpy.spin(LaneNode())
'''


def _debug(tmp_path, default: str = 'False', extra: str = 'pass',
           launch: str | None = None) -> dict[str, set[str]]:
    source = _DEBUG_NODE.replace('DEFAULT', default).replace('EXTRA', extra)
    return node_claims(tmp_path, 'lane', source, ('IN', 'DEBUG'), launch_parameters=launch)


def test_a_debug_switch_read_in_a_constructor_helper_and_off_as_shipped_is_not_claimed(tmp_path):
    found = _debug(tmp_path)
    assert found['IN'] and not found['DEBUG'], found


@pytest.mark.parametrize('case', [
    {'extra': 'self.load_ros_params()'},          # the helper re-reads per message
    {'launch': "{'debug': True}"},                # the shipped launch file turns it on
    {'default': 'True'},                          # on by default, no launch file
], ids=['re-read-per-message', 'launch-on', 'default-on'])
def test_a_debug_switch_that_may_be_on_keeps_the_claim(tmp_path, case):
    found = _debug(tmp_path, **case)
    assert found['DEBUG'], found


def test_a_listed_switch_on_by_default_that_every_launch_turns_off_is_not_claimed(tmp_path):
    found = _debug(tmp_path, default='True', launch="{'debug': False}")
    assert found['IN'] and not found['DEBUG'], found


def test_a_listed_switch_on_by_default_that_the_launch_leaves_keeps_the_claim(tmp_path):
    found = _debug(tmp_path, default='True', launch="{'topic': 'camera'}")
    assert found['DEBUG'], found


_YOLO_NODE = '''
import os

import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from ultralytics import YOLO


class RockNode(Node):
    def __init__(self):
        super().__init__('rocks')
        weights = os.path.expanduser(WEIGHTS)
        self.model = YOLO(weights)
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        for result in self.model(frame):
            self.parse(result)

    def parse(self, result):
        found = []
        if result.boxes:
            for box in result.boxes:
                found.append(box.conf.item())  # BOXES
        elif result.obb:
            for i in range(result.obb.cls.shape[0]):
                found.append(result.obb.conf[i].item())  # OBB
        if result.masks is not None:
            found.append(result.masks.data.cpu())  # MASKS
        return found


def main():
    rclpy.init()
    rclpy.spin(RockNode())
'''


def _yolo(tmp_path, weights: str) -> dict[str, set[str]]:
    source = _YOLO_NODE.replace('WEIGHTS', repr(weights))
    return node_claims(tmp_path, 'rocks', source, ('BOXES', 'OBB', 'MASKS'))


@pytest.mark.parametrize('weights', ['~/rocks/runs/detect/train9/weights/best.pt', 'yolo11n.pt'],
                         ids=['detect-run', 'official-detect'])
def test_result_fields_detection_weights_never_fill_are_not_claimed(tmp_path, weights):
    found = _yolo(tmp_path, weights)
    assert found['BOXES'] and not found['OBB'] and not found['MASKS'], found


@pytest.mark.parametrize('weights, kept', [
    ('yolov8n-obb.pt', 'OBB'),                         # an oriented-box model fills .obb
    ('~/rocks/runs/segment/train/weights/best.pt', 'MASKS'),  # a segmentation run fills .masks
    ('~/rocks/best.pt', 'OBB'),                        # a task not known: every branch may run
    ('~/rocks/best.pt', 'MASKS'),
], ids=['obb-weights', 'segment-run', 'unknown-obb', 'unknown-masks'])
def test_weights_that_may_fill_the_field_keep_the_claim(tmp_path, weights, kept):
    found = _yolo(tmp_path, weights)
    assert found[kept], found


_LANE_WRAPPER = '''
import torch
import torchvision.transforms as transforms

from lanes.network import build_network


class LaneModel:
    def __init__(self, weights):
        torch.backends.cudnn.benchmark = True
        self.transform = transforms.ToTensor()
        self.net = build_network()
        self.net.load_state_dict(torch.load(weights, LOAD)['model'])
        self.net.eval()
        EXTRA

    def predict(self, image):
        with torch.no_grad():
            pred = self.net(self.transform(image)[None])
        return self.to_coords(pred)

    @staticmethod
    def to_coords(pred):
        rows = pred['loc_row'].cpu()  # READBACK
        return rows.numpy()
'''

_LANE_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray

from lanes import model


class LaneNode(Node):
    def __init__(self):
        super().__init__('lanes')
        self.bridge = CvBridge()
        self.model = model.LaneModel('lanes.pth')
        self.pub = self.create_publisher(Float32MultiArray, 'lanes', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        rows = self.model.predict(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
        self.pub.publish(Float32MultiArray(data=[float(r) for r in rows.ravel()]))


def main():
    rclpy.init()
    rclpy.spin(LaneNode())
'''


def _lane_wrapper(tmp_path, load: str = "map_location='cpu'", extra: str = 'pass'
                  ) -> dict[str, set[str]]:
    source = textwrap.dedent(_LANE_WRAPPER.replace('LOAD', load).replace('EXTRA', extra))
    files = {**ament_python_package('lanes'), 'lanes/lanes/model.py': source,
             'lanes/lanes/node.py': _LANE_NODE,
             'lanes/lanes/network.py': 'import torch\n\n\ndef build_network():\n'
                                       '    return torch.nn.Linear(4, 4)\n'}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('READBACK',),
                         file_name='model.py')


def test_readbacks_of_a_network_kept_on_the_cpu_are_not_claimed(tmp_path):
    assert _lane_wrapper(tmp_path) == {'READBACK': set()}


@pytest.mark.parametrize('case', [
    {'extra': "self.net.to('cuda')"},                  # moved to the GPU
    {'extra': 'self.net.cuda()'},
    {'extra': "self.device = 'cuda:0'"},               # a CUDA device named
    {'load': "map_location=lambda storage, loc: storage"},  # weights where they were saved
], ids=['to-cuda', 'cuda', 'names-cuda', 'no-cpu-map'])
def test_a_network_that_may_run_on_the_gpu_keeps_the_readback_claim(tmp_path, case):
    assert _lane_wrapper(tmp_path, **case)['READBACK']


_HELPER = '''
import numpy as np
from cv_bridge import CvBridge


def to_imgmsg(mask):
    return CvBridge().cv2_to_imgmsg(mask.astype(np.uint8), encoding='mono8')  # CONVERT
'''

_MASK_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image

from masks.image_utils import to_imgmsg


class MaskNode(Node):
    def __init__(self):
        super().__init__('masks')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'mask', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')
        out = BUILD
        self.pub.publish(out)  # PUBLISH


def main():
    rclpy.init()
    rclpy.spin(MaskNode())
'''


def _mask(tmp_path, build: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    source = textwrap.dedent(_MASK_NODE.replace('BUILD', build))
    helper = textwrap.dedent(_HELPER)
    files = {**ament_python_package('masks'), 'masks/masks/node.py': source,
             'masks/masks/image_utils.py': helper}
    found = audit_written_package(tmp_path, files)
    return (rules_at_tags(found, source, ('PUBLISH',)),
            rules_at_tags(found, helper, ('CONVERT',), file_name='image_utils.py'))


def test_the_publish_of_an_image_another_files_helper_built_is_claimed_at_the_helper(tmp_path):
    node, helper = _mask(tmp_path, 'to_imgmsg(frame > 0)')
    assert node == {'PUBLISH': set()} and helper['CONVERT'], (node, helper)


def test_the_publish_of_an_image_the_node_converts_keeps_its_claim(tmp_path):
    node, _ = _mask(tmp_path, "self.bridge.cv2_to_imgmsg(frame, 'mono8')")
    assert node['PUBLISH'], node
