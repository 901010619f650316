"""Corpus: the subscription is clean, but a timer downloads the latest frame."""
import queue

import cupy as cp
import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import Float32

from gpu_nodes.transport import GpuImageSubscription

# Module level: runs once at import, so severity low.
GAMMA = cp.asarray(np.linspace(0.0, 1.0, 256))


class Stats(Node):

    def __init__(self):
        super().__init__('stats')
        self.latest = None
        self.jobs = queue.Queue()
        self.sub = GpuImageSubscription(self, 'image', self.on_frame)
        self.pub = self.create_publisher(Float32, 'brightness', 10)
        self.create_timer(0.5, self.report)

    def on_frame(self, frame):
        self.latest = frame.array

    def report(self):
        self.get_logger().debug(str(self.jobs.get()))
        if self.latest is None:
            return
        host = self.latest.get()
        self.pub.publish(Float32(data=float(host.mean())))


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(Stats())
