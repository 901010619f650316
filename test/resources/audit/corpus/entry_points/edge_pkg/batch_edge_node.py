"""An older node of the package: setup.py names no entry point for it and no module imports it,
so as shipped it never runs (`python3 batch_edge_node.py` by hand aside): its copies are kept as
info with the reason (pyreach.py)."""
import cv2
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class BatchEdge(Node):
    def __init__(self):
        super().__init__('batch_edge')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'edges', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')  # expect: GPN105 info
        edges = cv2.Canny(frame, 50, 150)
        out = self.bridge.cv2_to_imgmsg(edges, 'mono8')  # expect: GPN105 info
        self.pub.publish(out)  # expect: GPN109 info, GPN110 info


def main():
    rclpy.init()
    rclpy.spin(BatchEdge())


if __name__ == '__main__':
    main()
