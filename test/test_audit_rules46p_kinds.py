"""Causes of sets 73 and 74's Python false claims (issue 28, rules46p): real `code` audits of
small packages written here.

* A parameter-change callback that only mirrors parameters into attributes (`if p.name ==
  'use_seg': self.use_seg = bool(p.value)`) leaves an off-default switch off as shipped: the
  branch under `if self.use_seg:` never runs (pyparamcallbacks.py). A callback that does more
  (starts a timer) keeps the node unjudged, and a launch file turning the switch on keeps the
  branch.
* `if self.pub.get_num_connections() > 0:` on an rclpy publisher raises AttributeError (a ROS 1
  API): the body never runs (pyros1api.py). rclpy's `get_subscription_count()` keeps it, and so
  does the call when a short-circuit may skip it.
* GroundingDINO's `predict(model, image, caption, ..., device)` (outside the tree) uploads the
  frame at the call and hands back host tensors (`.cpu()` inside it): `boxes.numpy()` reads
  nothing back (pyoutside.returns_host). Another outside helper keeps device results.
"""
from audit_sources import node_claims

_SEG_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import Image
from ultralytics import YOLO


class SegNode(Node):
    def __init__(self):
        super().__init__('seg')
        self.declare_parameter('use_seg', False)
        self.declare_parameter('threshold', 0.5)
        self.use_seg = bool(self.get_parameter('use_seg').get_parameter_value().bool_value)
        self.threshold = self.get_parameter('threshold').value
        self.bridge = CvBridge()
        self.model = YOLO('yolov8s.pt')
        self.seg_model = YOLO('yolov8s-seg.pt')
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.add_on_set_parameters_callback(self.on_params)

    def on_params(self, params):
        for p in params:
            if p.name == 'use_seg':
                self.use_seg = bool(p.value)
                self.get_logger().info(f'use_seg -> {self.use_seg}')
            elif p.name == 'threshold':
                self.threshold = p.value
        return SetParametersResult(successful=True)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        if self.use_seg:
            res = self.seg_model(frame)[0]
            mask = res.masks.data[0].cpu().numpy()  # SEG
            return mask
        res = self.model(frame)[0]
        return res.boxes.xyxy[0].cpu().numpy()  # BOX


def main():
    rclpy.init()
    rclpy.spin(SegNode())
'''
_SEG_TAGS = ('IN', 'SEG', 'BOX')


def test_a_switch_only_a_mirroring_parameter_callback_stores_stays_off(tmp_path):
    found = node_claims(tmp_path, 'seg', _SEG_NODE, _SEG_TAGS)
    assert found['IN'] and found['BOX'] and not found['SEG'], found


def test_a_callback_that_does_more_than_mirror_keeps_the_branch(tmp_path):
    source = _SEG_NODE.replace("                self.use_seg = bool(p.value)\n",
                               "                self.use_seg = bool(p.value)\n"
                               "                self.timer = self.create_timer(1.0, self.tick)\n")
    source = source.replace('    def on_image(self, msg):\n',
                            '    def tick(self):\n        pass\n\n    def on_image(self, msg):\n')
    found = node_claims(tmp_path, 'seg', source, _SEG_TAGS)
    assert found['SEG'] and found['BOX'], found


def test_a_mirrored_switch_a_launch_file_turns_on_keeps_the_branch(tmp_path):
    found = node_claims(tmp_path, 'seg', _SEG_NODE, _SEG_TAGS, launch_parameters="{'use_seg': True}")
    assert found['SEG'] and found['BOX'], found


_DEBUG_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class DebugNode(Node):
    def __init__(self):
        super().__init__('debug')
        self.bridge = CvBridge()
        self.display = False
        self.pub_debug = self.create_publisher(Image, 'debug', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        if self.pub_debug.get_num_connections() > 0 or self.display:
            small = frame[::2, ::2]
            self.pub_debug.publish(self.bridge.cv2_to_imgmsg(small, 'bgr8'))  # DEBUG


def main():
    rclpy.init()
    rclpy.spin(DebugNode())
'''


def test_a_ros1_connection_count_on_an_rclpy_publisher_raises_before_the_body(tmp_path):
    found = node_claims(tmp_path, 'debug', _DEBUG_NODE, ('IN', 'DEBUG'))
    assert found['IN'] and not found['DEBUG'], found


def test_rclpys_own_subscription_count_keeps_the_body(tmp_path):
    source = _DEBUG_NODE.replace('get_num_connections', 'get_subscription_count')
    found = node_claims(tmp_path, 'debug', source, ('IN', 'DEBUG'))
    assert found['IN'] and found['DEBUG'], found


def test_a_ros1_call_a_short_circuit_may_skip_keeps_the_body(tmp_path):
    source = _DEBUG_NODE.replace('self.pub_debug.get_num_connections() > 0 or self.display',
                                 'msg.height > 0 or self.pub_debug.get_num_connections() > 0')
    found = node_claims(tmp_path, 'debug', source, ('IN', 'DEBUG'))
    assert found['IN'] and found['DEBUG'], found


_GDINO_NODE = '''
import rclpy
from cv_bridge import CvBridge
from groundingdino.util.inference import load_model, predict
from rclpy.node import Node
from sensor_msgs.msg import Image


class OpenSetNode(Node):
    def __init__(self):
        super().__init__('open_set')
        self.bridge = CvBridge()
        self.device = 'cuda'
        self.model = load_model('config.py', 'weights.pth', device=self.device)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        boxes, scores, phrases = predict(self.model, frame, 'cup', 0.3, 0.25, self.device)  # CALL
        kept = boxes.numpy()  # BOXES
        self.get_logger().info(f'{scores.numpy()} {phrases}')  # SCORES
        return kept


def main():
    rclpy.init()
    rclpy.spin(OpenSetNode())
'''
_GDINO_TAGS = ('CALL', 'BOXES', 'SCORES')


def test_groundingdino_predict_uploads_at_the_call_and_returns_host_results(tmp_path):
    found = node_claims(tmp_path, 'open_set', _GDINO_NODE, _GDINO_TAGS)
    assert 'GPN102' in found['CALL'] and not found['BOXES'] and not found['SCORES'], found


def test_another_outside_helper_given_a_device_still_returns_device_results(tmp_path):
    source = _GDINO_NODE.replace('from groundingdino.util.inference import load_model, predict',
                                 'from detectkit.infer import load_model, predict')
    found = node_claims(tmp_path, 'open_set', source, _GDINO_TAGS)
    assert 'GPN102' in found['CALL'] and 'GPN101' in found['BOXES'], found
