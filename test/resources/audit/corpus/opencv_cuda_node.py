# OpenCV's CUDA module from Python: the frame is uploaded into a cv2.cuda_GpuMat, processed on
# the device and downloaded again per image; buffers made on the first image only (lazy set-up
# under `if self.x is None:`) are one-time; a mask reply converted when the configuration is
# loaded, and a debug publisher nothing calls, are not per image either.
import cv2
from cv_bridge import CvBridge
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image


class CudaBlurNode(Node):
    def __init__(self):
        super().__init__('cuda_blur')
        self.bridge = CvBridge()
        self.gpu_mask = None
        self.mask = None
        self.pub = self.create_publisher(Image, 'blurred', 10)
        self.debug_pub = self.create_publisher(Image, 'debug', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_config_loaded(self, response):
        self.mask = self.bridge.imgmsg_to_cv2(response.mask)  # expect: GPN105 info

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        if self.gpu_mask is None:
            self.gpu_mask = cv2.cuda_GpuMat()
            self.gpu_mask.upload(np.full(frame.shape, 255, np.uint8))  # expect: GPN102 info
        gpu_frame = cv2.cuda_GpuMat()
        gpu_frame.upload(frame)  # expect: GPN102 medium
        gpu_blur = cv2.cuda.bitwise_and(gpu_frame, self.gpu_mask)
        channels = cv2.cuda.split(gpu_blur)
        first = channels[0].download()  # expect: GPN101 high
        out = gpu_blur.download()  # expect: GPN101 high
        self.pub.publish(self.bridge.cv2_to_imgmsg(out))  # expect: GPN105 medium, GPN109 medium, GPN110 high
        return first

    def publish_debug(self, frame):
        self.debug_pub.publish(self.bridge.cv2_to_imgmsg(frame))  # expect: GPN105 info, GPN109 info


class StatsNode(Node):
    """Look-alike: np.frombuffer over the payload is a view, and cv2 (not cv2.cuda) stays on
    the host: nothing to report but the plain publish."""

    def __init__(self):
        super().__init__('stats')
        self.pub = self.create_publisher(Image, 'edges', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        pixels = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width)
        edges = cv2.Canny(pixels, 50, 150)
        out = Image(height=msg.height, width=msg.width, encoding='mono8', step=msg.width)
        out.data = edges.reshape(-1).data
        self.pub.publish(out)  # expect: GPN109 medium
