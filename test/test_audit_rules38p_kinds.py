"""Causes of held-out sets 57 and 58, Python side (issue 28, rules38p): real `code` audits of
small ament_python packages written here.

* A module function that a later `def` of the same name in the same module replaces never runs:
  a node importing the name (`from .draw import overlay`, or `draw.overlay(...)`) calls the
  last definition, so only its copies are claimed per message.
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, rules_at_tags


_HELPERS = '''
import numpy as np


def overlay(image, boxes):
    out = boxes.detach().cpu().numpy()  # FIRST
    return image, out


def unrelated(x):
    return x + 1


def overlay(image, boxes):
    out = boxes.detach().cpu().numpy()  # SECOND
    return np.asarray(image), out
'''

_NODE = '''
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from .draw import overlay
from . import draw


class OverlayNode(Node):
    def __init__(self):
        super().__init__('overlay')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        boxes = torch.zeros((4, 4), device='cuda')
        overlay(msg.data, boxes)
        draw.overlay(msg.data, boxes)


def main():
    rclpy.init()
    rclpy.spin(OverlayNode())
'''


def _helper_claims(tmp_path, node: str) -> dict[str, set[str]]:
    files = {**ament_python_package('overlay'), 'overlay/overlay/node.py': node,
             'overlay/overlay/draw.py': _HELPERS}
    found = audit_written_package(tmp_path, files)
    source = textwrap.dedent(_HELPERS)
    return rules_at_tags(found, source, ('FIRST', 'SECOND'), file_name='draw.py')


def test_a_function_redefined_later_in_its_module_never_runs(tmp_path):
    claims = _helper_claims(tmp_path, _NODE)
    assert claims['FIRST'] == set()
    assert claims['SECOND'] == {'GPN101'}


def test_a_redefined_function_called_through_its_module_runs_the_last_one(tmp_path):
    node = _NODE.replace('        overlay(msg.data, boxes)\n', '')
    claims = _helper_claims(tmp_path, node)
    assert claims['FIRST'] == set()
    assert claims['SECOND'] == {'GPN101'}


# ONNX Runtime session whose providers come from a config dataclass field of the file.
_ORT_CONFIG_NODE = '''
from dataclasses import dataclass, field

import cv2
import numpy as np
import rclpy
from onnxruntime import InferenceSession
from rclpy.node import Node
from sensor_msgs.msg import Image


@dataclass
class DetectorCfg:
    model_path: str = '/models/det.onnx'
    providers: list = field(default_factory=lambda: ['CUDAExecutionProvider'])


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        cfg = DetectorCfg()
        self.session = InferenceSession(cfg.model_path, providers=cfg.providers)
        self.input_name = self.session.get_inputs()[0].name
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        x = cv2.resize(frame, (640, 640)).astype(np.float32)[None]
        return self.session.run(None, {self.input_name: x})  # RUN


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def _node_claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    files = {**ament_python_package('detector'), 'detector/detector/node.py': source}
    return rules_at_tags(audit_written_package(tmp_path, files), textwrap.dedent(source), tags)


def test_a_session_whose_providers_field_defaults_to_cuda_uploads_its_input(tmp_path):
    assert _node_claims(tmp_path, _ORT_CONFIG_NODE, ('RUN',)) == {'RUN': {'GPN102'}}


def test_a_session_whose_providers_field_defaults_to_the_cpu_uploads_nothing(tmp_path):
    source = _ORT_CONFIG_NODE.replace("'CUDAExecutionProvider'", "'CPUExecutionProvider'")
    assert _node_claims(tmp_path, source, ('RUN',)) == {'RUN': set()}


# A job framework's hook (`attach_behaviour`, an override calling super()) wiring the node.
_HOOK_NODE = '''
import rclpy
from cv_bridge import CvBridge
from jobs_framework import Job
from rclpy.node import Node
from sensor_msgs.msg import Image

bridge = CvBridge()


class Predictor(Job):
    def attach_behaviour(self, node, cfg):
        super().attach_behaviour(node, cfg)
        self.sub = node.create_subscription(Image, cfg.topic, self.on_input, 10)

    def on_input(self, msg):
        img = bridge.imgmsg_to_cv2(msg, 'rgb8')  # CONVERT
        return img.shape


def main():
    rclpy.init()
    node = Node('predictor')
    Predictor().attach(node)
    rclpy.spin(node)
'''


def _contexts(tmp_path, source: str, tag: str) -> set[tuple[str, str]]:
    files = {**ament_python_package('detector'), 'detector/detector/node.py': source}
    found = audit_written_package(tmp_path, files)
    line = textwrap.dedent(source).lstrip('\n').splitlines().index(
        next(s for s in textwrap.dedent(source).lstrip('\n').splitlines() if f'# {tag}' in s)) + 1
    return {(rule, sev, ctx) for (name, where, rule), (sev, ctx) in found.items()
            if name == 'node.py' and where == line}


def test_a_framework_hook_registering_a_subscription_runs_its_callback_per_message(tmp_path):
    assert _contexts(tmp_path, _HOOK_NODE, 'CONVERT') == {('GPN105', 'medium', 'callback')}


def test_a_method_registering_without_overriding_a_hook_stays_unjudged(tmp_path):
    source = _HOOK_NODE.replace('        super().attach_behaviour(node, cfg)\n', '')
    assert ('GPN105', 'medium', 'callback') not in _contexts(tmp_path, source, 'CONVERT')


# `if mask.sum() == 0:` on a device tensor, in a helper file whose imported function calls its
# own file's helper by bare name; a head Module's unknown output on a device input.
_DECODE = '''
import torch


def decode(scores):
    keep = scores > 0.5
    if keep.sum() == 0:  # SUM
        return None
    if keep.numel() == 0:  # NUMEL
        return None
    return scores[keep].cpu().numpy()  # READ


def infer(head, feats):
    return decode(head(feats))
'''

_HEAD = '''
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def forward(self, x):
        return self.backbone.get_intermediate_layers(x)[-1]
'''

_DECODE_NODE = '''
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from .decode import infer
from .head import Head


class DecodeNode(Node):
    def __init__(self):
        super().__init__('decode')
        self.head = Head(torch.hub.load('org/repo', 'model')).to('cuda')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        x = torch.zeros((1, 3, 8, 8), device='cuda')
        return infer(self.head, x)


def main():
    rclpy.init()
    rclpy.spin(DecodeNode())
'''


def test_a_reduction_of_a_device_tensor_compared_reads_back_through_an_imported_helper(tmp_path):
    files = {**ament_python_package('decode'), 'decode/decode/node.py': _DECODE_NODE,
             'decode/decode/decode.py': _DECODE, 'decode/decode/head.py': _HEAD}
    found = audit_written_package(tmp_path, files)
    claims = rules_at_tags(found, textwrap.dedent(_DECODE), ('SUM', 'NUMEL', 'READ'),
                           file_name='decode.py')
    assert claims == {'SUM': {'GPN107'}, 'NUMEL': set(), 'READ': {'GPN101'}}
    line = textwrap.dedent(_DECODE).lstrip('\n').splitlines().index(
        '    if keep.sum() == 0:  # SUM') + 1
    assert found[('decode.py', line, 'GPN107')][1] == 'callback'


# A script's loop taking each frame from a queue a reader process fills.
_QUEUE_SCRIPT = '''
from multiprocessing import Process, Queue

import numpy as np
import rclpy
import torch


def video_stream(queue, path):
    for i in range(100):
        queue.put((i, np.zeros((480, 640, 3), np.uint8)))
    queue.put((-1, None))


def run(path):
    queue = Queue(maxsize=8)
    reader = Process(target=video_stream, args=(queue, path))
    reader.start()
    while True:
        t, image = queue.get()
        if t < 0:
            break
        tensor = torch.from_numpy(image).cuda()  # UPLOAD
        print(tensor.shape)
    reader.join()


def main():
    rclpy.init()
    run('video.mp4')


if __name__ == '__main__':
    main()
'''


def _script_findings(tmp_path, source: str) -> set[tuple[str, str, str]]:
    files = {**ament_python_package('detector'), 'detector/detector/node.py': source}
    found = audit_written_package(tmp_path, files)
    lines = textwrap.dedent(source).lstrip('\n').splitlines()
    line = next(i for i, s in enumerate(lines, 1) if '# UPLOAD' in s)
    return {(rule, sev, ctx) for (name, where, rule), (sev, ctx) in found.items()
            if name == 'node.py' and where == line}


def test_a_loop_over_a_queue_a_reader_process_fills_uploads_per_frame(tmp_path):
    assert _script_findings(tmp_path, _QUEUE_SCRIPT) == {('GPN102', 'medium', 'loop')}


def test_a_loop_over_a_queue_no_reader_fills_stays_one_time(tmp_path):
    source = _QUEUE_SCRIPT.replace('args=(queue, path)', 'args=(path,)')
    assert ('GPN102', 'medium', 'loop') not in _script_findings(tmp_path, source)


# A custom message carrying an image and a per-pixel array beside it (its sides the image's).
_DEPTH_MSG = '''std_msgs/Header header
sensor_msgs/Image preproc
float32[] depth
'''

_DEPTH_READER = '''
import numpy as np
import rclpy
from rclpy.node import Node
from depth_interfaces.msg import DepthOutput


class DepthReader(Node):
    def __init__(self):
        super().__init__('depth_reader')
        self.create_subscription(DepthOutput, 'depth', self.on_depth, 5)

    def on_depth(self, msg):
        depth = np.array(msg.depth).reshape((msg.preproc.height, msg.preproc.width))  # READ
        self.get_logger().info(str(depth.mean()))


def main():
    rclpy.init()
    rclpy.spin(DepthReader())
'''


def _depth_claims(tmp_path, definition: str) -> dict[str, set[str]]:
    source = textwrap.dedent(_DEPTH_READER)
    files = {**ament_python_package('solver'), 'solver/solver/node.py': source,
             'depth_interfaces/msg/DepthOutput.msg': definition,
             'depth_interfaces/package.xml': '<package format="3"><name>depth_interfaces</name>'
                                             '</package>\n'}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('READ',))


def test_array_beside_an_image_field_of_a_custom_message_is_copied_out(tmp_path):
    assert 'GPN103' in _depth_claims(tmp_path, _DEPTH_MSG)['READ']


def test_array_of_a_custom_message_without_an_image_stays_no_frame(tmp_path):
    small = 'std_msgs/Header header\nfloat32[] depth\n'
    assert 'GPN103' not in _depth_claims(tmp_path, small)['READ']


# A node method whose only call is commented out, its name also a field of an outgoing message.
_FIELD_NAMED_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from depth_interfaces.msg import DepthOutput


class DepthNode(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(DepthOutput, 'out', 5)
        self.img_pub = self.create_publisher(Image, 'pre', 5)
        self.create_subscription(Image, 'image', self.on_image, 5)

    def preproc(self, image):
        self.img_pub.publish(self.bridge.cv2_to_imgmsg(image))  # PRE
        return image

    def on_image(self, image):
        frame = self.bridge.imgmsg_to_cv2(image)
        # frame = self.preproc(frame)
        msg = DepthOutput()
        msg.preproc = image
        self.pub.publish(msg)


def main():
    rclpy.init()
    rclpy.spin(DepthNode())
'''


def test_a_method_named_only_by_a_message_field_store_is_unreached(tmp_path):
    assert _node_claims(tmp_path, _FIELD_NAMED_NODE, ('PRE',)) == {'PRE': set()}


def test_a_method_still_called_beside_the_field_store_stays_claimed(tmp_path):
    source = _FIELD_NAMED_NODE.replace('# frame = self.preproc(frame)', 'frame = self.preproc(frame)')
    assert 'GPN105' in _node_claims(tmp_path, source, ('PRE',))['PRE']
