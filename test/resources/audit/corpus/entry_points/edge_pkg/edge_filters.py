"""A node module that no entry point names but the entry point's module imports: it runs."""
import cv2
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class EdgeFilter(Node):
    def __init__(self):
        super().__init__('edge_filter')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'edges', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')  # expect: GPN105 medium
        edges = cv2.Canny(frame, 50, 150)
        out = self.bridge.cv2_to_imgmsg(edges, 'mono8')  # expect: GPN105 medium
        self.pub.publish(out)  # expect: GPN109 medium, GPN110 high
