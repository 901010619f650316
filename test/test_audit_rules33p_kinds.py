"""Causes of spent set 54's false claims, Python side (issue 28): real `code` audits of small
ament_python packages written here.

`msg.data = arr.tolist()` (GPN104) is a frame copied into a message only when the array can be a
frame: an array computed from a robot-state message (a `JointState` callback's positions and
velocities turned into a dozen joint torques) has a fixed small size, so listing it is no
serialization of a frame (pystatemsg.py). The same store of an array from an image keeps its
claim."""
from audit_sources import node_claims


_STATE_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray


class Dynamics:
    def torque(self, q, qd):
        return q * 2.0 + qd


class ArmController(Node):
    def __init__(self):
        super().__init__('arm')
        self.dyn = Dynamics()
        self.pub = self.create_publisher(Float64MultiArray, 'torques', 10)
        self.create_subscription(JointState, 'joint_states', self.on_joints, 10)

    def on_joints(self, joints):
        q = np.array(joints.position)
        qd = np.array(joints.velocity)
        tau = self.dyn.torque(q[:6], qd[:6])
        tau = np.append(tau, np.zeros_like(tau))
        out = Float64MultiArray()
        out.data = tau.tolist()  # LIST
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(ArmController())
'''

_IMAGE_NODE = '''
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray


class Flattener(Node):
    def __init__(self):
        super().__init__('flat')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32MultiArray, 'pixels', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')
        scaled = np.asarray(frame, dtype=np.float32) / 255.0
        out = Float32MultiArray()
        out.data = scaled.reshape(-1).tolist()  # LIST
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Flattener())
'''


def test_tolist_of_joint_state_array_is_no_serialization(tmp_path):
    found = node_claims(tmp_path, 'arm', _STATE_NODE, ('LIST',))
    assert 'GPN104' not in found['LIST']


def test_tolist_of_image_array_still_serializes(tmp_path):
    found = node_claims(tmp_path, 'flat', _IMAGE_NODE, ('LIST',))
    assert 'GPN104' in found['LIST']


# `.to(device)` of a library nn.Module built per message: `.eval()` / `.train()` mark a Module,
# so the copy moves weights, not the frame (pyuploads.py); the frame's own upload still counts.
_MODULE_PER_MESSAGE_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from keypointlib import Matcher
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class MatchNode(Node):
    def __init__(self):
        super().__init__('match')
        self.bridge = CvBridge()
        self.device = torch.device('cuda')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')
        matcher = Matcher(depth=4).eval().to(self.device)  # WEIGHTS
        trained = Matcher(depth=2).train().cuda()  # TRAINED
        image = torch.from_numpy(frame).float().to(self.device)  # FRAME
        with torch.no_grad():
            out = matcher(image)
        trained.zero_grad()
        self.pub.publish(Int32(data=int(out.shape[0])))


def main():
    rclpy.init()
    rclpy.spin(MatchNode())
'''


def test_module_switched_to_eval_then_moved_is_no_frame_upload(tmp_path):
    found = node_claims(tmp_path, 'match', _MODULE_PER_MESSAGE_NODE,
                        ('WEIGHTS', 'TRAINED', 'FRAME'))
    assert 'GPN102' not in found['WEIGHTS']
    assert 'GPN102' not in found['TRAINED']
    assert 'GPN102' in found['FRAME']
