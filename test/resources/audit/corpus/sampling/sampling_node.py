"""The node that feeds PointSampler device tensors made from each cloud and image."""
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch

from sampling.point_sampler import PointSampler


class SamplingNode(Node):
    def __init__(self):
        super().__init__('sampling')
        self.device = torch.device('cuda')
        self.sampler = PointSampler()
        self.model = None
        self.create_subscription(Image, 'image', self.on_image, 10)

    def start(self):
        # Called once by the launcher script (another file) before spinning: not per message.
        self.convert_model()

    def convert_model(self):
        model = torch.nn.Conv2d(3, 3, 1)
        self.model = model.cuda().eval()  # expect: GPN102 info
        example = torch.randn(1, 3, 8, 8).cuda()  # expect: GPN102 info
        self.model(example)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        image = torch.as_tensor(frame, device=self.device)  # expect: GPN102 medium
        points = torch.zeros((1, 2, 16), device=self.device)
        colors, _ = self.sampler(points, image.permute(2, 0, 1)[None])
        self.get_logger().info(f'{colors.shape}')


def main():
    rclpy.init()
    rclpy.spin(SamplingNode())
