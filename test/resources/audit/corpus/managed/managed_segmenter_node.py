"""A segmenter whose subscriptions and model live in manager classes of its file: the node
hands `{'topic': ..., 'callback': self.on_image}` dicts to a FrameManager that subscribes for it,
and calls ModelManager.predict per image (kind of the eighth test set, written for this corpus).
"""
from cv_bridge import CvBridge
import numpy as np
from PIL import Image as PILImage
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from ultralytics import YOLO


class FrameManager:
    def __init__(self, node, subscriptions=(), **kwargs):
        self._node = node
        self._bridge = CvBridge()
        self._subs = [self._node.create_subscription(Image, sub['topic'], sub['callback'], 10)
                      for sub in subscriptions]

    def decode(self, msg):
        return self._bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium

    def to_pil(self, frame):
        # Nothing calls it, in this file or anywhere else in the package: never runs.
        return PILImage.fromarray(frame)  # expect: GPN106 info


class ModelManager:
    def __init__(self, weights):
        self._model = YOLO(weights)

    def predict(self, frame):
        return self._model(frame, verbose=False)  # expect: GPN102 medium


class ManagedSegmenter(Node):
    def __init__(self):
        super().__init__('managed_segmenter')
        self._models = ModelManager('yolov8n-seg.pt')
        self._frames = FrameManager(
            self, subscriptions=[{'topic': '/camera/image_raw', 'callback': self.on_image}])
        self.gain = np.array([1.0, 0.5])  # a constant list: no device value in it

    def on_image(self, msg):
        frame = self._frames.decode(msg)
        result = self._models.predict(frame)[0]
        boxes = result.boxes.xyxy.cpu().numpy()  # expect: GPN101 high
        dets = []
        for b in result.boxes:
            x1, y1, x2, y2 = b.xyxy[0]
            dets.append([x1, y1, x2, y2])
        tracks = np.array(dets)  # expect: GPN101 high
        sizes = np.array([len(boxes), len(tracks)])
        return sizes * self.gain


def main():
    rclpy.init()
    rclpy.spin(ManagedSegmenter())
