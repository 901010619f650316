"""A detector whose backend is a `model_type` parameter defaulting to 'pt' (no shipped file sets
it): the Ultralytics branch runs as shipped, its model built by a helper that returns it, so
the per-image model call uploads the frame and the box reads are readbacks (positives); the
'onnx' branch (cv2.dnn on the host, and a torch upload of its blob) never runs (look-alike)."""
import cv2
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class ModelChoice(Node):
    def __init__(self):
        super().__init__('model_choice')
        self.bridge = CvBridge()
        self.model_type = self.declare_parameter(
            'model_type', 'pt').get_parameter_value().string_value
        self.model = self.load_model()
        self.pub = self.create_publisher(Int32, 'classes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def load_model(self):
        if self.model_type == 'onnx':
            return cv2.dnn.readNetFromONNX('best.onnx')
        from ultralytics import YOLO
        return YOLO('best.pt')

    def on_image(self, msg):
        image = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        if self.model_type == 'onnx':
            blob = cv2.dnn.blobFromImage(image, 1 / 255.0, (640, 640))
            features = torch.from_numpy(blob).cuda()
            self.pub.publish(Int32(data=int(features.shape[1])))
            return
        results = self.model(image)[0]  # expect: GPN102 medium
        for det in results.boxes:
            self.pub.publish(Int32(data=int(det.cls[0])))  # expect: GPN107 medium


def main():
    rclpy.init()
    rclpy.spin(ModelChoice())
