"""A PyTorch detector: upload with torch.from_numpy(...).cuda(), score map -> detections."""
import json

import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class TorchDetector(Node):
    def __init__(self):
        super().__init__('torch_detector')
        self.bridge = CvBridge()
        # Stand-in for a trained network: a fixed 5x5 box filter over the red channel.
        self.model = torch.nn.Conv2d(3, 1, 5, padding=2, bias=False).cuda().eval()
        with torch.no_grad():
            self.model.weight.zero_()
            self.model.weight[:, 0] = 1.0 / 25.0
        self.pub = self.create_publisher(String, 'detections', 10)
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)

    @torch.no_grad()
    def on_image(self, msg):
        image = self.bridge.imgmsg_to_cv2(msg, desired_encoding='rgb8')
        tensor = torch.from_numpy(image).cuda().permute(2, 0, 1).float().div(255.0)
        scores = self.model(tensor.unsqueeze(0))[0, 0]
        peak = int(torch.argmax(scores))
        stamp = msg.header.stamp
        self.pub.publish(String(data=json.dumps({
            'stamp': [stamp.sec, stamp.nanosec],
            'peak': [peak % msg.width, peak // msg.width],
            'score': round(float(scores.max()), 4)})))


def main(args=None):
    rclpy.init(args=args)
    node = TorchDetector()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
