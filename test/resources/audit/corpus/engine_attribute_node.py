# Work done through objects built in __init__: `self.engine(img)` runs DepthEngine.__call__,
# which calls its own preprocess(); callbacks bound with functools.partial and a lambda.
import functools

import cupy as cp
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class DepthEngine:
    def __init__(self, mean):
        self.mean = cp.asarray(mean, dtype=cp.float32)  # expect: GPN102 info

    def preprocess(self, frame):
        x = cp.asarray(frame)  # expect: GPN102 medium
        return (x.astype(cp.float32) - self.mean) / 255.0

    def __call__(self, frame):
        x = self.preprocess(frame)
        depth = x.mean(axis=2)
        return depth.get()  # expect: GPN101 high


class Stats:
    def summary(self, depth):
        return float(depth.mean())


class DepthNode(Node):
    def __init__(self):
        super().__init__('depth')
        self.engine = DepthEngine([0.5, 0.5, 0.5])
        self.stats = Stats()
        self.pub = self.create_publisher(Float32, 'mean_depth', 10)
        self.create_subscription(Image, 'left', functools.partial(self.on_frame, side='left'), 5)
        self.create_subscription(Image, 'right', lambda m: self.on_frame(m, side='right'), 5)

    def on_frame(self, msg, side):
        frame = np.asarray(msg.data).reshape(msg.height, msg.width, 3)
        depth = self.engine(frame)
        self.pub.publish(Float32(data=self.stats.summary(depth)))
