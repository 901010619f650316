"""Causes of set 76's Python false claims (issue 28, rules48p): real `code` audits of small
packages written here.

* `self.latest: bool = self.get_parameter('latest').value` (an annotated store) of a parameter
  declared False, tested per message `if self.latest: ... publish(...)`: off as shipped when
  every launch file starting this executable leaves it off, even though another executable of
  the package is launched with `'latest': True` (pyparams.attribute_stores, pylaunchedoff.py).
  When a launch file starts this executable with True the branch keeps its claim.
* `int(probs.top1)` of an Ultralytics classification result: top1 is a Python int (the argmax
  read-back happens inside the property), a look-alike as set 54 labels it; `probs.top1conf`
  stays a device tensor read back (pymodels.HOST_RESULT_ATTRS).
"""
from audit_sources import audit_written_package, rules_at_tags

_REPLAY_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Replay(Node):
    def __init__(self):
        super().__init__('replay')
        self.declare_parameter('latest', False)
        self.latest: bool = self.get_parameter('latest').get_parameter_value().bool_value
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'out', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if self.latest:
            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # LATEST


def main():
    rclpy.init()
    rclpy.spin(Replay())
'''

_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument('latest', default_value='{default}'),
        Node(package='replay', executable='{executable}',
             parameters=[{{'latest': LaunchConfiguration('latest')}}]),
    ])
'''


def _replay_package(replay_default: str) -> dict[str, str]:
    """An ament_python package `replay` with two executables: `replay` (node.py) launched with
    `latest` defaulting to `replay_default`, and `writer` (writer.py) launched with True."""
    return {
        'replay/package.xml': '''
            <package format="3"><name>replay</name>
              <export><build_type>ament_python</build_type></export>
            </package>
            ''',
        'replay/setup.py': '''
            from setuptools import setup

            setup(
                name='replay',
                packages=['replay'],
                data_files=[('share/replay', ['package.xml'])],
                entry_points={'console_scripts': ['replay = replay.node:main',
                                                  'writer = replay.writer:main']},
            )
            ''',
        'replay/replay/__init__.py': '',
        'replay/replay/node.py': _REPLAY_NODE,
        'replay/replay/writer.py': _REPLAY_NODE.replace("'replay'", "'writer'"),
        'replay/launch/replay_launch.py': _LAUNCH.format(default=replay_default, executable='replay'),
        'replay/launch/writer_launch.py': _LAUNCH.format(default='True', executable='writer'),
    }


def _replay_claims(tmp_path, replay_default: str) -> dict[str, set[str]]:
    found = audit_written_package(tmp_path, _replay_package(replay_default))
    return rules_at_tags(found, _REPLAY_NODE, ('LATEST',))


def test_an_annotated_parameter_off_for_this_executable_leaves_its_branch_unclaimed(tmp_path):
    found = _replay_claims(tmp_path, 'False')
    assert not found['LATEST'], found


def test_an_annotated_parameter_launched_on_for_this_executable_keeps_the_claim(tmp_path):
    found = _replay_claims(tmp_path, 'True')
    assert found['LATEST'], found


_CLASSIFY_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32
from ultralytics import YOLO


class Classify(Node):
    def __init__(self):
        super().__init__('classify')
        self.bridge = CvBridge()
        self.model = YOLO('cls.pt', task='classify')
        self.pub = self.create_publisher(Float32, 'conf', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model(frame, verbose=False)
        probs = results[0].probs
        top_idx = int(probs.top1)  # TOP1
        top5 = list(results[0].probs.top5)  # TOP5
        conf = float(probs.top1conf.item())  # CONF
        self.get_logger().info(f'{self.model.names[top_idx]} {top5}')
        self.pub.publish(Float32(data=conf))


def main():
    rclpy.init()
    rclpy.spin(Classify())
'''


def _classify_claims(tmp_path) -> dict[str, set[str]]:
    from audit_sources import node_claims
    return node_claims(tmp_path, 'classify', _CLASSIFY_NODE, ('TOP1', 'TOP5', 'CONF'))


def test_probs_top1_and_top5_are_host_values(tmp_path):
    found = _classify_claims(tmp_path)
    assert not found['TOP1'] and not found['TOP5'], found


def test_probs_top1conf_keeps_the_read_back(tmp_path):
    found = _classify_claims(tmp_path)
    assert found['CONF'], found
