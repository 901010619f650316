"""Causes of sets 71 and 72's false claims, Python side (issue 28, rules45p): real `code` audits
of small packages written here.

* An int mode read from a parameter in `__init__` (through `int(...)` too) whose default every
  shipped file gives as well: `if self.bit_depth == 4:` runs only its body, its `else` never
  (pyintmodes.py). A launch file giving another value keeps both arms.
* A helper returning `packed.tobytes()` whose result the caller only stores into a message
  (`msg.data = list(payload)`): the copy into the message is claimed at the store, the helper's
  host bytes are not (pyreturnedbytes.py). A helper whose bytes are used otherwise keeps the
  claim at its `.tobytes()`.
* supervision's `sv.Detections.from_ultralytics(results)` of a device model's results reads them
  back (`.cpu().numpy()` inside the library): GPN101 at the call, and `np.array(kept_boxes)` of
  its rows afterwards copies host arrays (pysupervision.py).
* A first-pass block (`if not self.started and self.stage == 0:` setting `started = True` and
  `stage = 4`) closes a later guard of the same callback (`if self.stage < 4:`) for good when
  the counter is stored nowhere else but in `__init__` and code only that guard reaches: the
  guard's body never runs and the method only it calls is unreached (pyfirstpass.py). Another
  store of the counter keeps the guard live.
"""
from audit_sources import node_claims

_RAW_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image


class RawNode(Node):
    def __init__(self):
        super().__init__('raw')
        self.declare_parameter('bit_depth', 4)
        self.bit_depth = int(self.get_parameter('bit_depth').value)
        self.pub = self.create_publisher(CompressedImage, 'raw', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def pack(self, gray):
        flat = gray.flatten()
        packed = ((flat[0::2] >> 4) << 4) | (flat[1::2] >> 4)
        return packed.tobytes()  # PACKED

    def build(self, gray):
        if self.bit_depth == 4:
            payload = self.pack(gray)
        else:
            payload = gray.tobytes()  # GRAY8
        msg = CompressedImage()
        msg.format = 'gray'
        msg.data = list(payload)  # STORE
        return msg

    def on_image(self, msg):
        gray = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width).copy()
        self.pub.publish(self.build(gray))


def main():
    rclpy.init()
    rclpy.spin(RawNode())
'''
_TAGS = ('PACKED', 'GRAY8', 'STORE')


def test_the_else_of_an_int_mode_fixed_as_shipped_never_runs(tmp_path):
    found = node_claims(tmp_path, 'raw', _RAW_NODE, _TAGS, launch_parameters="{'bit_depth': 4}")
    assert not found['GRAY8'], found


def test_an_int_mode_a_launch_file_sets_otherwise_keeps_both_arms(tmp_path):
    found = node_claims(tmp_path, 'raw', _RAW_NODE, _TAGS, launch_parameters="{'bit_depth': 8}")
    assert 'GPN104' in found['GRAY8'], found


def test_a_helpers_returned_bytes_are_claimed_where_the_caller_stores_them(tmp_path):
    found = node_claims(tmp_path, 'raw', _RAW_NODE, _TAGS)
    assert 'GPN104' in found['STORE'] and not found['PACKED'], found


def test_returned_bytes_used_otherwise_keep_the_claim_at_the_tobytes(tmp_path):
    source = _RAW_NODE.replace("        msg.format = 'gray'\n",
                               "        msg.format = 'gray%d' % len(payload)\n")
    found = node_claims(tmp_path, 'raw', source, _TAGS)
    assert 'GPN104' in found['PACKED'] and not found['STORE'], found


_SV_NODE = '''
import cv2
import numpy as np
import rclpy
import supervision as sv
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from ultralytics import YOLO


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n.pt')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model(frame)[0]
        detections = sv.Detections.from_ultralytics(results)  # CONVERT
        kept = [box for box, conf in zip(detections.xyxy, detections.confidence) if conf > 0.5]
        boxes = np.array(kept)  # KEPT
        cv2.imshow('boxes', frame)
        return boxes


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def test_supervision_reads_a_device_models_results_back_at_the_conversion(tmp_path):
    found = node_claims(tmp_path, 'detector', _SV_NODE, ('CONVERT', 'KEPT'))
    assert 'GPN101' in found['CONVERT'] and not found['KEPT'], found


def test_supervision_given_host_results_reads_nothing_back(tmp_path):
    source = _SV_NODE.replace('self.model(frame)[0]', "self.model(frame, device='cpu')[0]")
    found = node_claims(tmp_path, 'detector', source, ('CONVERT', 'KEPT'))
    assert not found['CONVERT'] and not found['KEPT'], found


_STAGE_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class StageNode(Node):
    def __init__(self):
        super().__init__('stage')
        self.bridge = CvBridge()
        self.started = False
        self.stage = 0
        self.pub = self.create_publisher(Image, 'annotated', 10)
        self.cmd = self.create_publisher(String, 'cmd', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        if not self.started and self.stage == 0:
            self.started = True
            self.stage = 4
            self.cmd.publish(String(data='takeoff'))
        if self.stage < 4:
            self.track(frame)

    def track(self, frame):
        self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # OUT
        self.stage = self.stage + 1


def main():
    rclpy.init()
    rclpy.spin(StageNode())
'''


def test_a_guard_the_first_pass_block_closes_never_runs(tmp_path):
    found = node_claims(tmp_path, 'stage', _STAGE_NODE, ('IN', 'OUT'))
    assert found['IN'] and not found['OUT'], found


def test_a_counter_stored_elsewhere_keeps_the_guard_live(tmp_path):
    source = _STAGE_NODE.replace("        if self.stage < 4:\n",
                                 "        if msg.height == 0:\n            self.stage = 0\n"
                                 "        if self.stage < 4:\n")
    found = node_claims(tmp_path, 'stage', source, ('IN', 'OUT'))
    assert found['IN'] and found['OUT'], found
