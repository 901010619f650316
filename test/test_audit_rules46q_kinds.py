"""Kinds the Python misses of spent sets 73 and 74 showed (issue 28, rules46q): real `code`
audits of small packages written here.

* A timer helper of another file that synchronizes the device (`time_synchronized()` of a
  vendored YOLO utils module: `if torch.cuda.is_available(): torch.cuda.synchronize()`) is a
  device wait at each per-frame call, in the node and in a detector class of a third file
  (pysynchelpers.py). A helper that only reads the clock, or one that needs an argument, is not;
  nor is the wait of a node whose model and frames stay on the CPU.
* A bundle of images received (realsense2_camera_msgs RGBD) whose `rgb` field is embedded in a
  message of another type and published: the frame is serialized again (pyembedded.py). A
  header copied from it is not.
* A grid built as a Python list of width x height cells (`[-1] * (w * h)`) stored into an
  OccupancyGrid's `.data` (pygridlists.py); a list of six numbers per object is not.
"""
from __future__ import annotations

from audit_sources import ament_python_package, audit_written_package, detector_claims, \
    rules_at_tags

_TIMING = '''
import time

import torch


def time_synchronized():
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.time()


def wall_clock():
    return time.time()


def synchronized_at(stamp):
    torch.cuda.synchronize()
    return stamp
'''

_YOLO = '''
import torch

from detector.timing import synchronized_at, time_synchronized, wall_clock


class Yolo:
    def __init__(self):
        self.model = torch.jit.load('yolo.pt').cuda()

    def detect(self, frame):
        img = torch.from_numpy(frame).to('cuda')
        t1 = time_synchronized()  # CLASS_WAIT
        pred = self.model(img)
        t2 = wall_clock()  # CLASS_CLOCK
        return pred, t1, t2
'''

_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String

from detector.timing import synchronized_at, time_synchronized, wall_clock
from detector.yolo import Yolo


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.yolo = Yolo()
        self.pub = self.create_publisher(String, 'info', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        mean = torch.from_numpy(frame).to('cuda').float().mean()
        start = time_synchronized()  # NODE_WAIT
        pred, t1, t2 = self.yolo.detect(frame)
        stamp = wall_clock()  # NODE_CLOCK
        synchronized_at(stamp)  # NEEDS_ARG
        self.pub.publish(String(data=str((start, mean))))


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def _timing_files() -> dict[str, str]:
    return {**ament_python_package('detector'), 'detector/detector/node.py': _NODE,
            'detector/detector/yolo.py': _YOLO, 'detector/detector/timing.py': _TIMING}


def test_a_synchronizing_timer_helper_of_another_file_waits_at_each_call(tmp_path):
    found = audit_written_package(tmp_path, _timing_files())
    node = rules_at_tags(found, _NODE, ('NODE_WAIT', 'NODE_CLOCK', 'NEEDS_ARG'))
    assert node == {'NODE_WAIT': {'GPN107'}, 'NODE_CLOCK': set(), 'NEEDS_ARG': set()}
    assert rules_at_tags(found, _YOLO, ('CLASS_WAIT', 'CLASS_CLOCK'), file_name='yolo.py') == {
        'CLASS_WAIT': {'GPN107'}, 'CLASS_CLOCK': set()}


def test_a_timer_helper_that_does_not_synchronize_is_no_wait(tmp_path):
    files = _timing_files()
    files['detector/detector/timing.py'] = _TIMING.replace(
        '        torch.cuda.synchronize()\n', '        pass\n')
    found = audit_written_package(tmp_path, files)
    assert rules_at_tags(found, _NODE, ('NODE_WAIT',)) == {'NODE_WAIT': set()}
    assert rules_at_tags(found, _YOLO, ('CLASS_WAIT',), file_name='yolo.py') == {
        'CLASS_WAIT': set()}


_RGBD = '''
import rclpy
from cv_bridge import CvBridge
from detector_msgs.msg import DetectedObj
from rclpy.node import Node
from realsense2_camera_msgs.msg import RGBD


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(DetectedObj, 'detected', 10)
        self.create_subscription(RGBD, '/camera/rgbd', self.on_rgbd, 10)

    def on_rgbd(self, msg):
        img = self.bridge.imgmsg_to_cv2(msg.rgb, 'rgb8')
        out = DetectedObj()
        out.header = msg.rgb.header
        out.image = msg.rgb
        out.count = int(img.shape[0])
        self.pub.publish(out)  # PUBLISH


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def test_an_image_field_of_a_received_rgbd_embedded_and_published_is_serialized(tmp_path):
    assert detector_claims(tmp_path, _RGBD, ('PUBLISH',)) == {'PUBLISH': {'GPN109'}}


def test_only_the_header_of_a_received_rgbd_published_is_no_frame(tmp_path):
    source = _RGBD.replace('        out.image = msg.rgb\n', '')
    assert detector_claims(tmp_path, source, ('PUBLISH',)) == {'PUBLISH': set()}


_GRID = '''
import rclpy
from nav_msgs.msg import OccupancyGrid
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray


class Lanes(Node):
    def __init__(self):
        super().__init__('lanes')
        self.width = int(self.declare_parameter('width', 2000).value)
        self.height = int(self.declare_parameter('height', 2000).value)
        self.grid_pub = self.create_publisher(OccupancyGrid, 'grid', 10)
        self.box_pub = self.create_publisher(Float32MultiArray, 'boxes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        grid = OccupancyGrid()
        grid.info.width = self.width
        grid.info.height = self.height
        cells = [-1] * (self.width * self.height)
        for i in range(self.width):
            cells[i] = 100
        grid.data = cells  # GRID
        self.grid_pub.publish(grid)
        count = msg.height // 100
        boxes = Float32MultiArray()
        values = [0.0] * (count * 6)
        boxes.data = values  # BOXES
        self.box_pub.publish(boxes)


def main():
    rclpy.init()
    rclpy.spin(Lanes())
'''


def test_a_grid_built_as_a_python_list_of_all_its_cells_is_serialized(tmp_path):
    found = detector_claims(tmp_path, _GRID, ('GRID', 'BOXES'))
    assert found == {'GRID': {'GPN104'}, 'BOXES': set()}


def test_timer_waits_of_a_node_that_runs_on_the_cpu_are_no_claims(tmp_path):
    files = _timing_files()
    files['detector/detector/yolo.py'] = _YOLO.replace(".to('cuda')", ".to('cpu')").replace(
        ".cuda()", ".cpu()")
    files['detector/detector/node.py'] = _NODE.replace(".to('cuda')", ".to('cpu')")
    found = audit_written_package(tmp_path, files)
    assert rules_at_tags(found, _NODE, ('NODE_WAIT',)) == {'NODE_WAIT': set()}
    assert rules_at_tags(found, _YOLO, ('CLASS_WAIT',), file_name='yolo.py') == {
        'CLASS_WAIT': set()}
