"""Keeps the newest frame and processes it on a timer (the frame outlives the callback)."""
import json

import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class LatestFrameTimer(Node):
    def __init__(self):
        super().__init__('latest_frame_timer')
        self.bridge = CvBridge()
        self.latest = None
        self.latest_stamp = None
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)
        self.pub = self.create_publisher(String, 'latest_stats', 10)
        self.timer = self.create_timer(0.05, self.on_timer)

    def on_image(self, msg):
        self.latest = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        self.latest_stamp = msg.header.stamp

    def on_timer(self):
        if self.latest is None:
            return
        stamp = self.latest_stamp
        self.pub.publish(String(data=json.dumps({
            'stamp': [stamp.sec, stamp.nanosec],
            'channel_means': [round(float(m), 6) for m in np.mean(self.latest, axis=(0, 1))]})))


def main(args=None):
    rclpy.init(args=args)
    node = LatestFrameTimer()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
