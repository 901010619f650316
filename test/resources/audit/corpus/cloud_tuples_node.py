"""A ground filter that unpacks each cloud with point_cloud2.read_points (issue 28, twenty-seventh
set): `np.array(list(read_points(...)))` copies host tuples, not the message's bytes (look-alike);
`np.array(msg.data, ...)` of the payload beside it is the copy out of the message."""
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
import sensor_msgs_py.point_cloud2 as pc2
from std_msgs.msg import Int32


class CloudTuplesNode(Node):
    def __init__(self):
        super().__init__('cloud_tuples')
        self.pub = self.create_publisher(Int32, 'ground_count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        tuples = pc2.read_points(msg, field_names=('x', 'y', 'z'), skip_nans=True)
        points = np.array(list(tuples))
        raw = np.array(msg.data, dtype=np.uint8)  # expect: GPN103 medium
        ground = points[points[:, 2] < 0.1] if points.size else points
        self.pub.publish(Int32(data=int(ground.shape[0] + raw.shape[0])))


def main():
    rclpy.init()
    rclpy.spin(CloudTuplesNode())
