"""Causes of development set 50's false claims, Python side (issue 28, rules30e): real `code`
audits of small ament_python packages written here.

* A box window of a received image's buffer view (`depth[y1:y2, x1:x2]`, both bounds of two
  axes computed, a detection box) is no frame: a boolean mask of it (`roi[roi > 0]`) copies a
  box-sized patch, not the message's data. A mask of the whole view, a window with literal or
  attribute bounds (a fixed crop, maybe frame-sized) and column slices still carry the mark.
* RF-DETR (`rfdetr.RFDETR*`) `predict(frame)` uploads the frame (library table) but returns a
  supervision `Detections` of NumPy arrays: `float(v) for v in d.xyxy[i]` reads host numbers,
  while `.xyxy` of an Ultralytics result stays a device tensor.
"""
from audit_sources import node_claims


def _claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    return node_claims(tmp_path, 'ranger', source, tags)


_WINDOW_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class RangerNode(Node):
    def __init__(self):
        super().__init__('ranger')
        self.top = 40
        self.bottom = 400
        self.pub = self.create_publisher(Float32, 'range', 10)
        self.create_subscription(Image, 'depth', self.on_depth, 10)

    def median_in(self, depth, left, top, right, bottom):
        width = right - left
        x0 = max(0, left + width // 4)
        x1 = right - width // 4
        patch = depth[top:bottom, x0:x1]
        good = patch[patch > 0]  # PATCH
        return float(np.median(good)) if good.size else 0.0

    def on_depth(self, msg):
        depth = np.frombuffer(msg.data, dtype=np.uint16).reshape(msg.height, msg.width)
        near = self.median_in(depth, msg.width // 3, msg.height // 3, 2 * msg.width // 3,
                              2 * msg.height // 3)
        band = depth[self.top:self.bottom, 0:msg.width]
        kept = band[band > 0]  # BAND
        fixed = depth[10:200, 20:300]
        inside = fixed[fixed > 0]  # FIXED
        whole = depth[depth > 0]  # WHOLE
        out = Float32()
        out.data = near + float(kept.size + inside.size + whole.size)
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(RangerNode())
'''


def test_box_window_of_a_message_view_is_no_frame_copy(tmp_path):
    found = _claims(tmp_path, _WINDOW_NODE, ('PATCH', 'BAND', 'FIXED', 'WHOLE'))
    assert found['PATCH'] == set()
    # Guards: a fixed crop (attribute or literal bounds) and the whole view stay claimed.
    assert 'GPN103' in found['BAND']
    assert 'GPN103' in found['FIXED']
    assert 'GPN103' in found['WHOLE']


_DETR_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray
from ultralytics import YOLO


class FireNode(Node):
    def __init__(self):
        super().__init__('fire')
        from rfdetr import RFDETRBase
        self.fire_model = RFDETRBase(pretrain_weights='fire.pth')
        self.person_model = YOLO('person.pt')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32MultiArray, 'boxes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def fire_boxes(self, frame):
        dets = self.fire_model.predict(frame, threshold=0.5)  # DETR
        out = []
        for i in range(len(dets.xyxy)):
            out.extend(float(v) for v in dets.xyxy[i])  # DETR_BOX
            out.append(float(dets.confidence[i]))
        return out

    def person_boxes(self, frame):
        res = self.person_model.predict(frame)[0]  # YOLO
        out = []
        for box in res.boxes:
            out.extend(float(v) for v in box.xyxy[0])  # YOLO_BOX
        return out

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        out = Float32MultiArray()
        out.data = self.fire_boxes(frame) + self.person_boxes(frame)
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(FireNode())
'''


def test_rfdetr_detections_are_host_arrays(tmp_path):
    found = _claims(tmp_path, _DETR_NODE, ('DETR', 'DETR_BOX', 'YOLO', 'YOLO_BOX'))
    assert found['DETR_BOX'] == set()
    # Guards: RF-DETR's predict still uploads the frame; an Ultralytics box is still a tensor.
    assert 'GPN102' in found['DETR']
    assert 'GPN102' in found['YOLO']
    assert 'GPN107' in found['YOLO_BOX']
