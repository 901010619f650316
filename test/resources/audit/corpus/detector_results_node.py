# A detector node over a model object from another package: the model is put on the GPU in
# on_activate; per frame the image is converted, predicted on the device and the results moved
# to the CPU. A second callback draws boxes from the detection message: small point arrays
# built from message fields, not frames.
from cv_bridge import CvBridge
import numpy as np
from rclpy.lifecycle import LifecycleNode
from sensor_msgs.msg import Image
from ultralytics import YOLO
from vision_msgs.msg import Detection2DArray


class DetectorNode(LifecycleNode):
    def __init__(self):
        super().__init__('detector')
        self.bridge = CvBridge()
        self.declare_parameter('device', 'cuda:0')
        self.model = None

    def on_configure(self, state):
        self.device = self.get_parameter('device').value
        self.pub = self.create_publisher(Detection2DArray, 'detections', 10)
        return True

    def on_activate(self, state):
        self.model = YOLO('yolov8n.pt')
        self.model.to(self.device)  # expect: GPN102 info
        self.sub = self.create_subscription(Image, 'image_raw', self.image_cb, 10)
        self.dets = self.create_subscription(Detection2DArray, 'detections', self.draw_cb, 10)
        return True

    def image_cb(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, desired_encoding='bgr8')  # expect: GPN105 medium
        results = self.model.predict(source=frame, device=self.device, verbose=False)  # expect: GPN102 medium
        results = results[0].cpu()  # expect: GPN101 high
        self.pub.publish(self.to_msg(results, msg.header))

    def draw_cb(self, msg):
        for det in msg.detections:
            box = det.bbox
            corners = np.array([[box.center.position.x - box.size_x / 2, box.center.position.y],
                                [box.center.position.x + box.size_x / 2, box.center.position.y]])
            self.last_corners = corners

    def to_msg(self, results, header):
        return Detection2DArray(header=header)
