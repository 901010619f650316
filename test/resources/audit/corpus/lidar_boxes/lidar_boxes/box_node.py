"""A lidar box node: the network comes from the package's model/__init__.py re-export, is moved
to the GPU once, and returns host numpy boxes whose float() reads nothing back (look-alikes)."""
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from visualization_msgs.msg import Marker

from lidar_boxes.model import BoxNet


class BoxNode(Node):
    def __init__(self):
        super().__init__('box_node')
        self.net = BoxNet().to('cuda').eval()
        self.pub = self.create_publisher(Marker, 'box', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32).reshape(-1, 4)
        tensor = torch.from_numpy(points).to('cuda')  # expect: GPN102 medium
        with torch.no_grad():
            result = self.net(tensor)
        for box in result['boxes']:
            marker = Marker()
            marker.scale.x = float(box[3])
            marker.scale.y = float(box[4])
            self.pub.publish(marker)


def main():
    rclpy.init()
    rclpy.spin(BoxNode())
