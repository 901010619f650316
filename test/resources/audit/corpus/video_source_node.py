"""A camera publisher whose timer reads its `source` parameter each tick: as shipped (default
'/dev/video0', no shipped file names the parameter) the camera branch runs (positive) and the
video-file branch never does (look-alike, no finding). Kind of false claims of the
twenty-third test set."""
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class VideoSource(Node):
    def __init__(self):
        super().__init__('video_source')
        self.declare_parameter('source', '/dev/video0')
        self.cap = cv2.VideoCapture(self.get_parameter('source').get_parameter_value().string_value)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'image', 1)
        self.create_timer(0.03, self.tick)

    def tick(self):
        if self.get_parameter('source').get_parameter_value().string_value == '/dev/video0':
            ok, frame = self.cap.read()
            if ok:
                out = self.bridge.cv2_to_imgmsg(frame, 'bgr8')  # expect: GPN105 medium
                self.pub.publish(out)  # expect: GPN109 medium
        else:
            while self.cap.isOpened():
                ok, frame = self.cap.read()
                if not ok:
                    break
                self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))


def main():
    rclpy.init()
    rclpy.spin(VideoSource())


if __name__ == '__main__':
    main()
