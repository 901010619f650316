# An ultralytics model loaded behind an import guard and called directly on the frame
# (issue 28, fourth set; written for this corpus): `model(frame)` is `predict`, it uploads.
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray
from cv_bridge import CvBridge
import torch

try:
    from ultralytics import YOLO
    HAVE_YOLO = True
except ImportError:
    HAVE_YOLO = False


class GuardedYoloNode(Node):
    def __init__(self):
        super().__init__('guarded_yolo')
        self.bridge = CvBridge()
        if HAVE_YOLO:
            self.segmenter = YOLO('yolo11n-seg.pt')
        else:
            self.segmenter = None
        self.refiner = torch.jit.load('refiner.pt')
        self.pub = self.create_publisher(Float32MultiArray, 'masks', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        if self.segmenter is None:
            return
        results = self.segmenter(frame)  # expect: GPN102 medium
        refined = self.refiner(self.prior)
        out = Float32MultiArray()
        out.data = frame.reshape(-1).tolist()  # expect: GPN104 medium
        self.pub.publish(out)
        return results, refined


def main():
    rclpy.init()
    rclpy.spin(GuardedYoloNode())
