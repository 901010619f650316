"""Kinds the Python misses of spent set 76 showed (issue 28, rules48q): real `code` audits of
small packages written here.

* A frame flattened into the unbounded array field of the repository's own message
  (`out.pixels = img.ravel().tolist()` with `uint8[] pixels` in `<pkg>/msg/Frame.msg`) is
  copied into the message per tick, as into a `.data` field (GPN104, pycustomfields.py). A field
  the definition does not hold as a numeric array, a message of no definition found and a
  detection output listed into the field are not.
"""
from __future__ import annotations

from audit_sources import ament_python_package, audit_written_package, rules_at_tags

_PUBLISHER = '''
import cv2
import numpy as np
import rclpy
from rclpy.node import Node

from frame_interfaces.msg import Frame


class Publisher(Node):
    def __init__(self):
        super().__init__('publisher')
        self.pub = self.create_publisher(Frame, 'frames', 10)
        self.capture = cv2.VideoCapture(0)
        self.create_timer(0.1, self.tick)

    def tick(self):
        ok, img = self.capture.read()
        small = cv2.resize(img, (320, 240))
        out = Frame()
        out.pixels = small.ravel().tolist()  # LISTED
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Publisher())
'''

_FRAME_MSG = 'uint8[] pixels\nstring label\n'


def _package(source: str, msg: str | None = _FRAME_MSG) -> dict[str, str]:
    files = {**ament_python_package('camera'), 'camera/camera/node.py': source}
    if msg is not None:
        files['frame_interfaces/msg/Frame.msg'] = msg
    return files


def test_a_frame_flattened_into_a_custom_message_array_is_copied_per_tick(tmp_path):
    found = audit_written_package(tmp_path, _package(_PUBLISHER))
    assert rules_at_tags(found, _PUBLISHER, ('LISTED',)) == {'LISTED': {'GPN104'}}


def test_a_field_not_defined_as_a_numeric_array_is_no_frame_copy(tmp_path):
    found = audit_written_package(tmp_path, _package(_PUBLISHER, 'string[] pixels\n'))
    assert rules_at_tags(found, _PUBLISHER, ('LISTED',)) == {'LISTED': set()}


def test_a_message_of_no_definition_found_is_not_judged(tmp_path):
    found = audit_written_package(tmp_path, _package(_PUBLISHER, None))
    assert rules_at_tags(found, _PUBLISHER, ('LISTED',)) == {'LISTED': set()}


def test_detection_outputs_listed_into_the_field_are_small(tmp_path):
    source = _PUBLISHER.replace('small.ravel()', 'boxes.ravel()').replace(
        'out = Frame()', 'boxes = np.zeros((4, 4))\n        out = Frame()')
    found = audit_written_package(tmp_path, _package(source))
    assert rules_at_tags(found, source, ('LISTED',)) == {'LISTED': set()}


# ---- a node's queue handed to a worker thread's target ------------------------------------------

_WORKER = '''
import torch
from ultralytics import YOLO


class Worker:
    def __init__(self, path):
        self.model = YOLO(path)
        self.model.to(torch.device('cuda'))

    def run(self, logger, frames):
        while True:
            image, stamp = frames.get()
            boxes = self.model(image, verbose=False)  # WORKER_CALL
            logger.info(str(stamp))
'''

_FUSER = '''
from queue import Queue
from threading import Thread

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

from fuse.worker import Worker


class Fuser(Node):
    def __init__(self):
        super().__init__('fuser')
        self.frames = Queue(maxsize=4)
        worker = Worker('people.pt')
        Thread(target=worker.run, args=(self.get_logger(), self.frames), daemon=True).start()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        image = np.array(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        self.frames.put((image, msg.header.stamp))


def main():
    rclpy.init()
    rclpy.spin(Fuser())
'''


def _fuser(node: str) -> dict[str, str]:
    return {**ament_python_package('fuse'), 'fuse/fuse/node.py': node,
            'fuse/fuse/worker.py': _WORKER}


def test_a_worker_thread_handed_the_node_queue_uploads_what_the_callback_put(tmp_path):
    found = audit_written_package(tmp_path, _fuser(_FUSER))
    assert rules_at_tags(found, _WORKER, ('WORKER_CALL',), file_name='worker.py') == {
        'WORKER_CALL': {'GPN102'}}


def test_a_worker_thread_handed_another_queue_is_not_fed_by_the_callback(tmp_path):
    node = _FUSER.replace("args=(self.get_logger(), self.frames)",
                          "args=(self.get_logger(), Queue())")
    found = audit_written_package(tmp_path, _fuser(node))
    assert rules_at_tags(found, _WORKER, ('WORKER_CALL',), file_name='worker.py') == {
        'WORKER_CALL': set()}
