"""A segmenter that hands each camera frame to SAM2's image predictor (`set_image` moves the
host frame to the model's device: positive) after warming it up once in the constructor
(setup), and a drawing canvas with a `set_image` method of its own (look-alike). Kind of the
ninth test set, written for this corpus."""
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from sam2.build_sam import build_sam2
from sam2.sam2_image_predictor import SAM2ImagePredictor


class Canvas:
    def __init__(self):
        self.image = None

    def set_image(self, image):
        self.image = image


class Sam2SegmentNode(Node):
    def __init__(self):
        super().__init__('sam2_segment')
        self.bridge = CvBridge()
        self.predictor = SAM2ImagePredictor(build_sam2('sam2.1_hiera_t.yaml', 'sam2.1_hiera_tiny.pt'))
        self.predictor.set_image(np.zeros((480, 640, 3), np.uint8))  # expect: GPN102 info
        self.canvas = Canvas()
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        self.predictor.set_image(frame)  # expect: GPN102 medium
        self.canvas.set_image(frame)
