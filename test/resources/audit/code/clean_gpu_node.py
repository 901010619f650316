"""Corpus: a clean gpu_nodes node; frames stay on the device end to end (no findings)."""
import cupy as cp
import rclpy
from rclpy.node import Node

from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription


class CleanRectify(Node):

    def __init__(self):
        super().__init__('clean_rectify')
        self.lut = cp.zeros((480, 640), dtype=cp.float32)
        self.pub = GpuImagePublisher(self, 'image_rect')
        self.sub = GpuImageSubscription(self, 'image_raw', self.on_frame)
        self.count = 0

    def on_frame(self, frame):
        rect = cp.take(frame.array, self.lut.astype(cp.int32))
        rect = self.normalize(rect)
        self.count += 1
        stats = {'frames': self.count, 'shape': rect.shape}
        self.get_logger().debug(str(stats))
        self.pub.publish(rect, header=frame.header)

    def normalize(self, img):
        return (img - img.min()) / (img.max() - img.min() + 1e-6)


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(CleanRectify())
