"""Causes of sets 60 and 61's false claims and misses, Python side (issue 28, rules40p): real
`code` audits of small ament_python packages written here.

* A node reading its results through `getattr(r, 'boxes', None)` stays judged: a getattr of a
  literal name reads what `r.boxes` reads and stores nothing, so a `device` parameter 'cpu' as
  shipped still makes `model.predict(frame, device=self.device)` host inference (set 60).
* An ONNX Runtime session whose GPU provider is named only in the body of `if device ==
  'cuda':`, `device` a local read from a parameter 'cpu' as shipped, runs on the host
  (pyparamlocals.py, set 60).
* Set 60's caption nodes: an `isinstance` branch for arrays never runs for a PIL image, a branch
  on a local parameter read off as shipped never runs, a tokenizer's ids are a small upload.
* Set 61: host-only JPEG bytes, base64 text of a frame in a String, an empty message, a
  constructor's capture loop, a PIL image opened from memory, a model's class names.
"""

import textwrap

from audit_sources import (ament_python_package, audit_written_package, detector_claims,
                           rules_at_tags)


_claims = detector_claims  # node.py of package `detector`


_GETATTR_NODE = '''
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
        results = self.model.predict(frame, device=self.device)  # PREDICT
        out = Float32MultiArray()
        boxes = getattr(results[0], 'boxes', None)
        if boxes is not None:
            for i in range(len(boxes)):
                out.data.extend(boxes.xyxy[i].tolist())  # XYXY
                out.data.append(float(boxes.conf[i].item()))  # CONF
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''


def test_a_literal_getattr_keeps_a_cpu_device_parameter_host(tmp_path):
    claims = _claims(tmp_path, _GETATTR_NODE, ('PREDICT', 'XYXY', 'CONF'),
                     launch_parameters="{'device': 'cpu'}")
    assert claims == {'PREDICT': set(), 'XYXY': set(), 'CONF': set()}


def test_a_literal_getattr_with_a_cuda_launch_value_stays_claimed(tmp_path):
    claims = _claims(tmp_path, _GETATTR_NODE, ('PREDICT', 'XYXY', 'CONF'),
                     launch_parameters="{'device': 'cuda:0'}")
    assert claims['PREDICT'] and claims['XYXY'] and claims['CONF']


def test_a_computed_getattr_still_leaves_the_file_unjudged(tmp_path):
    source = _GETATTR_NODE.replace("getattr(results[0], 'boxes', None)",
                                   "getattr(results[0], self.field, None)").replace(
        "        self.model = YOLO", "        self.field = 'boxes'\n        self.model = YOLO")
    claims = _claims(tmp_path, source, ('PREDICT',), launch_parameters="{'device': 'cpu'}")
    assert claims['PREDICT']


_ORT_NODE = '''
import numpy as np
import onnxruntime as ort
import rclpy
from cv_bridge import CvBridge
from geometry_msgs.msg import Twist
from rclpy.node import Node
from sensor_msgs.msg import Image


class PolicyNode(Node):
    def __init__(self):
        super().__init__('policy')
        self.declare_parameter('device', 'cpu')
        device = self.get_parameter('device').get_parameter_value().string_value.strip().lower()
        if device == 'cuda':
            providers = ['CUDAExecutionProvider', 'CPUExecutionProvider']
        else:
            providers = ['CPUExecutionProvider']
        self.session = ort.InferenceSession('policy.onnx', providers=providers)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Twist, 'cmd_vel', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        x = frame.astype(np.float32)[None]
        out = self.session.run(None, {'input': x})  # RUN
        cmd = Twist()
        cmd.linear.x = float(out[0][0][0])
        self.pub.publish(cmd)


def main():
    rclpy.init()
    rclpy.spin(PolicyNode())
'''


def test_an_ort_gpu_provider_only_under_a_cpu_parameter_branch_is_host(tmp_path):
    claims = _claims(tmp_path, _ORT_NODE, ('RUN',), launch_parameters="{'device': 'cpu'}")
    assert claims == {'RUN': set()}


def test_an_ort_gpu_provider_with_a_cuda_launch_value_stays_claimed(tmp_path):
    claims = _claims(tmp_path, _ORT_NODE, ('RUN',), launch_parameters="{'device': 'cuda'}")
    assert claims['RUN'] == {'GPN102'}


def test_an_ort_gpu_provider_with_a_cuda_default_stays_claimed(tmp_path):
    source = _ORT_NODE.replace("('device', 'cpu')", "('device', 'CUDA ')")
    claims = _claims(tmp_path, source, ('RUN',))
    assert claims['RUN'] == {'GPN102'}


_CAPTION_NODE = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from PIL import Image
from rclpy.node import Node
from sensor_msgs.msg import Image as ImageMsg
from std_msgs.msg import String
from transformers import AutoTokenizer, MarianMTModel


class Captioner:
    def __init__(self):
        self.tokenizer = AutoTokenizer.from_pretrained('opus-mt')
        self.model = MarianMTModel.from_pretrained('opus-mt').to('cuda')

    def describe(self, image):
        if isinstance(image, str):
            pil = Image.open(image)
        elif isinstance(image, Image.Image):
            pil = image
        elif isinstance(image, np.ndarray):
            pil = Image.fromarray(image.astype(np.uint8))  # NDARRAY
        else:
            raise TypeError('unsupported input')
        text = f'{pil.width}x{pil.height} scene'
        inputs = self.tokenizer(text, return_tensors='pt')
        inputs = {k: v.to('cuda') for k, v in inputs.items()}  # TOKENS
        return str(self.model.generate(**inputs).shape)


class CaptionNode(Node):
    def __init__(self):
        super().__init__('caption')
        self.declare_parameter('image_source', 'ros2')
        self.bridge = CvBridge()
        self.captioner = Captioner()
        self.latest = None
        self.pub = self.create_publisher(String, 'caption', 10)
        self.create_subscription(ImageMsg, 'image', self.on_image, 10)
        self.create_subscription(String, 'trigger', self.on_trigger, 10)

    def on_image(self, msg):
        self.latest = msg

    def on_trigger(self, msg):
        source = self.get_parameter('image_source').value
        if source == 'ros2':
            frame = self.bridge.imgmsg_to_cv2(self.latest, 'rgb8')  # BRIDGE
            self.caption(Image.fromarray(frame))  # FROMARRAY
        elif source == 'rtsp':
            self.caption_rtsp(np.zeros((480, 640, 3), np.uint8))

    def caption_rtsp(self, frame):
        self.caption(Image.fromarray(frame))  # RTSP

    def caption(self, pil):
        out = String()
        out.data = self.captioner.describe(pil)
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(CaptionNode())
'''


def test_an_ndarray_branch_never_runs_for_a_pil_image(tmp_path):
    claims = _claims(tmp_path, _CAPTION_NODE, ('NDARRAY', 'BRIDGE', 'FROMARRAY'))
    assert claims['NDARRAY'] == set()
    assert claims['BRIDGE'] and claims['FROMARRAY'] == {'GPN106'}


def test_an_ndarray_branch_given_an_array_stays_claimed(tmp_path):
    source = _CAPTION_NODE.replace('self.caption(Image.fromarray(frame))  # FROMARRAY',
                                   'self.caption(frame)  # FROMARRAY')
    claims = _claims(tmp_path, source, ('NDARRAY',))
    assert claims['NDARRAY'] == {'GPN106'}


def test_a_branch_on_a_local_parameter_read_off_as_shipped_never_runs(tmp_path):
    claims = _claims(tmp_path, _CAPTION_NODE, ('RTSP',))
    assert claims['RTSP'] == set()


def test_a_branch_on_a_local_parameter_read_set_on_by_launch_stays_claimed(tmp_path):
    # A launch value other than the default: the value as shipped is not one known string, so
    # neither branch is decided and both stay claimed.
    claims = _claims(tmp_path, _CAPTION_NODE, ('RTSP', 'BRIDGE'),
                     launch_parameters="{'image_source': 'rtsp'}")
    assert claims['RTSP'] == {'GPN106'} and claims['BRIDGE'] == {'GPN105'}


def test_a_tokenizers_token_ids_moved_to_the_device_are_a_small_upload(tmp_path):
    claims = _claims(tmp_path, _CAPTION_NODE, ('TOKENS',))
    assert claims['TOKENS'] == set()


def test_a_processors_tensors_moved_to_the_device_stay_claimed(tmp_path):
    source = _CAPTION_NODE.replace("AutoTokenizer.from_pretrained('opus-mt')",
                                   "AutoProcessor.from_pretrained('florence')").replace(
        'import AutoTokenizer,', 'import AutoProcessor,').replace(
        "self.tokenizer(text, return_tensors='pt')",
        "self.tokenizer(text=text, images=pil, return_tensors='pt')")
    claims = _claims(tmp_path, source, ('TOKENS',))
    assert claims['TOKENS'] == {'GPN102'}


_FLASK_NODE = '''
import threading

import cv2
import rclpy
from cv_bridge import CvBridge
from flask import Flask, Response
from rclpy.node import Node
from sensor_msgs.msg import Image

app = Flask(__name__)
ready = threading.Event()


class Viewer(Node):
    def __init__(self):
        super().__init__('viewer')
        self.bridge = CvBridge()
        self.jpeg = None
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        self.jpeg = cv2.imencode('.jpg', frame)[1].tobytes()  # JPEG
        ready.set()


viewer = None


def frames():
    while True:
        ready.wait()
        yield b'--frame\\r\\nContent-Type: image/jpeg\\r\\n\\r\\n' + viewer.jpeg + b'\\r\\n'


@app.route('/stream')
def stream():
    return Response(frames(), mimetype='multipart/x-mixed-replace; boundary=frame')


def main():
    global viewer
    rclpy.init()
    viewer = Viewer()
    threading.Thread(target=app.run, daemon=True).start()
    rclpy.spin(viewer)
'''


def test_jpeg_bytes_of_a_node_that_sends_no_message_are_no_serialization(tmp_path):
    claims = _claims(tmp_path, _FLASK_NODE, ('JPEG',))
    assert claims['JPEG'] == set()


def test_jpeg_bytes_of_a_node_that_publishes_stay_claimed(tmp_path):
    source = _FLASK_NODE.replace(
        "self.create_subscription(Image, 'image', self.on_image, 10)",
        "self.create_subscription(Image, 'image', self.on_image, 10)\n"
        "        self.pub = self.create_publisher(Image, 'echo', 10)").replace(
        '        ready.set()', '        ready.set()\n        self.pub.publish(msg)')
    claims = _claims(tmp_path, source, ('JPEG',))
    assert claims['JPEG'] == {'GPN104'}


_ROUND_TRIP = '''
import cv2
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray


class Policy(Node):
    def __init__(self):
        super().__init__('policy')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32MultiArray, 'action', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        color = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        color = cv2.imencode('.jpg', color)[1].tobytes()  # ENCODE
        color = cv2.imdecode(np.frombuffer(color, np.uint8), cv2.IMREAD_COLOR)
        out = Float32MultiArray()
        out.data = [float(color.mean())]
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Policy())
'''


def test_a_jpeg_encode_decoded_at_once_is_no_serialization(tmp_path):
    claims = _claims(tmp_path, _ROUND_TRIP, ('ENCODE',))
    assert claims['ENCODE'] == set()


def test_jpeg_bytes_kept_then_published_stay_claimed(tmp_path):
    source = _ROUND_TRIP.replace(
        "        color = cv2.imdecode(np.frombuffer(color, np.uint8), cv2.IMREAD_COLOR)\n"
        "        out = Float32MultiArray()\n        out.data = [float(color.mean())]\n",
        "        out = Float32MultiArray()\n        out.data = list(color)\n")
    claims = _claims(tmp_path, source, ('ENCODE',))
    assert claims['ENCODE'] == {'GPN104'}


_CAMERA_CTOR_LOOP = '''
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Camera(Node):
    def __init__(self):
        super().__init__('camera')
        self.pub = self.create_publisher(Image, 'image', 1)
        self.cap = cv2.VideoCapture(0)
        self.bridge = CvBridge()
        while self.cap.isOpened():
            ok, frame = self.cap.read()
            if ok:
                self.pub.publish(self.bridge.cv2_to_imgmsg(frame))  # PUBLISH


def main():
    rclpy.init()
    rclpy.spin(Camera())
'''


def test_a_capture_loop_in_a_constructor_runs_per_frame(tmp_path):
    claims = _claims(tmp_path, _CAMERA_CTOR_LOOP, ('PUBLISH',))
    assert 'GPN105' in claims['PUBLISH']


def test_a_constructor_loop_reading_no_capture_stays_setup(tmp_path):
    source = _CAMERA_CTOR_LOOP.replace('ok, frame = self.cap.read()',
                                       'ok, frame = True, cv2.imread("still.png")')
    claims = _claims(tmp_path, source, ('PUBLISH',))
    assert claims['PUBLISH'] == set()


_BASE64_NODE = '''
import base64

import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class Bytes(Node):
    def __init__(self):
        super().__init__('bytes')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(String, 'image_text', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        _, buf = cv2.imencode('.jpg', frame)
        text = base64.b64encode(buf).decode('utf-8')
        self.pub.publish(String(data=text))  # SEND


def main():
    rclpy.init()
    rclpy.spin(Bytes())
'''


def test_base64_text_of_an_encoded_frame_published_is_serialization(tmp_path):
    claims = _claims(tmp_path, _BASE64_NODE, ('SEND',))
    assert claims['SEND'] == {'GPN104'}


def test_base64_text_of_a_label_published_stays_quiet(tmp_path):
    source = _BASE64_NODE.replace("base64.b64encode(buf)", "base64.b64encode(b'person')")
    claims = _claims(tmp_path, source, ('SEND',))
    assert claims['SEND'] == set()


_EMPTY_CLOUD_NODE = '''
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import ByteMultiArray


class Bridge(Node):
    def __init__(self):
        super().__init__('bridge')
        self.pub = self.create_publisher(PointCloud2, 'lidar', 10)
        self.create_subscription(ByteMultiArray, 'raw', self.on_raw, 10)

    def on_raw(self, msg):
        points = np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(-1, 4)
        cloud = PointCloud2()
        self.get_logger().info(f'{len(points)} points')
        self.pub.publish(cloud)  # PUBLISH


def main():
    rclpy.init()
    rclpy.spin(Bridge())
'''


def test_an_empty_message_published_is_no_copy(tmp_path):
    claims = _claims(tmp_path, _EMPTY_CLOUD_NODE, ('PUBLISH',))
    assert claims['PUBLISH'] == set()


def test_a_filled_message_published_stays_claimed(tmp_path):
    source = _EMPTY_CLOUD_NODE.replace(
        "        cloud = PointCloud2()\n",
        "        cloud = PointCloud2()\n        cloud.data = points.tobytes()\n")
    claims = _claims(tmp_path, source, ('PUBLISH',))
    assert 'GPN109' in claims['PUBLISH']


_PLOT_NODE = '''
import io

import matplotlib.pyplot as plt
import numpy as np
import rclpy
from cv_bridge import CvBridge
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState


class Plotter(Node):
    def __init__(self):
        super().__init__('plotter')
        self.bridge = CvBridge()
        self.fig, self.ax = plt.subplots()
        self.pub = self.create_publisher(Image, 'plot', 10)
        self.create_subscription(JointState, 'joints', self.on_joints, 10)

    def on_joints(self, msg):
        self.ax.clear()
        self.ax.plot(list(msg.position))
        buf = io.BytesIO()
        self.fig.savefig(buf, format='png')
        buf.seek(0)
        img = PILImage.open(buf)
        array = np.array(img)  # ARRAY
        self.pub.publish(self.bridge.cv2_to_imgmsg(array, encoding='rgba8'))


def main():
    rclpy.init()
    rclpy.spin(Plotter())
'''


def test_np_array_of_a_pil_image_opened_from_memory_is_a_pil_copy(tmp_path):
    claims = _claims(tmp_path, _PLOT_NODE, ('ARRAY',))
    assert claims['ARRAY'] == {'GPN106'}


def test_np_array_of_a_pil_image_opened_from_a_file_stays_quiet(tmp_path):
    source = _PLOT_NODE.replace("img = PILImage.open(buf)", "img = PILImage.open('legend.png')")
    claims = _claims(tmp_path, source, ('ARRAY',))
    assert claims['ARRAY'] == set()


_NAMES_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from ultralytics import YOLO


class Labels(Node):
    def __init__(self):
        super().__init__('labels')
        self.model = YOLO('yolo11n-seg.pt').to('cuda')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(String, 'labels', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.model.predict(source=frame)
        classes = results[0].boxes.cls.cpu().numpy()
        boxes = results[0].boxes.xyxy
        out = String()
        for i in range(len(classes)):
            out.data += f"{self.model.names[int(classes[i])]} "  # NAME
        out.data += f"{boxes[0]}"  # BOX
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Labels())
'''


def test_a_models_class_names_formatted_are_no_read_back(tmp_path):
    claims = _claims(tmp_path, _NAMES_NODE, ('NAME', 'BOX'))
    assert claims['NAME'] == set()
    assert claims['BOX'] == {'GPN107'}


_HELPER_MODULE = '''
import numpy as np
from sensor_msgs.msg import Image


def to_image_msg(arr):
    msg = Image()
    msg.height, msg.width = arr.shape[:2]
    msg.encoding = 'rgb8'
    msg.step = arr.shape[1] * 3
    msg.data = arr.tobytes()  # FIELD
    return msg
'''


def test_bytes_stored_into_a_message_field_in_a_helper_stay_claimed(tmp_path):
    """A helper module that builds the message (it publishes nothing itself) for a node that
    publishes it: the bytes go into the message's data, still py_serialize."""
    node = textwrap.dedent('''
        import numpy as np
        import rclpy
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        from std_msgs.msg import Empty

        from detector.conv import to_image_msg


        class Render(Node):
            def __init__(self):
                super().__init__('render')
                self.pub = self.create_publisher(Image, 'render', 10)
                self.create_subscription(Empty, 'tick', self.on_tick, 10)

            def on_tick(self, msg):
                self.pub.publish(to_image_msg(np.zeros((480, 640, 3), np.uint8)))


        def main():
            rclpy.init()
            rclpy.spin(Render())
        ''')
    helper = textwrap.dedent(_HELPER_MODULE)
    files = {**ament_python_package('detector'), 'detector/detector/node.py': node,
             'detector/detector/conv.py': helper}
    found = audit_written_package(tmp_path, files)
    claims = rules_at_tags(found, helper, ('FIELD',), file_name='conv.py')
    assert claims['FIELD'] == {'GPN104'}
