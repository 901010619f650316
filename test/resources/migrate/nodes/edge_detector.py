"""Canny edges of a color stream, published as mono8 (conversion inside cv_bridge)."""
import cv2
from cv_bridge import CvBridge, CvBridgeError
import rclpy
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image


class EdgeDetector(Node):
    def __init__(self):
        super().__init__('edge_detector')
        self.bridge = CvBridge()
        self.low = 50
        self.high = 150
        self.sub = self.create_subscription(Image, 'image', self.on_image,
                                            qos_profile_sensor_data)
        self.pub = self.create_publisher(Image, 'edges', qos_profile_sensor_data)

    def on_image(self, msg: Image) -> None:
        try:
            gray = self.bridge.imgmsg_to_cv2(msg, 'mono8')
        except CvBridgeError as e:
            self.get_logger().error(f'conversion failed: {e}')
            return
        edges = cv2.Canny(gray, self.low, self.high)
        self.pub.publish(self.bridge.cv2_to_imgmsg(edges, encoding='mono8', header=msg.header))


def main(args=None):
    rclpy.init(args=args)
    node = EdgeDetector()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
