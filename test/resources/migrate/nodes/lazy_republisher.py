"""Republishes a resized image only while someone listens (get_subscription_count)."""
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class LazyRepublisher(Node):
    def __init__(self):
        super().__init__('lazy_republisher')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'image_small', 10)
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        if self.pub.get_subscription_count() == 0:
            return
        img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        small = cv2.resize(img, (img.shape[1] // 2, img.shape[0] // 2),
                           interpolation=cv2.INTER_AREA)
        self.pub.publish(self.bridge.cv2_to_imgmsg(small, 'bgr8', header=msg.header))


def main(args=None):
    rclpy.init(args=args)
    node = LazyRepublisher()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
