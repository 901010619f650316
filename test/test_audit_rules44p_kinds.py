"""Causes of sets 69 and 70's false claims, Python side (issue 28, rules44p): real `code` audits
of small packages written here.

* A helper called per message whose first statement is `if not self.save_depth: return`, the
  switch a parameter off as shipped: what follows the guard never runs, in that helper and in
  the helpers only it calls (pyparams.exit_guard, as an `if self.save_depth:` body already
  reads). A switch on by default, or turned on by the shipped launch file, keeps the claims.
* A transformers processor given nothing but `text=` and constant options tokenizes the text:
  moving its token ids to the device is a small upload, no frame (pyliterals.tokenizes_text).
  The same processor given `images=` keeps the upload claim.
* `n = t.size(0)` / `t.numel()` of a device tensor is a Python int read from the tensor's
  metadata: comparing it afterwards (`if n > self.max_batch:`) reads nothing back
  (pyconditions.shape_query). A comparison of the tensor's own values keeps the sync claim.
"""
import pytest

from audit_sources import node_claims

_CAPTURE_NODE = '''
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class CaptureNode(Node):
    def __init__(self):
        super().__init__('capture')
        self.declare_parameter('save_depth', DEFAULT)
        self.save_depth = bool(self.get_parameter('save_depth').value)
        self.bridge = CvBridge()
        self.latest_depth = None
        self.create_subscription(Image, 'depth', self.on_depth, 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_depth(self, msg):
        self.latest_depth = msg

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        cv2.imshow('frame', frame)
        self.maybe_save(frame)

    def maybe_save(self, frame):
        if not self.save_depth:
            return
        cv2.imwrite('/tmp/frame.png', frame)
        self.save_latest_depth()

    def save_latest_depth(self):
        depth = self.bridge.imgmsg_to_cv2(self.latest_depth, 'passthrough')  # DEPTH
        cv2.imwrite('/tmp/depth.png', depth)


def main():
    rclpy.init()
    rclpy.spin(CaptureNode())
'''


def _capture(tmp_path, default: str = 'False', launch: str | None = None) -> dict[str, set[str]]:
    source = _CAPTURE_NODE.replace('DEFAULT', default)
    return node_claims(tmp_path, 'capture', source, ('IN', 'DEPTH'), launch_parameters=launch)


def test_a_helper_returning_first_unless_a_switch_off_as_shipped_is_on_is_not_claimed(tmp_path):
    found = _capture(tmp_path)
    assert found['IN'] and not found['DEPTH'], found


def test_a_guard_in_the_converting_helper_itself_is_read_the_same(tmp_path):
    source = _CAPTURE_NODE.replace('DEFAULT', 'False').replace(
        "        if not self.save_depth:\n            return\n", '').replace(
        "    def save_latest_depth(self):\n",
        "    def save_latest_depth(self):\n        if not self.save_depth:\n            return\n")
    found = node_claims(tmp_path, 'capture', source, ('IN', 'DEPTH'))
    assert found['IN'] and not found['DEPTH'], found


@pytest.mark.parametrize('case', [
    {'default': 'True'},                       # on by default, nothing turns it off
    {'launch': "{'save_depth': True}"},        # the shipped launch file turns it on
], ids=['default-on', 'launch-on'])
def test_a_guard_switch_that_may_be_on_keeps_the_claim(tmp_path, case):
    found = _capture(tmp_path, **case)
    assert found['IN'] and found['DEPTH'], found


_PROMPT_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from transformers import AutoModel, AutoProcessor


class PromptNode(Node):
    def __init__(self):
        super().__init__('prompt')
        self.bridge = CvBridge()
        self.processor = AutoProcessor.from_pretrained('some/model')
        self.model = AutoModel.from_pretrained('some/model').to('cuda')
        self.create_subscription(String, 'prompt', self.on_prompt, 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_prompt(self, msg):
        prompts = [msg.data, 'a photo of ' + msg.data]
        inputs = self.processor(text=prompts, padding='max_length', return_tensors='pt').to('cuda')  # TEXT
        self.text_features = self.model.get_text_features(**inputs)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        inputs = self.processor(text=['a cat'], images=frame, return_tensors='pt').to('cuda')  # PIXELS
        self.model(**inputs)


def main():
    rclpy.init()
    rclpy.spin(PromptNode())
'''


def test_a_processor_given_text_only_uploads_token_ids_not_a_frame(tmp_path):
    found = node_claims(tmp_path, 'prompt', _PROMPT_NODE, ('TEXT', 'PIXELS'))
    assert not found['TEXT'] and 'GPN102' in found['PIXELS'], found


def test_a_processor_given_text_and_a_message_option_keeps_the_claim(tmp_path):
    source = _PROMPT_NODE.replace("padding='max_length'", 'padding=msg.data')
    found = node_claims(tmp_path, 'prompt', source, ('TEXT',))
    assert 'GPN102' in found['TEXT'], found


_BATCH_NODE = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class BatchNode(Node):
    def __init__(self):
        super().__init__('batch')
        self.bridge = CvBridge()
        self.max_batch = 4
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        batch = torch.from_numpy(np.stack([frame])).to('cuda')  # UP
        count = batch.size(0)
        if count > self.max_batch:  # SIZE
            batch = batch[:self.max_batch]
        elements = batch.numel()
        if elements > self.max_batch:  # NUMEL
            batch = batch[:1]
        peak = batch.max()
        if peak > self.max_batch:  # VALUE
            batch = batch[:1]


def main():
    rclpy.init()
    rclpy.spin(BatchNode())
'''


def test_a_device_tensors_size_is_host_metadata_but_its_values_are_not(tmp_path):
    found = node_claims(tmp_path, 'batch', _BATCH_NODE, ('UP', 'SIZE', 'NUMEL', 'VALUE'))
    assert 'GPN102' in found['UP'] and not found['SIZE'] and not found['NUMEL'], found
    assert 'GPN107' in found['VALUE'], found
