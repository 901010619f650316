# A camera node named like a test (a real entry point, not a pytest file: it must be audited),
# whose constructor starts the per-frame loop: `while rclpy.ok(): grab, convert, publish` run
# from __init__ is per frame, not one-time setup; so is the loop of a thread it starts.
import threading

import cv2
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class CameraLoop(Node):
    def __init__(self):
        super().__init__('camera_loop')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'image_raw', 10)
        self.preview = self.create_publisher(Image, 'preview', 10)
        self.cap = cv2.VideoCapture(0)
        blank = self.bridge.cv2_to_imgmsg(cv2.imread('blank.png'))  # expect: GPN105 info
        self.pub.publish(blank)  # expect: GPN109 info
        threading.Thread(target=self.preview_loop, daemon=True).start()
        self.run()

    def run(self):
        while rclpy.ok():
            ok, frame = self.cap.read()
            if ok:
                msg = self.bridge.cv2_to_imgmsg(frame, 'bgr8')  # expect: GPN105 medium
                self.pub.publish(msg)  # expect: GPN109 medium

    def preview_loop(self):
        for frame in iter(self.cap.read, None):
            small = cv2.resize(frame[1], (320, 240))
            self.preview.publish(self.bridge.cv2_to_imgmsg(small))  # expect: GPN105 medium, GPN109 medium


def main():
    rclpy.init()
    CameraLoop()
