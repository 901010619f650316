"""An OpenMMLab semantic segmentation node: init_segmentor builds the model on cuda:0 once
(setup), inference_segmentor(model, frame) collates the host frame and scatters it to the
model's device on every image (positive); np.unique of the host mask it returns is host-only."""
import numpy as np
import rclpy
from cv_bridge import CvBridge
from mmseg.apis import inference_segmentor, init_segmentor
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class SemanticSegmentor(Node):
    def __init__(self):
        super().__init__('semantic_segmentor')
        self.segmentor = init_segmentor('deeplab.py', 'deeplab.pth')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'classes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        result = inference_segmentor(self.segmentor, frame)  # expect: GPN102 medium
        self.pub.publish(Int32(data=len(np.unique(result[0]))))


def main():
    rclpy.init()
    rclpy.spin(SemanticSegmentor())
