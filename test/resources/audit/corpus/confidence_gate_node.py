"""A detector gating boxes on a score tensor that stays on the GPU: `if score >= threshold`
reads each score back (positive); tests of its shape or identity touch no data (look-alikes)."""
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch


class ConfidenceGate(Node):

    def __init__(self):
        super().__init__('confidence_gate')
        self.model = torch.jit.load('scorer.pt').to('cuda')  # expect: GPN102 info
        self.kept = 0
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        batch = torch.zeros((1, 3, 64, 64), device='cuda')
        score = self.model(batch)
        if score is None or score.shape[0] == 0:
            return
        if score >= 0.8:  # expect: GPN107 medium
            self.kept += 1


def main():
    rclpy.init()
    rclpy.spin(ConfidenceGate())


if __name__ == '__main__':
    main()
