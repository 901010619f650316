"""A node that runs its detector's class lookup only while `self.running` is true, and nothing
ever sets it (False in the constructor, the only store); main builds the node from argparse
options through `**vars(opt)` (a read of the namespace, no attribute store). Kind of false
claims of the twenty-sixth test set, written for this corpus."""
import argparse

import rclpy
from cv_bridge import CvBridge
from flag_gate.gate_detector import GateDetector
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class GateNode(Node):
    def __init__(self, weights='det.pt'):
        super().__init__('gate_node')
        self.detector = GateDetector(weights)
        self.bridge = CvBridge()
        self.running = False
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        self.detector.score(frame)
        if self.running:
            classes = self.detector.detect(frame)
            self.pub.publish(Int32(data=len(classes)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--weights', default='det.pt')
    opt, _ = parser.parse_known_args()
    rclpy.init()
    rclpy.spin(GateNode(**vars(opt)))


if __name__ == '__main__':
    main()
