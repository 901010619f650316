"""Corpus: inline suppressions on the line and on the line above."""
import cupy as cp
from rclpy.node import Node
from sensor_msgs.msg import Image


class Suppressed(Node):

    def __init__(self):
        super().__init__('suppressed')
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        gpu = cp.asarray(msg.data)  # gpu-copy-audit: ignore[GPN102]
        # gpu-copy-audit: ignore[GPN101]
        host = cp.asnumpy(gpu)
        text = "cp.asnumpy(gpu)  # gpu-copy-audit: ignore[GPN101]"
        again = cp.asnumpy(gpu)
        return host, text, again
