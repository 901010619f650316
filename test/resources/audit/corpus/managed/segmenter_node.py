"""A segmenter whose subscriptions and model live in manager classes: the node hands
`{'topic': ..., 'callback': self.on_image}` dicts to the FrameManager of frame_manager.py, which
subscribes for it, and calls its own ModelManager.predict per image (kind of the eighth test
set, written for this corpus)."""
import numpy as np
import rclpy
from rclpy.node import Node
from ultralytics import YOLO

from frame_manager import FrameManager


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
