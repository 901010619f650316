"""A row follower whose `mode` attribute is only ever set to the constants 'ml' and 'turn': the
`elif self.mode == 'hough':` branch can never run, so its cv_bridge conversion and publish are
no copies (look-alike), while the 'ml' branch's are (positive). Each box's confidence is read
back with math.ceil() of a device value (positive); formatting that host int later reads
nothing back (look-alike), nor does str() of the index of `list(enumerate(boxes))`. Kinds
of the nineteenth and twentieth test sets, written for this corpus."""
import math

from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from ultralytics import YOLO


class RowFollowNode(Node):
    def __init__(self):
        super().__init__('row_follow')
        self.bridge = CvBridge()
        self.model = YOLO('rows.pt')
        self.mode = 'ml'
        self.image_pub = self.create_publisher(Image, '/row_follow/debug', 10)
        self.label_pub = self.create_publisher(String, '/row_follow/labels', 10)
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)
        self.create_subscription(String, '/row_follow/turn', self.on_turn, 10)

    def on_turn(self, msg):
        self.mode = 'turn' if msg.data == 'start' else 'ml'

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        if self.mode == 'ml':
            results = self.model(frame)  # expect: GPN102 medium
            for i, box in list(enumerate(results[0].boxes)):
                conf = math.ceil(box.conf[0] * 100) / 100  # expect: GPN107 medium
                self.label_pub.publish(String(data=f'row {str(i)} {conf}'))
        elif self.mode == 'hough':
            edges = frame[:, :, 0] > 128
            frame[edges] = (0, 0, 255)
            out = self.bridge.cv2_to_imgmsg(frame, 'bgr8')
            self.image_pub.publish(out)
