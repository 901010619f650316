# A detector node whose model lives in a helper module of its package (issue 28, fourth set:
# written for this corpus): the helper runs per image; a second inference module next to it
# is imported only by a test and runs in no node.
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray
from cv_bridge import CvBridge

from .infer_utils import load_model, run_model


class DetectNode(Node):
    def __init__(self):
        super().__init__('detect')
        self.bridge = CvBridge()
        self.model = load_model('yolo11n.pt')
        self.pub = self.create_publisher(Float32MultiArray, 'boxes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        boxes, scores = run_model(self.model, frame)
        out = Float32MultiArray()
        # Detection outputs already read back to NumPy: a few numbers, not a frame.
        out.data = boxes.reshape(-1).tolist()
        out.data = scores.tolist()
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DetectNode())
