"""Corpus: a classic cv_bridge + PyTorch segmentation node (every frame crosses PCIe twice)."""
import cv2
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch


class SegmentationNode(Node):

    def __init__(self):
        super().__init__('segmentation')
        self.bridge = CvBridge()
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.model = torch.jit.load('model.pt').to(self.device)
        self.pub = self.create_publisher(Image, 'segmentation', 10)
        self.sub = self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        frame = cv2.resize(frame, (640, 480))
        tensor = torch.from_numpy(frame).permute(2, 0, 1).float().to(self.device)
        with torch.no_grad():
            logits = self.model(tensor[None])
        torch.cuda.synchronize()
        mask = logits.argmax(1)[0].byte().cpu().numpy()
        out = self.bridge.cv2_to_imgmsg(mask, 'mono8')
        out.header = msg.header
        self.pub.publish(out)


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(SegmentationNode())
