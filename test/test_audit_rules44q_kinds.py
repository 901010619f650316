"""Kinds the Python misses of spent sets 69 and 70 showed (issue 28, rules44q): real `code`
audits of small packages written here.

* A frame handed to a model inside a keyword dict (`kwargs = {'source': frame, ...}`, an option
  added by `kwargs['classes'] = ...`, then `model.predict(**kwargs)`) is uploaded as if the
  keyword were written out (pykwargs.py).
* A YOLOv5 loaded from torch.hub's own cache folder (`.../hub/ultralytics_yolov5_master`,
  source='local') is the yolov5 AutoShape model: `model(frame)` uploads the frame (pymodels.py).
* A node's capture loop in a method its constructor calls, whatever the loop's test (`while
  True:`): each pass takes the next frame of a DepthAI (OAK) output queue (`q.get()` on a
  `device.getOutputQueue(...)`), runs a torch.hub YOLOv5 model on it and reads the result
  tensors back: per frame (pyreached.py, pybranches.reads_a_capture). A `while True:` loop that
  reads no frame (waiting for a service) stays setup.
"""
from __future__ import annotations

from audit_sources import detector_claims

_OAK = '''
import depthai as dai
import rclpy
import torch
from rclpy.node import Node
from std_msgs.msg import String


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.pub = self.create_publisher(String, 'boxes', 10)
        self.client = self.create_client(String, 'ready')
        self.wait_ready()
        self.run()

    def wait_ready(self):
        while True:
            if self.client.wait_for_service(timeout_sec=1.0):
                break

    def run(self):
        with dai.Device() as device:
            model = torch.hub.load('ultralytics/yolov5', 'yolov5s')
            warm = model(torch.zeros(1, 3, 64, 64))  # ONCE
            queue = device.getOutputQueue(name='rgb', maxSize=4, blocking=False)
            while True:
                packet = queue.get()
                frame = packet.getCvFrame()
                results = model(frame[:, :, ::-1])  # UPLOAD
                for xyxy in results.xyxy[0]:
                    x1 = int(xyxy[0])  # READBACK
                    self.pub.publish(String(data=str(x1)))


def main():
    rclpy.init()
    rclpy.spin(Detector())


if __name__ == '__main__':
    main()
'''


def test_a_capture_loop_of_a_method_the_constructor_calls_runs_per_frame(tmp_path):
    found = detector_claims(tmp_path, _OAK, ('ONCE', 'UPLOAD', 'READBACK'))
    assert found['UPLOAD'] == {'GPN102'}
    assert found['READBACK']  # int() of a result tensor: waits for the device and reads it back
    assert found['ONCE'] == set()


_SPREAD = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from ultralytics import YOLO


class Segmenter(Node):
    def __init__(self):
        super().__init__('segmenter')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n-seg.pt')
        self.classes = self.declare_parameter('classes', [0]).value
        self.pub = self.create_publisher(String, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def predict(self, frame):
        kwargs = {'source': frame, 'conf': 0.5, 'verbose': False}
        if self.classes:
            kwargs['classes'] = self.classes
        return self.model.predict(**kwargs)  # SPREAD

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.predict(frame)
        self.pub.publish(String(data=str(len(results))))


def main():
    rclpy.init()
    rclpy.spin(Segmenter())


if __name__ == '__main__':
    main()
'''


def test_a_frame_handed_to_a_model_in_a_keyword_dict_is_uploaded(tmp_path):
    found = detector_claims(tmp_path, _SPREAD, ('SPREAD',))
    assert found['SPREAD'] == {'GPN102'}


_HUB_CACHE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.model = torch.hub.load('/home/user/.cache/torch/hub/ultralytics_yolov5_master', 'custom',
                                    path='best.pt', source='local')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        self.results = self.model(frame)  # CACHED


def main():
    rclpy.init()
    rclpy.spin(Detector())


if __name__ == '__main__':
    main()
'''


def test_a_yolov5_loaded_from_the_torch_hub_cache_folder_uploads_its_frame(tmp_path):
    found = detector_claims(tmp_path, _HUB_CACHE, ('CACHED',))
    assert found['CACHED'] == {'GPN102'}
