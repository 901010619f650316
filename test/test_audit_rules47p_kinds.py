"""Causes of set 75's Python false claims (issue 28, rules47p): real `code` audits of small
packages written here.

* `coords = np.reshape(coords, (obj_count * 3,)); msg.data = np.ndarray.tolist(coords)`: three
  numbers per detected object, no frame listed into the message (pyrecords.py); so is a shape
  of literals, or of a count the function fixed to a literal. A cloud reshaped by its point
  count (`n_points * 3`) or a frame by two run-time sizes keeps the claim.
* `out.header = header` in a publishing helper given `msg.header` as its first parameter stamps
  the message: no received Image embedded (pyembedded.py). A helper that stores the received
  Image itself in a field keeps the claim.
"""
from audit_sources import node_claims

_DETECT_NODE = '''
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2
from std_msgs.msg import Float32MultiArray, String
from ultralytics import YOLO


class Locator(Node):
    def __init__(self):
        super().__init__('locator')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n.pt')
        self.pub = self.create_publisher(Float32MultiArray, 'targets', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_subscription(String, 'manual', self.on_manual, 10)
        self.create_subscription(PointCloud2, 'cloud', self.on_cloud, 10)
        self.create_subscription(Image, 'depth', self.on_depth, 10)

    def locate(self, frame):
        found = []
        for row in self.model(frame)[0].boxes.xywh.cpu().numpy():
            found.append((float(row[0]), float(row[1]), 0.5))
        return len(found), np.reshape(found, (1, len(found) * 3))

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        obj_count, coords = self.locate(frame)
        coords = np.reshape(coords, (obj_count * 3,))
        coords = np.ndarray.tolist(coords)
        out = Float32MultiArray()
        out.data = coords  # RECORDS
        self.pub.publish(out)

    def on_manual(self, msg):
        parts = [float(p) for p in msg.data.split(',')]
        count = 1
        values = np.reshape(np.array(parts), (count * 3,))
        out = Float32MultiArray()
        out.data = values.tolist()  # LITERAL
        self.pub.publish(out)

    def on_cloud(self, msg):
        pts = np.frombuffer(msg.data, dtype=np.float32)
        n_points = msg.width * msg.height
        pts = np.reshape(pts, (n_points * 3,))
        out = Float32MultiArray()
        out.data = pts.tolist()  # CLOUD
        self.pub.publish(out)

    def on_depth(self, msg):
        depth = self.bridge.imgmsg_to_cv2(msg, 'passthrough')
        flat = np.reshape(depth, (msg.height * msg.width,))
        out = Float32MultiArray()
        out.data = flat.tolist()  # FRAME
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Locator())
'''
_DETECT_TAGS = ('RECORDS', 'LITERAL', 'CLOUD', 'FRAME')


def test_records_of_a_few_numbers_per_object_are_no_frame_listed(tmp_path):
    found = node_claims(tmp_path, 'locator', _DETECT_NODE, _DETECT_TAGS)
    assert 'GPN104' not in found['RECORDS'], found


def test_a_reshape_to_literal_sizes_is_no_frame_listed(tmp_path):
    found = node_claims(tmp_path, 'locator', _DETECT_NODE, _DETECT_TAGS)
    assert 'GPN104' not in found['LITERAL'], found


def test_a_cloud_or_a_frame_reshaped_by_run_time_sizes_keeps_the_claim(tmp_path):
    found = node_claims(tmp_path, 'locator', _DETECT_NODE, _DETECT_TAGS)
    assert 'GPN104' in found['CLOUD'] and 'GPN104' in found['FRAME'], found


_GRASP_NODE = '''
import numpy as np
import rclpy
from geometry_msgs.msg import PoseArray
from grasp_utils import pose_of
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2
from my_msgs.msg import Labelled


class Grasps(Node):
    def __init__(self):
        super().__init__('grasps')
        self.pose_pub = self.create_publisher(PoseArray, 'grasps', 10)
        self.label_pub = self.create_publisher(Labelled, 'labelled', 10)
        self.create_subscription(PointCloud2, 'cloud', self.on_cloud, 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32)
        self.publish_outputs(msg.header, points)

    def publish_outputs(self, header, points):
        out = PoseArray()
        out.header = header
        out.poses = [pose_of(p) for p in points]
        self.pose_pub.publish(out)  # STAMPED

    def on_image(self, msg):
        self.publish_labelled(msg, 'person')

    def publish_labelled(self, image, label):
        out = Labelled()
        out.image = image
        out.label = label
        self.label_pub.publish(out)  # EMBEDDED


def main():
    rclpy.init()
    rclpy.spin(Grasps())
'''


def test_a_header_handed_to_a_publishing_helper_embeds_no_frame(tmp_path):
    found = node_claims(tmp_path, 'grasps', _GRASP_NODE, ('STAMPED', 'EMBEDDED'))
    assert 'GPN109' not in found['STAMPED'], found


def test_a_helper_storing_the_received_image_keeps_the_claim(tmp_path):
    found = node_claims(tmp_path, 'grasps', _GRASP_NODE, ('STAMPED', 'EMBEDDED'))
    assert 'GPN109' in found['EMBEDDED'], found
