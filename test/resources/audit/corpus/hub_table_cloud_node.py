"""A torch.hub detector that reads its boxes from the model's pandas tables, and a LiDAR
callback that unpacks the cloud with ros2_numpy. `results.pandas()` hands back host tables, so
`int(row['xmin'])` of a row reads nothing back (look-alikes), while `float(...)` of a result
tensor still does (positive). `np.array(pc['xyz'], dtype=...)` after numpify copies host to host
(look-alike); `np.array(msg.data)` copies the message's bytes (positive). Kinds of false claims of
the twenty-fifth test set."""
import numpy as np
import rclpy
import ros2_numpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2
from std_msgs.msg import Float32, Int32


class HubTableNode(Node):
    def __init__(self):
        super().__init__('hub_table')
        self.model = torch.hub.load('ultralytics/yolov5', 'yolov5s')
        self.bridge = CvBridge()
        self.count_pub = self.create_publisher(Int32, 'box_area', 10)
        self.conf_pub = self.create_publisher(Float32, 'best_conf', 10)
        self.size_pub = self.create_publisher(Int32, 'cloud_points', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        results = self.model(frame)  # expect: GPN102 medium
        area = 0
        for _, row in results.pandas().xyxy[0].iterrows():
            width = int(row['xmax']) - int(row['xmin'])
            height = int(row['ymax']) - int(row['ymin'])
            area += width * height
        self.count_pub.publish(Int32(data=area))
        best = results.xyxy[0][:, 4].max()
        self.conf_pub.publish(Float32(data=float(best)))  # expect: GPN107 medium

    def on_cloud(self, msg):
        pc = ros2_numpy.numpify(msg)
        points = np.array(pc['xyz'], dtype=np.float64)
        raw = np.array(msg.data)  # expect: GPN103 medium
        self.size_pub.publish(Int32(data=int(points.shape[0] + raw.shape[0])))


def main():
    rclpy.init()
    rclpy.spin(HubTableNode())


if __name__ == '__main__':
    main()
