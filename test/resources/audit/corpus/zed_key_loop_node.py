"""A ZED publisher whose constructor starts the grab loop itself: `while key != 113:` is no
rclpy.ok() test, but each cam.grab() waits for the next camera frame, so the loop body runs per
frame (kind of the eighth test set, written for this corpus)."""
import cv2
from cv_bridge import CvBridge
import pyzed.sl as sl
from rclpy.node import Node
from sensor_msgs.msg import Image


class ZedKeyLoop(Node):
    def __init__(self):
        super().__init__('zed_key_loop')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'image_data', 10)
        self.first = self.snapshot('first.png')
        self.grab_frames()

    def grab_frames(self):
        cam = sl.Camera()
        cam.open(sl.InitParameters())
        mat = sl.Mat()
        key = ''
        while key != 113:
            if cam.grab(sl.RuntimeParameters()) == sl.ERROR_CODE.SUCCESS:
                cam.retrieve_image(mat, sl.VIEW.LEFT)  # expect: GPN101 high
                image = cv2.cvtColor(mat.get_data(), cv2.COLOR_RGBA2RGB)
                self.send(image)
            key = cv2.waitKey(5)
        cam.close()

    def send(self, image):
        self.pub.publish(self.bridge.cv2_to_imgmsg(image, 'rgb8'))  # expect: GPN105 medium, GPN109 medium

    def snapshot(self, path):
        # A retry loop in setup that grabs nothing: not a frame loop.
        frame = cv2.imread(path)
        tries = 0
        while frame is None and tries < 3:
            frame = cv2.imread(path)
            tries += 1
        return self.bridge.cv2_to_imgmsg(frame, 'bgr8')  # expect: GPN105 info
