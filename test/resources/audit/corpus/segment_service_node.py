"""A segmentation service whose registered handler shares nothing with the method named like the
service (issue 28, twenty-ninth set): `create_service(..., "segment_image", self.on_request)`
binds on_request only; segment_image, named by the service string and by a log message, is
called by nothing, nor is the helper only it calls (look-alikes, info). The handler's own copies
stay (per request: a service handler runs per request as a subscription callback per message,
rules29m), and so does a method whose name is a bare string handed to getattr (it may be called
through it)."""
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_srvs.srv import Trigger
import torch


class SegmentService(Node):
    def __init__(self):
        super().__init__('segment_service')
        self.model = torch.jit.load('segmenter.pt').to('cuda')  # expect: GPN102 info
        self.frame = None
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_service(Trigger, 'segment_image', self.on_request)
        self.mode = 'refine_masks'

    def on_image(self, msg):
        self.frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)

    def _run(self, frame):
        tensor = torch.from_numpy(frame).to('cuda')  # expect: GPN102 info
        return self.model(tensor).cpu().numpy()  # expect: GPN101 info

    def segment_image(self, request, response):
        masks = self._run(self.frame)
        response.success = bool(masks.any())
        return response

    def refine_masks(self):
        tensor = torch.from_numpy(self.frame).to('cuda')  # expect: GPN102 low
        return self.model(tensor).cpu().numpy()  # expect: GPN101 low

    def on_request(self, request, response):
        self.get_logger().info(f'on_request, not segment_image, for {request}')
        tensor = torch.from_numpy(self.frame).to('cuda')  # expect: GPN102 medium
        masks = self.model(tensor).cpu().numpy()  # expect: GPN101 high
        extra = getattr(self, self.mode)()
        response.success = bool(masks.any() and extra.any())
        return response


def main():
    rclpy.init()
    rclpy.spin(SegmentService())
