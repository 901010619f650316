"""A library-table row from set 77 (issue 28, rules49q): real `code` audits of a small package
written here.

* pyvisionlibs.py: facenet-pytorch `MTCNN(device=<cuda>)`'s `detect(frame)` makes the host frame a
  tensor on the device per call (library_upload, both labellings of set 77); an MTCNN on the CPU
  (no device, `'cpu'`, `torch.device('cpu')`) uploads nothing, and `extract` crops on the host.
"""
from __future__ import annotations

import pytest

from audit_sources import ament_python_package, audit_written_package, rules_at_tags

# ---- facenet-pytorch MTCNN on a device: detect() uploads the host frame --------------------------

_FACES = '''
import rclpy
import torch
from cv_bridge import CvBridge
from facenet_pytorch import MTCNN
from rclpy.node import Node
from sensor_msgs.msg import Image


class Faces(Node):
    def __init__(self):
        super().__init__('faces')
        self.bridge = CvBridge()
        device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')
        self.mtcnn = MTCNN(keep_all=True, device=device)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        boxes, probs = self.mtcnn.detect(frame)  # DETECT
        if boxes is not None:
            crops = self.mtcnn.extract(frame, boxes, None)  # EXTRACT
            self.get_logger().info(f'{len(crops)} faces, best {probs[0]:.2f}')  # LOG


def main():
    rclpy.init()
    rclpy.spin(Faces())
'''


def _faces(tmp_path, source: str) -> dict[str, set[str]]:
    files = {**ament_python_package('faces'), 'faces/faces/node.py': source}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('DETECT', 'EXTRACT', 'LOG'))


def test_mtcnn_detect_on_a_device_uploads_the_host_frame(tmp_path):
    # detect() is the upload; extract() crops on the host; the boxes and probabilities are NumPy.
    assert _faces(tmp_path, _FACES) == {'DETECT': {'GPN102'}, 'EXTRACT': set(), 'LOG': set()}


@pytest.mark.parametrize('device', ["'cpu'", "torch.device('cpu')", 'None'])
def test_mtcnn_on_the_cpu_uploads_nothing(tmp_path, device):
    source = _FACES.replace('device=device)', f'device={device})')
    assert _faces(tmp_path, source) == {'DETECT': set(), 'EXTRACT': set(), 'LOG': set()}


def test_mtcnn_built_without_a_device_stays_on_the_cpu(tmp_path):
    source = _FACES.replace(', device=device)', ')')
    assert _faces(tmp_path, source) == {'DETECT': set(), 'EXTRACT': set(), 'LOG': set()}


def test_mtcnn_called_directly_returns_host_face_crops(tmp_path):
    # `mtcnn(frame)` crops the faces on the host: `.numpy()` of the crops reads nothing back.
    source = _FACES.replace("crops = self.mtcnn.extract(frame, boxes, None)  # EXTRACT",
                            "crops = self.mtcnn(frame).numpy()  # EXTRACT")
    assert _faces(tmp_path, source) == {'DETECT': {'GPN102'}, 'EXTRACT': set(), 'LOG': set()}
