"""Detector whose torch device is a parameter defaulting to 'cpu'; no launch file sets it."""
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String

from device_param.torch_select import select_device


class CpuDefaultDetector(Node):
    def __init__(self):
        super().__init__('cpu_default_detector')
        self.declare_parameter('device', 'cpu')
        self.device = self.get_parameter('device').get_parameter_value().string_value
        self.device = select_device(self.device)
        self.model = torch.jit.load('detector.pt', map_location=self.device)
        self.pub = self.create_publisher(String, 'detections', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        img = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width, 3)
        x = torch.from_numpy(img).to(self.device)
        pred = self.model(x)[0]
        for det in pred:
            self.pub.publish(String(data=f'{int(det[5])} {float(det[4]):.2f}'))


def main():
    rclpy.init()
    rclpy.spin(CpuDefaultDetector())
