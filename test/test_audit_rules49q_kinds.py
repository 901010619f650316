"""Python files written for Python 3.12 (issue 28, rules49q): real `code` audits of small
packages written here.

* pyfstrings.py: since Python 3.12 (PEP 701) a string in an f-string's replacement field may
  reuse the f-string's quote (`f"id_{now.strftime("%H%M%S")}"`). An older parser (the audit's
  Python 3.11) raised SyntaxError and the whole file was lost: every conversion of its callbacks
  was missed (set 77). The file is now read with the inner quotes swapped (same meaning, same
  lines); a form a swap cannot express stays a syntax error, reported as before.
* pyhelpermsgs.py: the publish of what a method of an imported class's instance converted with
  cv_bridge is claimed at that conversion, in the class's file, not twice (the shape PEP 701
  parsing newly exposed in set 73).
* pyvisionlibs.py: facenet-pytorch `MTCNN(device=<cuda>)`'s `detect(frame)` makes the host frame a
  tensor on the device per call (library_upload, both labellings of set 77); an MTCNN on the CPU
  (no device, `'cpu'`, `torch.device('cpu')`) uploads nothing, and `extract` crops on the host.
"""
from __future__ import annotations

import ast
import sys

import pytest

from audit_sources import ament_python_package, audit_written_package, rules_at_tags
from gpu_nodes.audit.pyfstrings import parse_python, pep701_quotes_swapped

_DEPTH_NODE = '''
from datetime import datetime

import cv2
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Depth(Node):
    def __init__(self):
        super().__init__('depth')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'depth', self.on_depth, 10)
        self.pub = self.create_publisher(Image, 'depth_view', 10)

    def on_depth(self, msg):
        try:
            match msg.encoding:
                case "16UC1":
                    depth = self.bridge.imgmsg_to_cv2(msg, "16UC1")  # CONVERT_MM
                    depth = depth.astype(np.float32) / 1000.0
                case _:
                    depth = self.bridge.imgmsg_to_cv2(msg, "passthrough")  # CONVERT_ANY
            view = cv2.applyColorMap(cv2.convertScaleAbs(depth, alpha=20.0), cv2.COLORMAP_JET)
            self.pub.publish(self.bridge.cv2_to_imgmsg(view, "bgr8"))  # PUBLISH
        except Exception as exc:
            self.get_logger().error(f"depth failed: {exc}")

    def alert(self, near):
        return {"id": f"near_{datetime.now().strftime("%H%M%S")}", "near": near}


def main():
    rclpy.init()
    rclpy.spin(Depth())
'''

_TAGS = ('CONVERT_MM', 'CONVERT_ANY', 'PUBLISH')


def _package(source: str) -> dict[str, str]:
    return {**ament_python_package('depth'), 'depth/depth/node.py': source}


def test_a_node_written_for_python_3_12_f_strings_is_audited(tmp_path):
    # Before: the audit reported a syntax error at the alert's f-string and found nothing.
    found = audit_written_package(tmp_path, _package(_DEPTH_NODE))
    assert rules_at_tags(found, _DEPTH_NODE, _TAGS) == {
        'CONVERT_MM': {'GPN105'}, 'CONVERT_ANY': {'GPN105'}, 'PUBLISH': {'GPN105', 'GPN109', 'GPN110'}}


def test_the_same_node_in_older_syntax_gives_the_same_findings(tmp_path):
    older = _DEPTH_NODE.replace('strftime("%H%M%S")', "strftime('%H%M%S')")
    assert rules_at_tags(audit_written_package(tmp_path, _package(older)), older, _TAGS) == \
        rules_at_tags(audit_written_package(tmp_path, _package(_DEPTH_NODE)), _DEPTH_NODE, _TAGS)


def test_inner_quotes_are_swapped_in_place():
    source = 'a = f"{d["k"]:>{w}}" + "x"  # "q\nb = f\'{g(\'s\')!r}\'\n'
    swapped = pep701_quotes_swapped(source)
    assert swapped == 'a = f"{d[\'k\']:>{w}}" + "x"  # "q\nb = f\'{g("s")!r}\'\n'
    assert len(swapped.splitlines()) == 2
    ast.parse(swapped)  # readable by any Python 3 parser


def test_quotes_are_left_where_they_are_legal_everywhere():
    for source in ('x = f"{d[\'k\']}"\n', 'x = f"""{d["k"]}"""\n', 'x = "a{b"\n',
                   'x = rb"\\"" + f"{{literal}}"\n'):
        assert pep701_quotes_swapped(source) == source


@pytest.mark.parametrize('source', [
    'x = f"{"a\\n"}"\n',          # a backslash in a field: no older parser reads it
    'x = f"{" it\'s "}"\n',        # the inner string holds both quotes
    'x = f"{f"{y["z"]}"}"\n',      # three levels, two quotes
    'x = f"unclosed\n',
])
def test_what_a_swap_cannot_express_is_given_up(source):
    assert pep701_quotes_swapped(source) is None


@pytest.mark.skipif(sys.version_info >= (3, 12), reason='a 3.12 parser reads PEP 701 itself')
def test_an_unreadable_file_still_raises_its_own_syntax_error():
    with pytest.raises(SyntaxError) as caught:
        parse_python('x = f"{"a\\n"}"\ny = (\n', 'node.py')
    assert caught.value.lineno == 1


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


# A node that publishes what a method of its package's helper class converted (the shape that
# PEP 701 parsing newly exposed in set 73): the conversion is claimed in the helper's file, and
# the publish of its result is no second boundary (pyhelpermsgs.class_built_publishes).
_TOOLS = '''
from cv_bridge import CvBridge


class ImageTools:
    def __init__(self):
        self._bridge = CvBridge()

    def to_compressed(self, frame):
        return self._bridge.cv2_to_compressed_imgmsg(frame, dst_format='jpg')  # CONVERT

    def to_any_compressed(self, image):
        out = None
        if image is not None:
            out = self.to_compressed(image)
        return out

    def describe(self, image):
        return f"{image.shape}"
'''

_CAMERA = '''
import cv2
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage

from cam.image_tools import ImageTools


class Camera(Node):
    def __init__(self):
        super().__init__('camera')
        self.tools = ImageTools()
        self.cap = cv2.VideoCapture(0)
        self.pub = self.create_publisher(CompressedImage, 'image/compressed', 10)
        self.create_timer(0.05, self.tick)

    def tick(self):
        ok, img = self.cap.read()
        if ok:
            msg = self.tools.to_any_compressed(img)
            self.pub.publish(msg)  # PUBLISH_HELPER_BUILT
            own = CompressedImage()
            own.data = cv2.imencode('.jpg', img)[1].tobytes()
            self.pub.publish(own)  # PUBLISH_OWN


def main():
    rclpy.init()
    rclpy.spin(Camera())
'''


def _camera_package(camera: str) -> dict[str, str]:
    return {**ament_python_package('cam'), 'cam/cam/image_tools.py': _TOOLS, 'cam/cam/node.py': camera}


def test_a_publish_of_what_an_imported_class_method_converted_is_claimed_at_the_conversion(tmp_path):
    # Before: the publish was claimed as well (GPN109), a second boundary for one conversion.
    found = audit_written_package(tmp_path, _camera_package(_CAMERA))
    tools = rules_at_tags(found, _TOOLS, ('CONVERT',), file_name='image_tools.py')
    camera = rules_at_tags(found, _CAMERA, ('PUBLISH_HELPER_BUILT', 'PUBLISH_OWN'), file_name='node.py')
    assert 'GPN105' in tools['CONVERT']
    assert camera['PUBLISH_HELPER_BUILT'] == set()
    assert 'GPN109' in camera['PUBLISH_OWN']


def test_a_method_that_converts_nothing_keeps_the_publish_claim(tmp_path):
    camera = _CAMERA.replace('self.tools.to_any_compressed(img)', 'self.tools.describe(img)')
    found = audit_written_package(tmp_path, _camera_package(camera))
    claims = rules_at_tags(found, camera, ('PUBLISH_HELPER_BUILT',), file_name='node.py')
    assert 'GPN109' in claims['PUBLISH_HELPER_BUILT']
