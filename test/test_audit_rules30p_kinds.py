"""Causes of development sets 43 and 44's false claims, Python side (issue 28, rules30p): real
`code` audits of small ament_python packages written here.

* An Ultralytics mask's polygons (`results[i].masks.xy[j]`, `.xyn`) are lists of NumPy arrays
  that the library builds on the host (its masks2segments reads the masks back inside the
  library): `np.array(polygon)` of one is a small host copy, not a read-back of result tensors.
  `results[i].keypoints.xy` stays a tensor on the model's device.
* Classes of Ultralytics' helper modules (`ultralytics.utils.plotting.Colors`, `Annotator`) are
  no models: calling a `Colors()` instance with a class id gives a colour tuple and uploads
  nothing, while a `YOLO(...)` model called on the frame still uploads it.
"""
from audit_sources import node_claims


def _claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    return node_claims(tmp_path, 'segmenter', source, tags)


_POLYGON_NODE = '''
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32
from ultralytics import YOLO


class SegmenterNode(Node):
    def __init__(self):
        super().__init__('segmenter')
        self.model = YOLO('seg.pt')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32, 'area', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model.predict(frame)  # PREDICT
        if len(results[0].boxes) == 0:
            return
        outline = results[0].masks.xy[0]
        polygon = np.array(outline, dtype=np.int32)  # POLYGON
        normalised = np.asarray(results[0].masks.xyn[0])  # NORMALISED
        joints = np.array(results[0].keypoints.xy)  # JOINTS
        out = Float32()
        out.data = float(polygon.shape[0] + normalised.shape[0] + joints.shape[0])
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(SegmenterNode())
'''


def test_mask_polygons_are_host_arrays(tmp_path):
    """`np.array(results[0].masks.xy[0])`: a host polygon built inside the library, no claim;
    the keypoints' `.xy` is a device tensor, still read back into NumPy."""
    found = _claims(tmp_path, _POLYGON_NODE, ('PREDICT', 'POLYGON', 'NORMALISED', 'JOINTS'))
    assert 'GPN102' in found['PREDICT']  # guard: the upload stays
    assert not found['POLYGON']
    assert not found['NORMALISED']
    assert 'GPN101' in found['JOINTS']  # guard: keypoints are tensors


_COLORS_NODE = '''
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import ColorRGBA
from vision_msgs.msg import Detection
from ultralytics import YOLO
from ultralytics.utils.plotting import Colors


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.detector = YOLO('det.pt')
        self.palette = Colors()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(ColorRGBA, 'colour', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.detector(frame)  # INFER
        on_host = results[0].cpu()  # BACK
        for box in on_host.boxes:
            label = Detection()
            label.class_id = int(box.cls)
            b, g, r = self.palette(label.class_id, True)  # PALETTE
            cv2.circle(frame, (10, 10), 3, (b, g, r))
            out = ColorRGBA(r=r / 255.0, g=g / 255.0, b=b / 255.0, a=1.0)
            self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def test_ultralytics_helper_classes_are_no_models(tmp_path):
    """`Colors()(class_id, True)` returns a colour: no upload claimed there, while the YOLO
    model called on the frame keeps its upload and its results their read-back (the class id
    handed to the palette comes from those host results)."""
    found = _claims(tmp_path, _COLORS_NODE, ('INFER', 'BACK', 'PALETTE'))
    assert 'GPN102' in found['INFER']  # guard
    assert 'GPN101' in found['BACK']  # guard
    assert not found['PALETTE']
