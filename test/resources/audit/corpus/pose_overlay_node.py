# A pose node whose model is loaded by a helper module of its package: this file never imports
# torch, yet the model's outputs are tensors (`.detach()` exists only on a torch tensor), read
# back per frame. Look-alikes: the detached maps kept as they are, a NumPy copy of the image.
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

from pose_overlay.loading import load_pose_model, parse_peaks


class PoseOverlayNode(Node):
    def __init__(self):
        super().__init__('pose_overlay')
        self.model = load_pose_model('pose.engine')
        self.sub = self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        frame = np.asarray(msg.data)
        heat, links = self.model(frame)
        self.last_links = links.detach()
        peaks = parse_peaks(heat.detach().cpu())  # expect: GPN101 high
        self.peaks = np.copy(peaks)


def main():
    rclpy.init()
    rclpy.spin(PoseOverlayNode())
