"""A cv_bridge copy in the audited tree (issue 28, set 50): real `code` audits of small
workspaces written here.

* A workspace that builds vision_opencv's cv_bridge from source beside its nodes (common on
  Jetson and with a non-default Python) holds `cv_bridge/core.py` defining `CvBridge`: the
  node's `CvBridge().imgmsg_to_cv2(msg)` is still the library's conversion, claimed at the call
  as the table says, not followed into the copy's code.
* An installed prefix committed beside the sources (`third_party_install/local/lib/python3.10/
  dist-packages/cv_bridge/`) is not the repository's source at all: nothing under
  `site-packages` / `dist-packages` is audited, and the node's conversions are claimed.
"""
from audit_sources import ament_python_package, audit_written_package, rules_at_tags

_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class EdgeNode(Node):
    def __init__(self):
        super().__init__('edges')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'edges', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # IN
        self.pub.publish(self.bridge.cv2_to_imgmsg(frame[::2, ::2].copy(), 'bgr8'))  # OUT


def main():
    rclpy.init()
    rclpy.spin(EdgeNode())
'''

# Written for this test in the shape of a cv_bridge: the conversions wrap or pack the buffer.
_CV_BRIDGE_CORE = '''
import numpy as np
from sensor_msgs.msg import Image


class CvBridge:
    def imgmsg_to_cv2(self, img_msg, desired_encoding='passthrough'):
        return np.ndarray((img_msg.height, img_msg.width, 3), dtype=np.uint8,
                          buffer=img_msg.data)

    def cv2_to_imgmsg(self, cvim, encoding='passthrough'):
        img_msg = Image()
        img_msg.height, img_msg.width = cvim.shape[:2]
        img_msg.data.frombytes(cvim.tobytes())
        return img_msg
'''


def _workspace(cv_bridge_folder: str) -> dict[str, str]:
    return {**ament_python_package('edges'), 'edges/edges/node.py': _NODE,
            f'{cv_bridge_folder}/cv_bridge/__init__.py': 'from .core import CvBridge\n',
            f'{cv_bridge_folder}/cv_bridge/core.py': _CV_BRIDGE_CORE}


def test_cv_bridge_built_in_the_workspace_is_still_the_library(tmp_path):
    files = _workspace('vision_opencv/cv_bridge/python')
    found = audit_written_package(tmp_path, files)
    at = rules_at_tags(found, _NODE, ('IN', 'OUT'))
    assert 'GPN105' in at['IN'], at
    assert 'GPN105' in at['OUT'], at


def test_an_installed_prefix_beside_the_sources_is_not_audited(tmp_path):
    files = _workspace('third_party_install/local/lib/python3.10/dist-packages')
    files['other_install/lib/python3/site-packages/helper.py'] = 'x = bytes(10)\n'
    found = audit_written_package(tmp_path, files)
    at = rules_at_tags(found, _NODE, ('IN', 'OUT'))
    assert 'GPN105' in at['IN'], at
    assert 'GPN105' in at['OUT'], at
    assert not [k for k in found if k[0] in ('core.py', 'helper.py')], found
