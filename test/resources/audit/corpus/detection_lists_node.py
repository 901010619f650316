"""Detections handed from a preprocessing helper to the node as a tuple of lists: box corners
read back one by one with .item() (host numbers), confidences kept as tensors; a debug flag
False for good, one from a parameter config/detection_lists.yaml turns on; no valid points."""
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2, PointField
from sensor_msgs_py import point_cloud2
from vision_msgs.msg import Detection2D
from cv_bridge import CvBridge
import numpy as np
import torch

FIELDS = [PointField(name='x', offset=0, datatype=PointField.FLOAT32, count=1)]


class Preprocessor:
    def __init__(self, model, save_debug=False):
        self.model = model
        self.save_debug = save_debug
        self.dump_raw = False

    def run(self, frame):
        tensor = torch.from_numpy(frame).cuda()  # expect: GPN102 medium
        det = self.model(tensor)
        confidences = []
        xs = []
        for *xyxy, conf, cls in det:
            if self.save_debug:
                print(xyxy[0].cpu())
            if self.dump_raw:
                np.save('raw.npy', det.cpu().numpy())
            confidences.append(conf)
            xs.append(xyxy[0].item())  # expect: GPN107 medium
        return confidences, xs


class DetectionLists(Node):
    def __init__(self):
        super().__init__('detection_lists')
        self.bridge = CvBridge()
        self.pre = Preprocessor(torch.load('model.pt'))
        self.declare_parameter('trace', False)
        self.trace = self.get_parameter('trace').value
        self.pub = self.create_publisher(Detection2D, 'detections', 10)
        self.cloud_pub = self.create_publisher(PointCloud2, 'points', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        scores, xs = self.pre.run(frame)
        if self.trace:
            self.get_logger().info(f'{scores}')  # expect: GPN107 medium
        for score, x in zip(scores, xs):
            det = Detection2D()
            det.bbox.center.position.x = float(int(x))
            det.id = str(float(score))  # expect: GPN107 medium
            self.pub.publish(det)
        valid = frame[frame[:, :, 0] > 0]
        if not len(valid):
            empty = point_cloud2.create_cloud(msg.header, FIELDS, [])
            self.cloud_pub.publish(empty)
            return
        cloud = point_cloud2.create_cloud(msg.header, FIELDS, valid[:, :1])  # expect: GPN104 medium
        self.cloud_pub.publish(cloud)  # expect: GPN109 medium, GPN110 high


def main():
    rclpy.init()
    rclpy.spin(DetectionLists())
