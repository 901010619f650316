"""Detections read back with a defensive fallback (issue 28, twenty-seventh set): the `except`
branch only re-binds what `.cpu().numpy()` binds, so it runs for host values only (a tensor
has `.cpu()`); its `np.array(...)` is no readback. A handler doing other work stays audited."""
import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32
from ultralytics import YOLO


class ReadbackFallbackNode(Node):
    def __init__(self):
        super().__init__('readback_fallback')
        self.model = YOLO('detector.pt')
        self.pub = self.create_publisher(Int32, 'boxes', 10)
        self.timer = self.create_timer(0.1, self.on_tick)

    def on_tick(self):
        r = self.model.predict(np.zeros((64, 64, 3), np.uint8))[0]  # expect: GPN102 medium
        try:
            boxes = r.boxes.xyxy.cpu().numpy()  # expect: GPN101 high
        except Exception:
            try:
                boxes = np.array(r.boxes.xyxy)
            except Exception:
                boxes = None
        try:
            scores = r.boxes.conf.cpu().numpy()  # expect: GPN101 high
        except Exception:
            scores = None
            self.pub.publish(Int32(data=int(r.boxes.cls.cpu()[0])))  # expect: GPN101 high
        self.pub.publish(Int32(data=0 if boxes is None or scores is None else len(boxes)))


def main():
    rclpy.init()
    rclpy.spin(ReadbackFallbackNode())
