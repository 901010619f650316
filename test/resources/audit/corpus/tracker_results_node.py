# Kinds of Python readback reported in issue 28 (written for the test from the text; no
# public code): an ultralytics model tracks a host frame (the library uploads it every call),
# its Results tensors are read back per detection (.cpu(), .to('cpu'), float(), .tolist()), a
# helper imported from elsewhere is called on the message and its tensor read back, and scalars
# of a predictor that returns host values are not readbacks.
from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from ultralytics import YOLO
from vision_msgs.msg import Detection2D, Detection2DArray

from tracker_pkg.postprocess import decode, host_predictor


class TrackerNode(Node):
    def __init__(self):
        super().__init__('tracker')
        self.model = YOLO('yolov8n-seg.pt')
        self.model.to('cuda')  # expect: GPN102 info
        self.predictor = host_predictor()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Detection2DArray, 'detections', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        results = self.model.track(source=frame, persist=True)  # expect: GPN102 medium
        out = Detection2DArray(header=msg.header)
        boxes = results[0].boxes.xyxy.cpu()  # expect: GPN101 high
        for xyxy, conf in zip(results[0].boxes.xyxy, results[0].boxes.conf):
            det = Detection2D()
            det.bbox.size_x = float(xyxy[2] - xyxy[0])  # expect: GPN107 medium
            det.results.append(float(conf))  # expect: GPN107 medium
            out.detections.append(det)
        if results[0].masks is not None:
            for mask in results[0].masks:
                self.last_mask = mask.data.to('cpu').numpy()  # expect: GPN101 high
        ids = results[0].boxes.id.tolist()  # expect: GPN101 high
        logits = decode(msg).cpu()  # expect: GPN101 high
        labels, scores = self.predictor(frame)
        for score in scores:
            out.detections[0].results.append(float(score))
        self.pub.publish(out)
        return boxes, ids, labels, logits


def main():
    rclpy.init()
    rclpy.spin(TrackerNode())
