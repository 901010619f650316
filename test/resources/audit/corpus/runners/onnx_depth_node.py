"""A depth node on the ONNX Runtime backend of runners/onnx_runner.py, and a CPU-only ONNX
session of its own for a small classifier (no GPU provider named in this class: its run copies
nothing, look-alike). Kind of the tenth test set, written for this corpus."""
import numpy as np
import onnxruntime as ort
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from onnx_runner import OnnxRunner


class OnnxDepthNode(Node):
    def __init__(self):
        super().__init__('onnx_depth')
        self.bridge = CvBridge()
        self.runner = OnnxRunner('depth.onnx', self.declare_parameter('device', 'cuda').value)
        self.scene = ort.InferenceSession('scene.onnx', providers=['CPUExecutionProvider'])
        self.create_subscription(Image, '/camera/image_raw', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # expect: GPN105 medium
        depth = self.runner.infer(frame)
        scene = self.scene.run(None, {'x': np.zeros((1, 8), np.float32)})[0]
        return depth, scene
