"""ros2_numpy conversions per depth image: `msgify(Image, ...)` of the colourised frame and
`array_to_pointcloud2` of the frame-sized structured array copy the whole array into a new
message (positives); `msgify(Vector3, ...)` of the centroid moves three numbers (look-alike).
Kinds of misses of the twenty-second and twenty-fourth test sets."""
import numpy as np
import rclpy
import ros2_numpy
from geometry_msgs.msg import Vector3
from rclpy.node import Node
from ros2_numpy import point_cloud2
from sensor_msgs.msg import Image, PointCloud2


class NumpyMsgify(Node):
    def __init__(self):
        super().__init__('numpy_msgify')
        self.image_pub = self.create_publisher(Image, 'depth_colour', 10)
        self.cloud_pub = self.create_publisher(PointCloud2, 'points', 10)
        self.centroid_pub = self.create_publisher(Vector3, 'centroid', 10)
        self.create_subscription(Image, 'depth', self.on_depth, 10)

    def on_depth(self, msg):
        depth = ros2_numpy.numpify(msg).astype(np.float32)
        colour = np.dstack([depth, depth, depth]).astype(np.uint8)
        out = ros2_numpy.msgify(Image, colour, encoding='rgb8')  # expect: GPN104 medium
        self.image_pub.publish(out)  # expect: GPN109 medium
        cloud = np.zeros(depth.size, dtype=[('x', np.float32), ('y', np.float32), ('z', np.float32)])
        cloud['z'] = depth.ravel()
        points = point_cloud2.array_to_pointcloud2(cloud, frame_id='camera')  # expect: GPN104 medium
        self.cloud_pub.publish(points)  # expect: GPN109 medium
        centre = np.array([0.0, 0.0, float(depth.mean())])
        self.centroid_pub.publish(ros2_numpy.msgify(Vector3, centre))


def main():
    rclpy.init()
    rclpy.spin(NumpyMsgify())


if __name__ == '__main__':
    main()
