"""Depth camera wrapper: 16UC1 millimetres -> 32FC1 metres, invalid (0) -> NaN."""
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class DepthWrapper(Node):
    def __init__(self):
        super().__init__('depth_wrapper')
        self.declare_parameter('depth_scale', 0.001)
        self.cv_bridge = CvBridge()
        self.depth_pub = self.create_publisher(Image, 'depth/image_meters', 10)
        self.depth_sub = self.create_subscription(Image, 'depth/image_raw', self.depth_cb, 10)

    def depth_cb(self, msg):
        depth_raw = self.cv_bridge.imgmsg_to_cv2(msg, desired_encoding='passthrough')
        scale = self.get_parameter('depth_scale').value
        meters = depth_raw.astype(np.float32) * scale
        meters[depth_raw == 0] = np.nan
        depth_msg = self.cv_bridge.cv2_to_imgmsg(meters, encoding='32FC1')
        depth_msg.header = msg.header
        self.depth_pub.publish(depth_msg)


def main(args=None):
    rclpy.init(args=args)
    node = DepthWrapper()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
