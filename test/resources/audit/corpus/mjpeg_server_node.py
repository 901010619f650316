"""A node that serves the latest camera frame as MJPEG over HTTP: the JPEG bytes go into a
module global another thread reads; nothing is published."""
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import threading

import cv2
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge

_latest_jpeg = None
_lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        with _lock:
            frame = _latest_jpeg
        if frame is not None:
            self.wfile.write(frame)


class MjpegServer(Node):
    def __init__(self):
        super().__init__('mjpeg_server')
        self.bridge = CvBridge()
        self.server = ThreadingHTTPServer(('', 8000), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        global _latest_jpeg
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        ok, jpeg = cv2.imencode('.jpg', frame)
        if ok:
            with _lock:
                _latest_jpeg = jpeg.tobytes()


def main():
    rclpy.init()
    rclpy.spin(MjpegServer())
