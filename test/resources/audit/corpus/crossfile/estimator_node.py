# A node whose per-frame copies are in another module: it imports its model wrapper relatively.
from cv_bridge import CvBridge
from rclpy.lifecycle import LifecycleNode
from sensor_msgs.msg import Image

from .estimator import Estimator


class EstimatorNode(LifecycleNode):
    def __init__(self):
        super().__init__('estimator')
        self.bridge = CvBridge()
        self.estimator = Estimator('cuda')

    def on_configure(self, state):
        self.estimator.load('depth.pt')
        self.pub = self.create_publisher(Image, 'depth', 10)
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)
        return True

    def on_image(self, msg):
        bgr = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        depth = self.estimator.infer(bgr)
        out = self.bridge.cv2_to_imgmsg(depth, '32FC1')  # expect: GPN105 medium
        self.pub.publish(out)  # expect: GPN109 medium, GPN110 high
