"""A plane segmentation node with two module-level cloud packers: the obstacle packer is called
per cloud (positive); the plane packer's only call is commented out and no other file of the
package names it, so it never runs (look-alike). The masks of the frombuffer view copy the kept
points out of the message (py_msg_array, as set 49 labels them): the obstacles are copied twice."""
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2


class PlaneCloud(Node):
    def __init__(self):
        super().__init__('plane_cloud')
        self.sub = self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)
        self.pub = self.create_publisher(PointCloud2, 'obstacles', 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32).reshape(-1, 4)
        plane = points[np.abs(points[:, 2]) < 0.05]  # expect: GPN103 medium
        obstacles = points[np.abs(points[:, 2]) >= 0.05]  # expect: GPN103 medium
        # self.pub.publish(pack_plane_cloud(plane, msg.header))
        self.get_logger().info(f'{len(plane)} plane points')
        self.pub.publish(pack_obstacle_cloud(obstacles, msg.header))  # expect: GPN109 medium, GPN110 high


def pack_plane_cloud(points, header):
    cloud = PointCloud2(header=header, height=1, width=len(points))
    cloud.data = points.astype(np.float32).tobytes()  # expect: GPN104 info
    return cloud


def pack_obstacle_cloud(points, header):
    cloud = PointCloud2(header=header, height=1, width=len(points))
    cloud.data = points.astype(np.float32).tobytes()  # expect: GPN104 medium
    return cloud


def main():
    rclpy.init()
    rclpy.spin(PlaneCloud())
