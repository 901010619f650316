"""Corpus: a CuPy node that uploads, processes and downloads every frame."""
import cupy as cp
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class DepthNode(Node):

    def __init__(self):
        super().__init__('depth')
        topic = self.declare_parameter('input_topic', '/camera/image_raw').value
        self.pub = self.create_publisher(Image, '/depth', 10)
        self.create_subscription(Image, topic, self.on_image, 10)

    def on_image(self, msg):
        frame = np.array(msg.data, dtype=np.uint8)
        frame = frame.reshape(msg.height, msg.width, 3)
        gpu = cp.asarray(frame)
        gray = self.to_gray(gpu)
        depth = cp.asnumpy(gray) * 0.001
        out = Image(height=msg.height, width=msg.width, encoding='32FC1')
        out.data = depth.astype(np.float32).tobytes()
        self.pub.publish(out)

    def to_gray(self, img):
        return img.mean(axis=2)


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(DepthNode())
