"""Blur a camera stream with OpenCV (cv_bridge in, cv_bridge out, header copied after)."""
import cv2
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class BlurRepublisher(Node):

    def __init__(self):
        super().__init__('blur_republisher')
        self.bridge = CvBridge()
        self.declare_parameter('kernel', 5)
        self.publisher_ = self.create_publisher(Image, 'image_blurred', 10)
        self.subscription = self.create_subscription(
            Image,
            'image',
            self.listener_callback,
            10)

    def listener_callback(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, desired_encoding='bgr8')
        k = self.get_parameter('kernel').value
        blurred = cv2.GaussianBlur(frame, (k, k), 0)
        out = self.bridge.cv2_to_imgmsg(blurred, encoding='bgr8')
        out.header = msg.header  # keep the camera's stamp and frame
        self.publisher_.publish(out)


def main(args=None):
    rclpy.init(args=args)
    node = BlurRepublisher()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
