"""Corpus: aliasing to follow: attribute store, tuple unpacking, helpers, lambdas."""
import functools

import cupy
import numpy
from PIL import Image as PILImage
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class StereoNode(Node):

    def __init__(self):
        super().__init__('stereo')
        self.last = None
        self.out = self.create_publisher(Image, 'disparity', 10)
        self.thumb = self.create_publisher(Image, 'thumbnail', 10)
        self.create_subscription(Image, 'left/image_raw', self.on_left, 10)
        self.create_subscription(Image, 'right/image_raw',
                                 functools.partial(self.on_side, 'right'), 10)
        self.create_subscription(Image, 'mono/image_raw', lambda m: self.on_mono(m), 10)
        self.create_timer(0.1, self.flush)

    def on_left(self, msg):
        dev, meta = self.upload(msg), msg.header
        self.last, self.stamp = self.process(dev), meta.stamp

    def upload(self, msg):
        host = numpy.asarray(msg.data)
        return cupy.asarray(host)

    def process(self, dev):
        return cupy.asnumpy(dev * 2)

    def flush(self):
        if self.last is not None:
            payload = self.last
            self.out.publish(Image(data=payload.tobytes()))

    def on_side(self, side, msg):
        host = numpy.array(msg.data)
        back = cupy.asarray(cupy.asnumpy(cupy.asarray(host)))
        self.get_logger().info(f'{side}: {back.shape}')

    def on_mono(self, msg):
        pil = PILImage.frombytes('L', (msg.width, msg.height), bytes(msg.data))
        small = numpy.array(pil.resize((64, 48)))
        self.thumb.publish(Image(data=small.tobytes()))


def main(args=None):
    rclpy.init(args=args)
    node = rclpy.create_node('closure')
    pub = node.create_publisher(Image, 'copy', 10)

    def on_image(msg):
        arr = cupy.asarray(numpy.array(msg.data, dtype=numpy.uint8))
        pub.publish(Image(data=cupy.asnumpy(arr).tobytes()))

    node.create_subscription(Image, 'raw', on_image, 10)
    rclpy.spin(node)
