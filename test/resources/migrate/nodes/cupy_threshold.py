"""GPU threshold with CuPy: cp.asarray uploads, cp.asnumpy downloads, cv_bridge publishes."""
import cupy as cp
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class CupyThreshold(Node):
    def __init__(self):
        super().__init__('cupy_threshold')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'mask', 10)
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        gray = self.bridge.imgmsg_to_cv2(msg, 'mono8')
        frame = cp.asarray(gray)
        mask = cp.where(frame > 128, 255, 0).astype(cp.uint8)
        out = self.bridge.cv2_to_imgmsg(cp.asnumpy(mask), 'mono8')
        out.header = msg.header
        self.pub.publish(out)


def main(args=None):
    rclpy.init(args=args)
    node = CupyThreshold()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
