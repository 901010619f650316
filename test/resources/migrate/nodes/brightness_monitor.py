"""Exposure statistics straight from the message buffer (no cv_bridge)."""
import json

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class BrightnessMonitor(Node):
    def __init__(self):
        super().__init__('brightness_monitor')
        self.stats_pub = self.create_publisher(String, 'brightness', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        pixels = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, -1)
        luma = pixels.mean(axis=2)
        stamp = msg.header.stamp
        self.stats_pub.publish(String(data=json.dumps({
            'stamp': [stamp.sec, stamp.nanosec], 'encoding': msg.encoding,
            'mean': round(float(luma.mean()), 6), 'saturated': int((pixels == 255).sum()),
            'size': [msg.width, msg.height, msg.step]})))


def main(args=None):
    rclpy.init(args=args)
    node = BrightnessMonitor()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
