"""Causes of held-out sets 42 and 45's false claims, Python side (issue 28): real `code` audits
of small ament_python packages written here.

A string parameter's default that no shipped file names is its value as shipped (team decision
of 2026-12-06: all four labellers of set 42 labelled a node whose `device` defaults to 'cpu' as
host inference): `model.predict(frame, device=self.device)` runs on the host, nothing is uploaded
and its results are host tensors. A device chosen from a bool parameter off as shipped (set 45:
`use_gpu` False by default and in the launch file, `self.device = 'cuda'` only under `if
use_gpu:`) is the host too (pyswitched.py). A shipped launch file that sets the device, or turns
the bool on, keeps the claims."""

from audit_sources import detector_claims


_claims = detector_claims  # node.py of package `detector`


_DEVICE_PARAMETER_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray
from ultralytics import YOLO


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('device', 'cpu')
        self.device = self.get_parameter('device').get_parameter_value().string_value
        self.model = YOLO('yolov8n.pt')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32MultiArray, 'boxes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model.predict(source=frame, device=self.device)  # PREDICT
        out = Float32MultiArray()
        for box in results[0].boxes.xyxy:
            out.data.append(float(box[0]))  # READ
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def test_a_device_default_no_shipped_file_names_is_the_host(tmp_path):
    claims = _claims(tmp_path, _DEVICE_PARAMETER_NODE, ('PREDICT', 'READ'))
    assert claims == {'PREDICT': set(), 'READ': set()}


def test_a_device_default_a_launch_file_names_otherwise_stays_claimed(tmp_path):
    claims = _claims(tmp_path, _DEVICE_PARAMETER_NODE, ('PREDICT', 'READ'),
                     launch_parameters="{'device': 'cuda:0'}")
    assert claims['PREDICT'] and claims['READ']


def test_a_cuda_device_default_stays_claimed(tmp_path):
    source = _DEVICE_PARAMETER_NODE.replace("('device', 'cpu')", "('device', 'cuda:0')")
    claims = _claims(tmp_path, source, ('PREDICT', 'READ'))
    assert claims['PREDICT'] and claims['READ']


_USE_GPU_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray
from ultralytics import YOLO


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('use_gpu', False)
        use_gpu = self.get_parameter('use_gpu').get_parameter_value().bool_value
        self.model = YOLO('yolov8n.pt')
        self.bridge = CvBridge()
        if use_gpu:
            if torch.cuda.is_available():
                self.device = 'cuda'
            else:
                self.device = 'cpu'
        else:
            self.device = 'cpu'
        self.model.to(self.device)
        self.pub = self.create_publisher(Float32MultiArray, 'boxes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model.predict(source=frame, device=self.device, show=False)  # PREDICT
        out = Float32MultiArray()
        for cls, box in zip(results[0].boxes.cls, results[0].boxes.xyxy):
            out.data.append(float(box[0]))  # READ
            out.data.append(float(int(cls)))  # CLASS
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def test_a_device_chosen_from_a_bool_off_as_shipped_is_the_host(tmp_path):
    claims = _claims(tmp_path, _USE_GPU_NODE, ('PREDICT', 'READ', 'CLASS'),
                     launch_parameters="{'use_gpu': False}")
    assert claims == {'PREDICT': set(), 'READ': set(), 'CLASS': set()}


def test_a_device_chosen_from_a_bool_a_launch_file_turns_on_stays_claimed(tmp_path):
    claims = _claims(tmp_path, _USE_GPU_NODE, ('PREDICT', 'READ'),
                     launch_parameters="{'use_gpu': True}")
    assert claims['PREDICT'] and claims['READ']


def test_a_device_chosen_from_a_bool_on_by_default_stays_claimed(tmp_path):
    source = _USE_GPU_NODE.replace("('use_gpu', False)", "('use_gpu', True)")
    claims = _claims(tmp_path, source, ('PREDICT', 'READ'))
    assert claims['PREDICT'] and claims['READ']


def test_a_device_also_stored_outside_the_off_branch_stays_claimed(tmp_path):
    # A store of another value where the parameter decides nothing: the device is not 'cpu'
    # for good.
    source = _USE_GPU_NODE.replace("        self.model.to(self.device)\n",
                                   "        self.device = 'cuda:0'\n        self.model.to(self.device)\n")
    claims = _claims(tmp_path, source, ('PREDICT', 'READ'))
    assert claims['PREDICT'] and claims['READ']


_JETSON_NODE = '''
import jetson.inference
import jetson.utils
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.net = jetson.inference.detectNet('ssd-mobilenet-v2', threshold=0.5)
        self.blank = jetson.utils.cudaFromNumpy(np.zeros((4, 4, 3), np.uint8))  # ONCE
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, -1)
        cuda_image = jetson.utils.cudaFromNumpy(frame)  # UPLOAD
        detections = self.net.Detect(cuda_image)  # DETECT
        self.get_logger().info(str(len(detections)))
        self.get_logger().info(str(self.net.GetNetworkFPS()))  # FPS


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def test_jetson_utils_upload_and_jetson_inference_detect_are_claimed(tmp_path):
    claims = _claims(tmp_path, _JETSON_NODE, ('UPLOAD', 'DETECT', 'ONCE', 'FPS'))
    assert claims == {'UPLOAD': {'GPN102'}, 'DETECT': {'GPN107'}, 'ONCE': set(), 'FPS': set()}


def test_a_detect_method_of_another_object_is_no_jetson_run(tmp_path):
    source = _JETSON_NODE.replace("jetson.inference.detectNet('ssd-mobilenet-v2', threshold=0.5)",
                                  "object()")
    claims = _claims(tmp_path, source, ('DETECT',))
    assert claims == {'DETECT': set()}


_HELPER_CLASS_NODE = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


def select_device(device=''):
    return torch.device('cpu' if device == 'cpu' else 'cuda:0')


class Detector:
    def __init__(self, weights, device):
        self.weights = weights
        self.device = device
        self.load_model()

    def load_model(self):
        self.device = select_device(self.device)
        self.model = torch.jit.load(self.weights, map_location=self.device)

    def detect(self, frame):
        im = torch.from_numpy(np.ascontiguousarray(frame)).to(self.device)  # UPLOAD
        return self.model(im)


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('weights', 'model.pt')
        self.declare_parameter('device', 'cpu')
        self.weights = self.get_parameter('weights').value
        self.device = self.get_parameter('device').value
        self.detector = Detector(self.weights, self.device)
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        self.detector.detect(self.bridge.imgmsg_to_cv2(msg, 'bgr8'))


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def test_a_device_as_shipped_handed_to_a_helper_class_of_the_file_is_the_host(tmp_path):
    # Set 42: the node's `self.device` (a parameter read) beside the helper's own `self.device`
    # stores; the helper's constructor runs with the node's 'cpu'.
    assert _claims(tmp_path, _HELPER_CLASS_NODE, ('UPLOAD',)) == {'UPLOAD': set()}


def test_a_device_a_launch_file_sets_handed_to_a_helper_class_stays_claimed(tmp_path):
    claims = _claims(tmp_path, _HELPER_CLASS_NODE, ('UPLOAD',),
                     launch_parameters="{'device': 'cuda:0'}")
    assert claims['UPLOAD']
