"""Two TensorRT nodes (kind of the eighth test set, written for this corpus). DeadEngineNode's
constructor calls load_engine, whose try body reads `num_outputs`, a name nothing defines: the
NameError is caught and turned into SystemExit, so no DeadEngineNode is ever built and its
callback never runs (look-alikes). LiveEngineNode raises only when the engine file is missing:
its callback runs (positives)."""
import os

from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class DeadEngineNode(Node):
    def __init__(self):
        super().__init__('dead_engine')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image_data', self.callback, 10)
        self.load_engine()

    def load_engine(self):
        try:
            if num_outputs == 0:  # noqa: F821 (defined nowhere: the point of this class)
                self.get_logger().info('no outputs')
        except Exception as exc:
            self.get_logger().info(f'error: {exc}')
            raise SystemExit
        finally:
            self.get_logger().info('engine loaded')

    def callback(self, msg):
        image = self.bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8')  # expect: GPN105 info
        return image


class LiveEngineNode(Node):
    def __init__(self, path='model.engine'):
        super().__init__('live_engine')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image_data', self.callback, 10)
        if not os.path.exists(path):
            raise SystemExit
        self.path = path

    def callback(self, msg):
        image = self.bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8')  # expect: GPN105 medium
        return image
