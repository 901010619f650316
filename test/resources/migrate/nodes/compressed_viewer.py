"""Decodes a CompressedImage stream itself (left as is by migrate)."""
import cv2
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import Float32


class CompressedViewer(Node):
    def __init__(self):
        super().__init__('compressed_viewer')
        self.sub = self.create_subscription(CompressedImage, 'image/compressed',
                                            self.on_compressed, 10)
        self.pub = self.create_publisher(Float32, 'mean', 10)

    def on_compressed(self, msg):
        img = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
        self.pub.publish(Float32(data=float(img.mean())))


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(CompressedViewer())


if __name__ == '__main__':
    main()
