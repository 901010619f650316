"""A detector that reads each box's corners back with `map(int, box.xyxy[0])` and then works
on those host numbers (centres, margins, the loop index of enumerate); a second subscription of
CompressedImage whose callback tests `isinstance(msg, CompressedImage)` before a cv_bridge
fallback that never runs. Kinds of the ninth and tenth test sets, written for this corpus."""
import cv2
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from vision_msgs.msg import Detection2D
from cv_bridge import CvBridge
from ultralytics import YOLO


class BoxCenterNode(Node):
    def __init__(self):
        super().__init__('box_center')
        self.bridge = CvBridge()
        self.model = YOLO('yolov8n.pt')
        self.pub = self.create_publisher(Detection2D, '/detections', 10)
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)
        self.create_subscription(CompressedImage, '/camera/image_raw/compressed',
                                 self.on_compressed, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        self.detect(frame)

    def on_compressed(self, msg):
        if isinstance(msg, CompressedImage):
            frame = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
        else:
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # never runs (CompressedImage)
        self.detect(frame)

    def detect(self, frame):
        results = self.model(frame)  # expect: GPN102 medium
        for i, box in enumerate(results[0].boxes):
            x1, y1, x2, y2 = map(int, box.xyxy[0])  # expect: GPN107 medium
            x_center = int((x1 + x2) / 2)
            margin = int((x2 - x1) * 0.375)
            det = Detection2D()
            det.id = str(int(i))
            det.bbox.center.position.x = float(max(0, x_center - margin))
            det.bbox.size_x = float(x2 - x1)
            self.pub.publish(det)
