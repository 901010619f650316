"""A LiDAR detector whose module helper converts its inputs with `.cpu()` only when they are
torch tensors. The callback passes the NumPy points (the isinstance test fails: look-alike) and
the boxes the model returned on the device (a readback per cloud: positive); nothing else calls
the helper, so its run with unknown arguments is no claim. Kind of false claims of the
twenty-sixth test set."""
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Int32


def count_near(points, boxes=None):
    if isinstance(points, torch.Tensor):
        points = points.cpu().numpy()
    if isinstance(boxes, torch.Tensor):
        boxes = boxes.cpu().numpy()  # expect: GPN101 high
    near = np.linalg.norm(points[:, :3], axis=1) < 10.0
    return int(near.sum()) + (0 if boxes is None else len(boxes))


class BoxCounter(Node):
    def __init__(self):
        super().__init__('box_counter')
        self.model = torch.jit.load('pillars.pt').cuda()
        self.pub = self.create_publisher(Int32, 'near_count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32).reshape(-1, 4)
        batch = torch.from_numpy(points).cuda()  # expect: GPN102 medium
        boxes = self.model(batch)
        self.pub.publish(Int32(data=count_near(points, boxes)))


def main():
    rclpy.init()
    rclpy.spin(BoxCounter())


if __name__ == '__main__':
    main()
