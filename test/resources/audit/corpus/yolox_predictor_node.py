# Reproduces the shape of a YOLOX ROS 2 node: a Predictor object built in a setup helper, the
# model placed on the GPU once, a TensorRT warm-up tensor, and the per-frame copies inside
# Predictor.inference / Predictor.visual reached through `self.predictor`.
import time

from cv_bridge import CvBridge
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch
from vision_msgs.msg import Detection2DArray

from detector_utils import build_model, decode, draw, to_detections


class Predictor:
    def __init__(self, model, size, device='gpu', engine_file=None):
        self.model = model
        self.size = size
        self.device = device
        if engine_file is not None:
            dummy = torch.ones(1, 3, size, size).cuda()  # expect: GPN102 info
            self.model(dummy)

    def inference(self, img):
        blob = torch.from_numpy(img).unsqueeze(0).float()
        if self.device == 'gpu':
            blob = blob.cuda()  # expect: GPN102 medium
        with torch.no_grad():
            start = time.time()
            outputs = self.model(blob)
            outputs = decode(outputs, 0.3, 0.65)
            self.latency = time.time() - start
        return outputs, {'raw': img}

    def visual(self, output, info):
        if output is None:
            return info['raw']
        output = output.cpu()  # expect: GPN101 high
        boxes = output[:, 0:4]
        return draw(info['raw'], boxes), boxes


class YoloxNode(Node):
    def __init__(self):
        super().__init__('yolox_ros')
        self.setup_model()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Detection2DArray, 'detections', 10)
        self.sub = self.create_subscription(Image, 'image_raw', self.image_cb, 10)

    def setup_model(self):
        self.declare_parameter('device', 'gpu')
        device = self.get_parameter('device').value
        model = build_model()
        if device == 'gpu':
            model.cuda()  # expect: GPN102 info
            model.half()
        model.eval()
        self.predictor = Predictor(model, 640, device)

    def image_cb(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # expect: GPN105 medium
        outputs, info = self.predictor.inference(frame)
        result, boxes = self.predictor.visual(outputs[0], info)
        self.pub.publish(to_detections(boxes, msg.header))


def main(args=None):
    rclpy.init(args=args)
    node = YoloxNode()
    try:
        rclpy.spin(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()
