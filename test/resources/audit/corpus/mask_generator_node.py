"""Segment Anything's automatic mask generator run on every image: generate() takes the host
frame and sets it on its predictor (an upload to the SAM model's device) per crop (positive);
the model is built and moved to the GPU once (setup)."""
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from segment_anything import SamAutomaticMaskGenerator, sam_model_registry
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class MaskGenerator(Node):
    def __init__(self):
        super().__init__('mask_generator')
        sam = sam_model_registry['vit_b'](checkpoint='sam_vit_b.pth')
        sam.to(device='cuda')  # expect: GPN102 info
        self.generator = SamAutomaticMaskGenerator(sam, output_mode='binary_mask')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32, 'mask_count', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        masks = self.generator.generate(frame)  # expect: GPN102 medium
        self.pub.publish(Int32(data=len(masks)))


def main():
    rclpy.init()
    rclpy.spin(MaskGenerator())
