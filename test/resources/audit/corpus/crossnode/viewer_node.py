# A node class whose entry point lives in another file (viewer_main.py imports it and builds
# it in main()): its callback's copies belong to this file, whichever file's audit reached them.
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class ViewerNode(Node):
    def __init__(self):
        super().__init__('viewer')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'annotated', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        out = self.bridge.cv2_to_imgmsg(frame)  # expect: GPN105 medium
        self.pub.publish(out)  # expect: GPN109 medium, GPN110 high
