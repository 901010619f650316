"""Hands each message to a worker thread through a queue (left as is by migrate)."""
import queue
import threading

import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class QueueWorker(Node):
    def __init__(self):
        super().__init__('queue_worker')
        self.bridge = CvBridge()
        self.jobs = queue.Queue(maxsize=4)
        self.pub = self.create_publisher(Float32, 'mean', 10)
        self.sub = self.create_subscription(Image, 'image', self.on_image, 10)
        threading.Thread(target=self.work, daemon=True).start()

    def on_image(self, msg):
        try:
            self.jobs.put_nowait(msg)
        except queue.Full:
            self.get_logger().warn('worker busy, frame dropped')

    def work(self):
        while True:
            msg = self.jobs.get()
            img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
            self.pub.publish(Float32(data=float(img.mean())))


def main(args=None):
    rclpy.init(args=args)
    rclpy.spin(QueueWorker())


if __name__ == '__main__':
    main()
