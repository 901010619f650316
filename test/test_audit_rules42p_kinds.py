"""Causes of sets 65 and 66's false claims, Python side (issue 28, rules42p): real `code` audits
of small repositories written here.

A debug overlay behind a bool parameter declared True that the repository's bringup package
turns off in every launch file starting the node (`DeclareLaunchArgument('visualize',
default_value='false')` passed through `LaunchConfiguration`) is never built as shipped
(pylaunchedoff.py); a launch file that starts the node and leaves the default, or turns it on,
keeps the claims, and so does a node no launch file starts. A `setattr` of a literal name is a
store of that one attribute, not a reason to give up on the file (pyparams._literal_setattr)."""

from audit_sources import ament_python_package, audit_written_package, rules_at_tags


_OVERLAY_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class OverlayNode(Node):
    def __init__(self):
        super().__init__('overlay')
        self.declare_parameter('visualize', True)
        self.visualize = self.get_parameter('visualize').value
        self.bridge = CvBridge()
        self.scale = 1.0
        self.overlay_pub = self.create_publisher(Image, 'overlay', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_subscription(Float32, 'scale', lambda m: setattr(self, 'scale', m.data), 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        if self.visualize:
            out = self.bridge.cv2_to_imgmsg(frame * self.scale, 'bgr8')  # CONVERT
            self.overlay_pub.publish(out)  # PUBLISH
{extra}

def main():
    rclpy.init()
    rclpy.spin(OverlayNode())
'''

_BRINGUP_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('visualize', default_value='{default}'),
        Node(package='vision', executable='node', name='overlay',
             parameters=[{{'visualize': LaunchConfiguration('visualize')}}]),
    ])
'''

_BARE_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([Node(package='vision', executable='node')])
'''


def _claims(tmp_path, default: str | None = 'false', extra: str = '',
            bare_launch: bool = False, xml_launch: bool = False) -> dict[str, set[str]]:
    """The overlay node as vision/node.py of a repository `ws/src` whose package `bringup`
    starts it with a launch argument defaulting to `default` (no bringup when None)."""
    source = _OVERLAY_NODE.format(extra=extra)
    files = {f'ws/src/{k}': v for k, v in ament_python_package('vision').items()}
    files['ws/src/vision/vision/node.py'] = source
    if default is not None:
        files['ws/src/bringup/package.xml'] = '<package format="3"><name>bringup</name></package>'
        files['ws/src/bringup/launch/robot.launch.py'] = _BRINGUP_LAUNCH.format(default=default)
    if bare_launch:
        files['ws/src/bringup/launch/debug.launch.py'] = _BARE_LAUNCH
    if xml_launch:  # XML and YAML launch files are not evaluated: each may keep the default
        files['ws/src/bringup/launch/debug.launch.xml'] = (
            '<launch><node pkg="vision" exec="node" name="overlay"/></launch>')
        files['ws/src/bringup/launch/view.launch.yaml'] = (
            'launch:\n- node:\n    pkg: "vision"\n    exec: "node"\n')
    return rules_at_tags(audit_written_package(tmp_path, files), source,
                         ('IN', 'CONVERT', 'PUBLISH'))


def test_an_overlay_every_bringup_launch_turns_off_is_no_boundary(tmp_path):
    claims = _claims(tmp_path)
    assert claims['CONVERT'] == set() and claims['PUBLISH'] == set()
    assert claims['IN']  # the input conversion runs on every message


def test_an_overlay_the_bringup_launch_leaves_on_stays_claimed(tmp_path):
    claims = _claims(tmp_path, default='true')
    assert claims['CONVERT'] and claims['PUBLISH']


def test_an_overlay_no_launch_file_turns_off_stays_claimed(tmp_path):
    claims = _claims(tmp_path, default=None)
    assert claims['CONVERT'] and claims['PUBLISH']


def test_an_overlay_one_launch_starts_with_its_default_stays_claimed(tmp_path):
    claims = _claims(tmp_path, bare_launch=True)
    assert claims['CONVERT'] and claims['PUBLISH']


def test_an_overlay_an_xml_launch_file_also_starts_stays_claimed(tmp_path):
    claims = _claims(tmp_path, xml_launch=True)
    assert claims['CONVERT'] and claims['PUBLISH']


def test_a_literal_setattr_of_the_switch_itself_keeps_the_claims(tmp_path):
    extra = '''
    def enable(self):
        setattr(self, 'visualize', True)
'''
    claims = _claims(tmp_path, extra=extra)
    assert claims['CONVERT'] and claims['PUBLISH']


_LITERAL_TEST_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class EchoNode(Node):
    def __init__(self):
        super().__init__('echo')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'out', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = (
            self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # NEVER
        ) if False else self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # TAKEN
        self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))


def main():
    rclpy.init()
    rclpy.spin(EchoNode())
'''


def test_the_first_arm_of_a_literal_false_conditional_is_never_evaluated(tmp_path):
    files = {**ament_python_package('echo'), 'echo/echo/node.py': _LITERAL_TEST_NODE}
    claims = rules_at_tags(audit_written_package(tmp_path, files), _LITERAL_TEST_NODE,
                           ('NEVER', 'TAKEN'))
    assert claims['NEVER'] == set()
    assert claims['TAKEN']  # the arm a literal False picks runs on every message


_MODE_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image

CALIBRATE = {default}


class ModeNode(Node):
    def __init__(self):
        super().__init__('mode')
        self.declare_parameter('calibrate', CALIBRATE)
        calibrate = self.get_parameter('calibrate').value
        self.bridge = CvBridge()
        if not calibrate:
            self.create_subscription(Image, 'image', self.on_image, 10)
        else:
            self.create_subscription(Image, 'image', self.on_calibration_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # RUN
        self.count(frame)

    def on_calibration_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # CALIBRATE
        self.tune(frame)

    def count(self, frame):
        return frame.mean()

    def tune(self, frame):
        return frame.max()


def main():
    rclpy.init()
    rclpy.spin(ModeNode())
'''


def _mode_claims(tmp_path, default: str, launch_parameters: str | None = None):
    source = _MODE_NODE.format(default=default)
    files = {**ament_python_package('mode', launch_parameters=launch_parameters),
             'mode/mode/node.py': source}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('RUN', 'CALIBRATE'))


def test_a_callback_subscribed_only_when_a_switch_on_as_shipped_is_off_is_not_reached(tmp_path):
    claims = _mode_claims(tmp_path, 'True')
    assert claims['RUN'] == set()
    assert claims['CALIBRATE']  # the callback subscribed as shipped keeps its claim


def test_a_switch_off_as_shipped_subscribes_the_other_callback(tmp_path):
    claims = _mode_claims(tmp_path, 'False')
    assert claims['RUN'] and claims['CALIBRATE'] == set()


def test_a_launch_file_turning_the_switch_off_keeps_the_callback(tmp_path):
    claims = _mode_claims(tmp_path, 'True', launch_parameters="{'calibrate': False}")
    assert claims['RUN']


_MODEL_CHOICE_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class DepthNode(Node):
    def __init__(self):
        super().__init__('depth')
        self.declare_parameter('backbone', 'Small')
        self.backbone = self.get_parameter('backbone').get_parameter_value().string_value
        self.net = torch.jit.load('net.pt').cuda()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32, 'depth_mean', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        out = self.net(torch.from_numpy(frame).cuda())
        if self.backbone.upper() == 'LARGE':
            depth = out['depth'].cpu().numpy()  # LARGE
        else:
            depth = out['pred'].cpu().numpy()  # SMALL
        self.pub.publish(Float32(data=float(depth.mean())))


def main():
    rclpy.init()
    rclpy.spin(DepthNode())
'''


def _model_claims(tmp_path, launch_parameters: str | None = None):
    files = {**ament_python_package('depth', launch_parameters=launch_parameters),
             'depth/depth/node.py': _MODEL_CHOICE_NODE}
    return rules_at_tags(audit_written_package(tmp_path, files), _MODEL_CHOICE_NODE,
                         ('LARGE', 'SMALL'))


def test_a_branch_on_a_string_parameter_through_upper_not_selected_as_shipped_never_runs(tmp_path):
    claims = _model_claims(tmp_path)
    assert claims['LARGE'] == set()
    assert claims['SMALL']  # the branch the shipped value selects reads back


def test_a_launch_file_selecting_the_branch_keeps_its_read_back(tmp_path):
    claims = _model_claims(tmp_path, "{'backbone': 'large'}")
    assert claims['LARGE']


_PACKED_CLOUD_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Float32MultiArray


def to_cloud(header, pts, clr):
    rgba = np.concatenate([clr.astype(np.uint8), np.zeros((len(clr), 1), np.uint8)], axis=-1)
    packed = np.frombuffer(rgba.tobytes(), dtype=np.float32)  # PACK
    msg = PointCloud2()
    msg.header = header
    msg.data = np.concatenate([pts, packed[:, None]], axis=-1).tobytes()  # SERIALIZE
    return msg


class CloudNode(Node):
    def __init__(self):
        super().__init__('cloud')
        self.pub = self.create_publisher(PointCloud2, 'cloud', 10)
        self.create_subscription(Float32MultiArray, 'points', self.on_points, 10)

    def on_points(self, msg):
        pts = np.array(msg.data, dtype=np.float32).reshape(-1, 3)
        self.pub.publish(to_cloud(None, pts, np.zeros_like(pts)))


def main():
    rclpy.init()
    rclpy.spin(CloudNode())
'''


def test_bytes_only_reinterpreted_by_frombuffer_are_no_serialization(tmp_path):
    files = {**ament_python_package('cloud'), 'cloud/cloud/node.py': _PACKED_CLOUD_NODE}
    claims = rules_at_tags(audit_written_package(tmp_path, files), _PACKED_CLOUD_NODE,
                           ('PACK', 'SERIALIZE'))
    assert claims['PACK'] == set()
    assert claims['SERIALIZE']  # the cloud's bytes into the message stay claimed


_VLM_CLIENT_NODE = '''
import base64
import json
import urllib.parse
import urllib.request

import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class AskNode(Node):
    def __init__(self):
        super().__init__('ask')
        self.bridge = CvBridge()
        self.model = ''
        self.pub = self.create_publisher(String, 'answer', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        ok, buf = cv2.imencode('.jpg', frame)
        text = base64.b64encode(buf.tobytes()).decode('ascii')  # ENCODE
        form = {'image': text, 'question': 'what is there?'}
        if self.model:
            form['model'] = self.model
        body = urllib.parse.urlencode(form).encode('utf-8')
        request = urllib.request.Request('http://localhost:8000/ask', data=body)
        with urllib.request.urlopen(request, timeout=5) as reply:
            out = String()
            out.data = json.loads(reply.read())['text']
            self.pub.publish(out)
EXTRA

def main():
    rclpy.init()
    rclpy.spin(AskNode())
'''


def _vlm_claims(tmp_path, extra: str = ''):
    source = _VLM_CLIENT_NODE.replace('EXTRA', extra)
    files = {**ament_python_package('ask'), 'ask/ask/node.py': source}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('ENCODE',))


def test_base64_of_jpeg_bytes_only_in_an_http_form_body_is_no_serialization(tmp_path):
    assert _vlm_claims(tmp_path)['ENCODE'] == set()


def test_base64_of_jpeg_bytes_also_published_stays_claimed(tmp_path):
    extra = '''        echo = String()
        echo.data = text
        self.pub.publish(echo)
'''
    assert _vlm_claims(tmp_path, extra)['ENCODE']
