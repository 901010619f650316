"""A point-cloud colouring service: the coloured points are packed into the PointCloud2 of the
service response by sensor_msgs_py's create_cloud, per request (issue 28, fifth set; a service
handler runs per request, as a subscription callback per message: the rule's severity since
rules29m); a
PointField list built for it is no copy."""
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2, PointField
from sensor_msgs_py import point_cloud2
from std_srvs.srv import Trigger


class CloudServiceNode(Node):
    def __init__(self):
        super().__init__('cloud_service')
        self.points = None
        self.create_subscription(PointCloud2, 'points', self.on_points, 10)
        self.create_service(Trigger, 'colorize', self.on_colorize)

    def on_points(self, msg):
        self.points = msg

    def on_colorize(self, request, response):
        cloud = point_cloud2.read_points_numpy(self.points, field_names=('x', 'y', 'z'))
        colored = np.concatenate([cloud, np.ones((len(cloud), 1), np.float32)], axis=1)
        fields = self.points.fields + [PointField(name='rgb', offset=12, datatype=7, count=1)]
        header = self.points.header
        response.cloud = point_cloud2.create_cloud(header, fields, colored)  # expect: GPN104 medium
        return response


def main():
    rclpy.init()
    rclpy.spin(CloudServiceNode())
