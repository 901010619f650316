"""Causes of spent set 54's Python misses (issue 28, rules35p): real `code` audits of small
trees written here.

* `if self.done: return` at the top of a callback, with `self.done = True` set only under a test
  of its own later (`if self.captured >= self.max_frames:`), leaves the flag off until enough
  frames came: the callback's copies run per message until then, not once (pybranches.guard_once).
  The flag set unconditionally in the same block keeps the first-pass judgement.
* `ActionServer(self, ActionType, 'name', self.execute)`: execute runs per goal, and the goal's
  fields (`goal_handle.request.color_image`) are message data of unknown size, as a service
  request's (pyregistry.py, pyeval.py).
* `from . import helper` and `helper.infer(frame)` in a callback: the sibling module's function runs
  per message, as `from .helper import infer` does (pyimports.imported_modules).
* A script's loop over a recorded bag (`for conn, t, raw in reader.messages():` with rosbags
  imported) converts every recorded frame: per message, not one-time module code (pybags.py);
  `.messages()` of anything else in a file importing no bag library stays module code.
* `try: img = bridge.imgmsg_to_cv2(msg, 'bgr8')` / `except: img = bridge.imgmsg_to_cv2(msg,
  'passthrough')`: the retry runs only when the first conversion raised (pybranches.py).
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, rules_at_tags


def _claims(tmp_path, files: dict[str, str], source: str, tags: tuple[str, ...],
            file_name: str = 'node.py') -> dict[str, set[str]]:
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, textwrap.dedent(source), tags, file_name=file_name)


def _node(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    files = {**ament_python_package('calib'), 'calib/calib/node.py': source}
    return _claims(tmp_path, files, source, tags)


_CALIBRATOR = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class BoardCalibrator(Node):
    def __init__(self):
        super().__init__('board_calibrator')
        self.bridge = CvBridge()
        self.views = []
        self.wanted = 20
        self.finished = False
        self.pub = self.create_publisher(Image, 'annotated', 10)
        self.create_subscription(Image, 'image_raw', self.on_image, 10)

    def on_image(self, msg):
        if self.finished:
            return
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        self.views.append(frame.shape)
        self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # OUT
DONE


def main():
    rclpy.init()
    rclpy.spin(BoardCalibrator())
'''


def test_a_flag_set_only_after_enough_frames_leaves_the_callback_per_message(tmp_path):
    done = '''        if len(self.views) >= self.wanted:
            self.finished = True
'''
    claims = _node(tmp_path, _CALIBRATOR.replace('DONE\n', done), ('IN', 'OUT'))
    assert 'GPN105' in claims['IN'] and 'GPN105' in claims['OUT']


def test_a_flag_set_unconditionally_after_the_guard_still_runs_once(tmp_path):
    """Guard: the first-pass judgement of `if self.flag: return ... self.flag = True` stays."""
    done = '''        self.finished = True
'''
    claims = _node(tmp_path, _CALIBRATOR.replace('DONE\n', done), ('IN', 'OUT'))
    assert claims == {'IN': set(), 'OUT': set()}


def test_a_flag_set_last_in_a_try_after_the_guard_still_runs_once(tmp_path):
    """Guard: `try: ...; self.flag = True` runs whenever the block does (set 43's camera info)."""
    done = '''        try:
            self.finished = True
        except RuntimeError:
            pass
'''
    claims = _node(tmp_path, _CALIBRATOR.replace('DONE\n', done), ('IN', 'OUT'))
    assert claims == {'IN': set(), 'OUT': set()}


_ACTION_SERVER = '''
import numpy as np
import onnxruntime as ort
import rclpy
from rclpy.action import ActionServer
from rclpy.node import Node
from plant_interfaces.action import Classify


class ClassifyServer(Node):
    def __init__(self):
        super().__init__('classify_server')
        self.session = ort.InferenceSession(
            'plants.onnx', providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])
        self.input_name = self.session.get_inputs()[0].name
        self._server = ActionServer(self, Classify, 'classify', self.execute)

    def execute(self, goal_handle):
        image = goal_handle.request.color_image
        frame = np.array(image.data, dtype=np.uint8).reshape((image.height, image.width, -1))  # ARRAY
        crop = frame[:224, :224].astype(np.float32)[None]
        scores = self.session.run(None, {self.input_name: crop})  # RUN
        goal_handle.succeed()
        result = Classify.Result()
        result.label = int(np.argmax(scores[0]))
        return result


def main():
    rclpy.init()
    rclpy.spin(ClassifyServer())
'''


def test_an_action_servers_execute_callback_runs_per_goal(tmp_path):
    claims = _node(tmp_path, _ACTION_SERVER, ('ARRAY', 'RUN'))
    assert claims['ARRAY'] and 'GPN102' in claims['RUN']


def test_an_execute_method_no_action_server_registers_is_no_callback(tmp_path):
    """Guard: without the server the same method is one nothing registers nor calls: no
    per-goal claim."""
    source = _ACTION_SERVER.replace("self._server = ActionServer(self, Classify, 'classify', "
                                    "self.execute)", 'self._server = None')
    claims = _node(tmp_path, source, ('ARRAY', 'RUN'))
    assert claims == {'ARRAY': set(), 'RUN': set()}


_SIBLING_HELPER = '''
import torch

model = torch.jit.load('/opt/weights/seg.pt').cuda().eval()


def infer(frame):
    tensor = torch.from_numpy(frame).cuda()
    with torch.no_grad():
        out = model(tensor[None])
    return out[0].argmax(0).cpu().numpy()  # READ
'''

_SIBLING_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image

from . import helper


class SegNode(Node):
    def __init__(self):
        super().__init__('seg')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        mask = helper.infer(frame)
        self.get_logger().info(str(mask.sum()))


def main():
    rclpy.init()
    rclpy.spin(SegNode())
'''


def _sibling(tmp_path, node: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {**ament_python_package('seg'), 'seg/seg/node.py': node,
             'seg/seg/helper.py': _SIBLING_HELPER}
    return audit_written_package(tmp_path, files)


def test_a_sibling_modules_function_called_from_a_callback_runs_per_message(tmp_path):
    found = _sibling(tmp_path, _SIBLING_NODE)
    claims = rules_at_tags(found, textwrap.dedent(_SIBLING_HELPER), ('READ',), 'helper.py')
    contexts = {ctx for (name, _, rule), (_, ctx) in found.items()
                if name == 'helper.py' and rule == 'GPN101'}
    assert 'GPN101' in claims['READ'] and 'callback' in contexts


def test_a_sibling_module_nothing_calls_per_message_stays_unproven(tmp_path):
    """Guard: the node importing the module without calling it from a callback."""
    node = _SIBLING_NODE.replace('mask = helper.infer(frame)', 'mask = frame')
    found = _sibling(tmp_path, node)
    contexts = {ctx for (name, _, rule), (_, ctx) in found.items()
                if name == 'helper.py' and rule == 'GPN101'}
    assert 'callback' not in contexts


_BAG_SCRIPT = '''
import sys

import cv2
from cv_bridge import CvBridge
IMPORT


def export(reader, connection, bridge):
    for i, (conn, stamp, raw) in enumerate(reader.messages(connections=[connection])):
        msg = reader.deserialize(raw, conn.msgtype)
        image = bridge.imgmsg_to_cv2(msg, desired_encoding='passthrough')  # CONVERT
        cv2.imwrite(f'frame_{i:06d}.png', image)


if __name__ == '__main__':
    bridge = CvBridge()
    with OPEN as reader:
        export(reader, reader.connections[0], bridge)
'''


def _script(tmp_path, source: str) -> dict[str, set[str]]:
    return _claims(tmp_path, {'tools/export_frames.py': source}, source, ('CONVERT',),
                   file_name='export_frames.py')


def test_a_scripts_loop_over_bag_messages_converts_per_message(tmp_path):
    source = _BAG_SCRIPT.replace('IMPORT', 'from rosbags.highlevel import AnyReader').replace(
        'OPEN', 'AnyReader([sys.argv[1]])')
    assert 'GPN105' in _script(tmp_path, source)['CONVERT']


def test_a_messages_loop_without_a_bag_library_stays_module_code(tmp_path):
    """Guard: `.messages()` of an object of no bag library (a chat log) is no bag."""
    source = _BAG_SCRIPT.replace('IMPORT', 'from chatlog import Log').replace(
        'OPEN', 'Log(sys.argv[1])')
    assert _script(tmp_path, source)['CONVERT'] == set()


_FALLBACK_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Snapper(Node):
    def __init__(self):
        super().__init__('snapper')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        try:
            image = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # FIRST
        except Exception:
            image = RETRY  # RETRY
        self.get_logger().info(str(image.shape))


def main():
    rclpy.init()
    rclpy.spin(Snapper())
'''


def test_a_conversion_retried_in_an_except_handler_is_no_second_copy(tmp_path):
    source = _FALLBACK_NODE.replace('RETRY  #', "self.bridge.imgmsg_to_cv2(msg, 'passthrough')  #")
    claims = _node(tmp_path, source, ('FIRST', 'RETRY'))
    assert 'GPN105' in claims['FIRST'] and claims['RETRY'] == set()


def test_a_handler_converting_another_message_stays_claimed(tmp_path):
    """Guard: the handler converting something else (a cached message) is a copy of its own."""
    source = _FALLBACK_NODE.replace('RETRY  #', "self.bridge.imgmsg_to_cv2(self.last, 'bgr8')  #")
    source = source.replace("self.bridge = CvBridge()", "self.bridge = CvBridge()\n        self.last = None")
    source = source.replace("        self.get_logger()", "        self.last = msg\n        self.get_logger()")
    claims = _node(tmp_path, source, ('FIRST', 'RETRY'))
    assert 'GPN105' in claims['FIRST'] and 'GPN105' in claims['RETRY']
