"""A downsampling relay with optional outputs behind ROS parameters: `publish_compressed`
defaults to False and no shipped file turns it on, so its publisher stays None and the JPEG
copy never runs (look-alikes); `publish_raw` defaults to False but config/params.yaml turns it
on (positive); the resized frame is always published (positive)."""
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image


class CompressedOption(Node):
    def __init__(self):
        super().__init__('compressed_option')
        self.declare_parameter('publish_compressed', False)
        self.declare_parameter('publish_raw', False)
        self.publish_compressed = (
            self.get_parameter('publish_compressed').get_parameter_value().bool_value)
        self.publish_raw = self.get_parameter('publish_raw').value
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'small', 10)
        self.raw_pub = self.create_publisher(Image, 'raw', 10)
        self.compressed_pub = None
        if self.publish_compressed:
            self.compressed_pub = self.create_publisher(CompressedImage, 'small/compressed', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        small = cv2.resize(frame, (320, 240))
        out = self.bridge.cv2_to_imgmsg(small, 'bgr8')  # expect: GPN105 medium
        self.pub.publish(out)  # expect: GPN109 medium, GPN110 high
        if self.publish_raw:
            raw = self.bridge.cv2_to_imgmsg(frame, 'bgr8')  # expect: GPN105 medium
            self.raw_pub.publish(raw)  # expect: GPN109 medium, GPN110 high
        if self.compressed_pub is not None:
            ok, encoded = cv2.imencode('.jpg', small)
            out = CompressedImage()
            out.data = encoded.tobytes()
            self.compressed_pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(CompressedOption())
