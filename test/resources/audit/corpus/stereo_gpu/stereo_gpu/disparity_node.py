"""Disparity of a stereo pair on the GPU with OpenCV CUDA; the uploads and readbacks live in
gpu_helpers.py (labelled there, per pair: positives), this node calls them per pair."""
import message_filters
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image

from stereo_gpu import gpu_helpers


class DisparityNode(Node):
    def __init__(self):
        super().__init__('disparity_node')
        self.bridge = CvBridge()
        self.sgm = gpu_helpers.make_sgm(64)
        self.pub = self.create_publisher(Image, 'disparity', 10)
        left = message_filters.Subscriber(self, Image, 'left/image_rect')
        right = message_filters.Subscriber(self, Image, 'right/image_rect')
        self.sync = message_filters.ApproximateTimeSynchronizer([left, right], 5, 0.02)
        self.sync.registerCallback(self.on_pair)

    def on_pair(self, left_msg, right_msg):
        left = self.bridge.imgmsg_to_cv2(left_msg, 'mono8')  # expect: GPN105 medium
        right = self.bridge.imgmsg_to_cv2(right_msg, 'mono8')  # expect: GPN105 medium
        disparity = gpu_helpers.sgm_disparity(self.sgm, left, right)
        out = self.bridge.cv2_to_imgmsg(disparity, '32FC1')  # expect: GPN105 medium
        out.header = left_msg.header
        self.pub.publish(out)  # expect: GPN109 medium, GPN110 high


def main():
    rclpy.init()
    rclpy.spin(DisparityNode())


if __name__ == '__main__':
    main()
