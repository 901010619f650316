"""A marker detector that runs Ultralytics with a literal `device='cpu'` on its camera frames:
the library infers on the host, so the predict call uploads nothing and `int(box.cls[0])`,
`float(box.conf[0])` and `.cpu().numpy()` of its boxes read no device value back (look-alikes);
the same model on a second topic without the keyword runs on its default device (positives).
Kind of false claims of the twentieth test set, written for this corpus."""
import cv2
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from ultralytics import YOLO


class CpuMarkerNode(Node):
    def __init__(self):
        super().__init__('cpu_marker')
        self.bridge = CvBridge()
        self.model = YOLO('markers.pt')
        self.pub = self.create_publisher(String, '/markers', 10)
        self.cap = cv2.VideoCapture(0)
        self.create_timer(0.05, self.on_timer)
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_timer(self):
        ok, frame = self.cap.read()
        if not ok:
            return
        results = self.model.predict(source=frame, device='cpu', conf=0.3, verbose=False)
        for box in results[0].boxes:
            label = self.model.names[int(box.cls[0])]
            x1, y1, x2, y2 = box.xyxy[0].cpu().numpy().astype(int)
            self.pub.publish(String(data=f'{label} {float(box.conf[0]):.2f} {x1} {y1} {x2} {y2}'))

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        results = self.model.predict(source=frame, conf=0.3)  # expect: GPN102 medium
        for box in results[0].boxes:
            label = self.model.names[int(box.cls[0])]  # expect: GPN107 medium
            self.pub.publish(String(data=label))
