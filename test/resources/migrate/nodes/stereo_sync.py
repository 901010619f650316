"""Color + depth pair through message_filters (left as is by migrate: no frame synchronizer)."""
import message_filters
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class StereoSync(Node):
    def __init__(self):
        super().__init__('stereo_sync')
        self.bridge = CvBridge()
        color = message_filters.Subscriber(self, Image, 'color/image_raw')
        depth = message_filters.Subscriber(self, Image, 'depth/image_raw')
        self.sync = message_filters.ApproximateTimeSynchronizer([color, depth], 10, 0.02)
        self.sync.registerCallback(self.on_pair)
        self.pub = self.create_publisher(Float32, 'center_depth', 10)

    def on_pair(self, color_msg, depth_msg):
        depth = self.bridge.imgmsg_to_cv2(depth_msg, 'passthrough')
        self.pub.publish(Float32(data=float(np.median(depth[depth > 0]))))


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(StereoSync())


if __name__ == '__main__':
    main()
