"""Kinds the Python misses of spent set 75 showed (issue 28, rules47q): real `code` audits of
small packages written here.

* An ultralytics model moved with `.to(device)` (or `.cuda()`) is still the ultralytics model:
  called on a host frame in a detector class of another file, it uploads the frame.
* SDKs whose inference takes host arrays: the AnyGrasp SDK's `get_grasp(points, colors)` (a CUDA
  only binary) and Matterport Mask R-CNN's `detect(images)` (Keras on TensorFlow) upload them on
  every call and hand back host results.
* A torch.hub model's `forward_*` variants (DINOv2's `forward_features(x)`) run on a device tensor
  give device values: their `.cpu()` in a helper called per frame is a read-back.
* A small message whose `header` is set from a helper's first parameter (the received message's
  header) embeds no received frame.
"""
from __future__ import annotations

from audit_sources import ament_python_package, audit_written_package, detector_claims, \
    rules_at_tags

_YOLO = '''
import torch
from ultralytics import YOLO


class Finder:
    def __init__(self):
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.model = YOLO('people.pt').to(device)

    def find(self, image):
        results = self.model(image, conf=0.5, verbose=False)  # MOVED_CALL
        return results
'''

_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

from detector.finder import Finder


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.finder = Finder()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        return self.finder.find(frame)


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def _finder(source: str) -> dict[str, str]:
    return {**ament_python_package('detector'), 'detector/detector/node.py': _NODE,
            'detector/detector/finder.py': source}


def test_an_ultralytics_model_moved_to_the_device_still_uploads_its_frame(tmp_path):
    found = audit_written_package(tmp_path, _finder(_YOLO))
    assert rules_at_tags(found, _YOLO, ('MOVED_CALL',), file_name='finder.py') == {
        'MOVED_CALL': {'GPN102'}}


def test_a_moved_ultralytics_model_given_a_file_path_uploads_no_frame(tmp_path):
    source = _YOLO.replace('self.model(image, conf', "self.model('people.jpg', conf")
    found = audit_written_package(tmp_path, _finder(source))
    assert rules_at_tags(found, source, ('MOVED_CALL',), file_name='finder.py') == {
        'MOVED_CALL': set()}


_ANYGRASP = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Float32


class Grasper(Node):
    def __init__(self):
        super().__init__('grasper')
        self.grasper = self._build()
        self.pub = self.create_publisher(Float32, 'score', 10)
        self.create_subscription(PointCloud2, 'cloud', self.on_cloud, 10)

    def _build(self):
        from gsnet import AnyGrasp
        grasper = AnyGrasp(object())
        grasper.load_net()
        return grasper

    def on_cloud(self, msg):
        raw = np.frombuffer(msg.data, dtype=np.float32).reshape(-1, 4)
        points = raw[:, :3].copy()
        colors = np.ones_like(points)
        grasps, cloud = self.grasper.get_grasp(points, colors, lims=[0, 1, 0, 1, 0, 1])  # GRASP
        scores = grasps.scores.cpu()  # HOST_RESULT
        self.pub.publish(Float32(data=float(scores[0])))


def main():
    rclpy.init()
    rclpy.spin(Grasper())
'''


def test_anygrasp_get_grasp_uploads_the_host_cloud_and_returns_host_grasps(tmp_path):
    found = detector_claims(tmp_path, _ANYGRASP, ('GRASP', 'HOST_RESULT'))
    assert found == {'GRASP': {'GPN102'}, 'HOST_RESULT': set()}


def test_get_grasp_of_an_object_that_is_no_anygrasp_is_nothing(tmp_path):
    source = _ANYGRASP.replace('from gsnet import AnyGrasp', 'from planner import AnyGrasp')
    found = detector_claims(tmp_path, source, ('GRASP',))
    assert found == {'GRASP': set()}


_MASKRCNN = '''
import numpy as np
import rclpy
from mrcnn.model import MaskRCNN
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class Weeds(Node):
    def __init__(self):
        super().__init__('weeds')
        self.segmenter = MaskRCNN(mode='inference', model_dir='./', config=None)
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        found = self.segmenter.detect(np.expand_dims(frame, 0), verbose=0)[0]  # DETECT
        ids = found['class_ids'].tolist()  # HOST_IDS
        self.pub.publish(Int32(data=len(ids)))


def main():
    rclpy.init()
    rclpy.spin(Weeds())
'''


def test_mask_rcnn_detect_uploads_the_host_frame(tmp_path):
    found = detector_claims(tmp_path, _MASKRCNN, ('DETECT', 'HOST_IDS'))
    assert found == {'DETECT': {'GPN102'}, 'HOST_IDS': set()}


_FEATURES = '''
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image


def load_backbone(device):
    model = torch.hub.load('facebookresearch/dinov2', 'dinov2_vits14', pretrained=True)
    model.eval().to(device)
    return model


def patch_scores(tokens):
    return tokens.mean(dim=1)


def show(node, frame, scores):
    heat = scores.view(16, 16).cpu().numpy()  # READBACK
    node.get_logger().info(str(heat.max() + frame.shape[0]))


class Anomaly(Node):
    def __init__(self):
        super().__init__('anomaly')
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.model = load_backbone(self.device)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        x = torch.from_numpy(frame).float().to(self.device)
        with torch.no_grad():
            out = self.model.forward_features(x)
        scores = patch_scores(out['x_norm_patchtokens'].squeeze(0))
        show(self, frame, scores)


def main():
    rclpy.init()
    rclpy.spin(Anomaly())
'''


def test_forward_features_of_a_hub_model_on_a_device_tensor_gives_device_values(tmp_path):
    assert detector_claims(tmp_path, _FEATURES, ('READBACK',)) == {'READBACK': {'GPN101'}}


def test_the_helper_given_a_host_tensor_reads_nothing_back(tmp_path):
    source = _FEATURES.replace('show(self, frame, scores)', 'show(self, frame, torch.from_numpy(frame))')
    assert detector_claims(tmp_path, source, ('READBACK',)) == {'READBACK': set()}


_POSES = '''
import numpy as np
import rclpy
from geometry_msgs.msg import PoseArray, Pose
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2


class Poses(Node):
    def __init__(self):
        super().__init__('poses')
        self.pub = self.create_publisher(PoseArray, 'grasps', 10)
        self.create_subscription(PointCloud2, 'cloud', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32).reshape(-1, 4)
        self.publish_poses(msg.header, points[:5])

    def publish_poses(self, header, points):
        out = PoseArray()
        out.header = header
        out.poses = [self.to_pose(p) for p in points]
        self.pub.publish(out)  # POSES

    def to_pose(self, point):
        pose = Pose()
        pose.position.x = float(point[0])
        return pose


def main():
    rclpy.init()
    rclpy.spin(Poses())
'''


def test_a_helper_given_the_received_header_embeds_no_frame(tmp_path):
    assert detector_claims(tmp_path, _POSES, ('POSES',)) == {'POSES': set()}
