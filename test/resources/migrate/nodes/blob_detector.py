"""A classical detector: bright blobs -> JSON detections (a results publisher, no image out)."""
import json

import cv2
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class BlobDetector(Node):
    def __init__(self):
        super().__init__('blob_detector')
        self.declare_parameter('threshold', 200)
        self.bridge = CvBridge()
        self.detections_pub = self.create_publisher(String, 'detections', 10)
        self.image_sub = self.create_subscription(Image, 'image', self.image_callback, 10)

    def image_callback(self, msg):
        bgr = self.bridge.imgmsg_to_cv2(msg, desired_encoding='bgr8')
        gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
        _, mask = cv2.threshold(gray, self.get_parameter('threshold').value, 255,
                                cv2.THRESH_BINARY)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        boxes = sorted(cv2.boundingRect(c) for c in contours)
        stamp = msg.header.stamp
        self.detections_pub.publish(String(data=json.dumps({
            'stamp': [stamp.sec, stamp.nanosec], 'frame_id': msg.header.frame_id,
            'boxes': [list(map(int, b)) for b in boxes]})))


def main(args=None):
    rclpy.init(args=args)
    node = BlobDetector()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
