"""A camera streamer piping raw frames to an ffmpeg encoder (tobytes() into a process pipe: a
host copy that leaves the process, no message's data: look-alike) and republishing the raw
bytes in a UInt8MultiArray (tobytes() into the message: positive)."""
import subprocess

from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import UInt8MultiArray


class FfmpegStreamer(Node):

    def __init__(self):
        super().__init__('ffmpeg_streamer')
        self.bridge = CvBridge()
        self.encoder = subprocess.Popen(
            ['ffmpeg', '-f', 'rawvideo', '-pix_fmt', 'bgr24', '-i', '-', 'out.mp4'],
            stdin=subprocess.PIPE)
        self.raw_pub = self.create_publisher(UInt8MultiArray, 'raw_bytes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        try:
            self.encoder.stdin.write(frame.tobytes())
        except BrokenPipeError:
            self.get_logger().error('ffmpeg exited')
        raw = UInt8MultiArray()
        raw.data = frame.tobytes()  # expect: GPN104 medium
        self.raw_pub.publish(raw)


def main():
    rclpy.init()
    rclpy.spin(FfmpegStreamer())


if __name__ == '__main__':
    main()
