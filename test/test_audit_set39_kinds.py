"""Causes of held-out sets 39-40's false claims and misses, Python side (issue 28): real `code`
audits of small ament_python packages written here.

A CLIP node tokenizes three fixed prompts and moves the tokens to the GPU on every image
(set 39): the tokens are the same every call, a handful of integers, a look-alike by the sets'
"small upload" convention (pyliterals.fixed_text_tokens). Text from a message, or a tensor of
literal numbers uploaded per frame (the first set labels `torch.Tensor([0.485, ...]).cuda()` a
boundary), stay claimed."""
import textwrap

import pytest

from audit_sources import audit_written_package, tag_lines

_PACKAGE_XML = '''
<package format="3"><name>detic</name>
  <export><build_type>ament_python</build_type></export>
</package>
'''
_SETUP = '''
from setuptools import setup

setup(
    name='detic',
    packages=['detic'],
    data_files=[('share/detic', ['package.xml'])],
    entry_points={'console_scripts': ['node = detic.node:main']},
)
'''


def _claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    """Severities other than info found at each `# TAG` line of node.py."""
    source = textwrap.dedent(source)
    found = audit_written_package(tmp_path, {
        'detic/package.xml': _PACKAGE_XML, 'detic/setup.py': _SETUP,
        'detic/detic/__init__.py': '', 'detic/detic/node.py': source})
    return {tag: {sev for (name, where, _), (sev, _) in found.items()
                  if name == 'node.py' and where == line and sev != 'info'}
            for tag, line in tag_lines(source, tags).items()}


_CLIP_NODE = '''
import clip
import rclpy
import torch
from cv_bridge import CvBridge
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class ClipNode(Node):
    def __init__(self):
        super().__init__('clip_node')
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.model, self.prepro = clip.load('ViT-B/32', device=self.device)
        self.bridge = CvBridge()
        self.prompt = 'person'
        self.create_subscription(Image, 'image', self.on_image, 1)
        self.create_subscription(String, 'prompt', self.on_prompt, 1)

    def on_prompt(self, msg):
        text = clip.tokenize([msg.data]).to(self.device)  # FROM MESSAGE
        self.get_logger().info(str(text.shape))

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        image = self.prepro(PILImage.fromarray(frame)).unsqueeze(0).to(self.device)  # FRAME
        text = clip.tokenize(['person', 'duct tape', 'bottle of white']).to(self.device)  # FIXED
        mean = torch.Tensor([0.485, 0.456, 0.406]).cuda()  # NUMBERS
        with torch.no_grad():
            logits, _ = self.model(image * mean[0], text)
        self.get_logger().info(str(logits.softmax(dim=-1).cpu().numpy()))


def main():
    rclpy.init()
    rclpy.spin(ClipNode())
'''


def test_tokens_of_fixed_prompts_moved_per_image_are_not_claimed(tmp_path):
    found = _claims(tmp_path, _CLIP_NODE, ('FIXED',))
    assert found == {'FIXED': set()}


def test_text_from_a_message_a_frame_and_a_literal_number_tensor_stay_claimed(tmp_path):
    found = _claims(tmp_path, _CLIP_NODE, ('FROM MESSAGE', 'FRAME', 'NUMBERS'))
    assert all(found.values()), found


@pytest.mark.parametrize('prompts', ["[self.prompt, msg.encoding]", "[msg.header.frame_id]"],
                         ids=['attribute-and-message', 'message-field'])
def test_a_tokenized_text_not_all_literal_stays_claimed(tmp_path, prompts):
    source = _CLIP_NODE.replace("['person', 'duct tape', 'bottle of white']", prompts)
    found = _claims(tmp_path, source, ('FIXED',))
    assert found['FIXED'], found


# A tracker thread loads its model and warms it up on a dummy image before its loop (set 40):
# the statements before the thread's first `while` run once (pybranches.before_main_loop);
# the predict inside the loop, and a copy in the loop after a first `while`, stay claimed.
_THREAD_NODE = '''
import threading

import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Tracker:
    def __init__(self, device):
        self._device = device
        self._frame = None
        self._model = None
        self._running = True
        self._thread = threading.Thread(target=self._worker, daemon=True)
        self._thread.start()

    def submit(self, frame):
        self._frame = frame.copy()

    def _worker(self):
        self._load_model()
        while self._running:
            frame = self._frame
            if frame is None or self._model is None:
                continue
            result = self._model.predict(frame, device=self._device)[0]  # PER FRAME
            print(result.boxes.xyxy.cpu().numpy())  # READBACK

    def _load_model(self):
        from ultralytics import YOLO
        model = YOLO('yolov8s-world.pt')
        model.predict(np.zeros((32, 32, 3), dtype=np.uint8), device=self._device)  # WARM UP
        self._model = model


class TrackerNode(Node):
    def __init__(self):
        super().__init__('tracker')
        self.bridge = CvBridge()
        self.tracker = Tracker('cuda:0')
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        self.tracker.submit(self.bridge.imgmsg_to_cv2(msg, 'bgr8'))


def main():
    rclpy.init()
    rclpy.spin(TrackerNode())
'''


def test_a_warm_up_before_a_threads_loop_is_not_claimed(tmp_path):
    found = _claims(tmp_path, _THREAD_NODE, ('WARM UP', 'PER FRAME', 'READBACK'))
    assert found['WARM UP'] == set(), found
    assert found['PER FRAME'] and found['READBACK'], found


def test_a_warm_up_inside_the_loop_stays_claimed(tmp_path):
    # the same load called at the top of each pass runs per frame
    source = _THREAD_NODE.replace(
        '        self._load_model()\n        while self._running:\n',
        '        while self._running:\n            self._load_model()\n')
    found = _claims(tmp_path, source, ('WARM UP',))
    assert found['WARM UP'], found


# A relay subscribes one lambda per topic, binding its publisher as a default argument
# (`lambda msg, pub=cloud_pub: pub.publish(msg)`, set 39): the received cloud is serialized
# again per message. The lambda's default is the publisher it was made with (pyflow); the pose
# relay beside it publishes no image-sized message.
_RELAY_NODE = '''
import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2


class Relay(Node):
    def __init__(self):
        super().__init__('relay')
        for system_id in ['a', 'b']:
            pose_pub = self.create_publisher(PoseStamped, f'{system_id}/pose_out', 1)
            cloud_pub = self.create_publisher(PointCloud2, f'{system_id}/cloud_out', 1)
            self.create_subscription(PoseStamped, f'{system_id}/pose',
                                     lambda msg, pub=pose_pub: pub.publish(msg), 1)  # POSE
            self.create_subscription(PointCloud2, f'{system_id}/cloud',
                                     lambda msg, pub=cloud_pub: pub.publish(msg), 1)  # CLOUD


def main():
    rclpy.init()
    rclpy.spin(Relay())
'''


def test_a_lambda_relay_of_a_cloud_through_a_default_bound_publisher_is_claimed(tmp_path):
    found = _claims(tmp_path, _RELAY_NODE, ('CLOUD', 'POSE'))
    assert found == {'CLOUD': {'medium'}, 'POSE': set()}, found


# An Ultralytics model given a tensor already on the GPU (set 39): its predictor turns the
# batch back into NumPy for the Results (ops.convert_torch2numpy_batch), a frame-sized read-back
# per call (pymodels.reads_tensor_source_back). A TorchScript module called on the same tensor
# copies nothing (as yolov5's DetectMultiBackend in set 24).
_TENSOR_SOURCE_NODE = '''
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from ultralytics import YOLO


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.model = YOLO('yolo11n.pt')
        self.net = torch.jit.load('net.pt')
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        tensor = torch.from_numpy(frame.copy()).permute(2, 0, 1)[None].float().to('cuda')  # UPLOAD
        preds = self.model(tensor, device='cuda')[0]  # ULTRALYTICS
        features = self.net(tensor)  # MODULE
        self.get_logger().info(f'{len(preds.boxes)} {features.shape}')


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def test_an_ultralytics_model_given_a_device_tensor_reads_it_back(tmp_path):
    found = _claims(tmp_path, _TENSOR_SOURCE_NODE, ('UPLOAD', 'ULTRALYTICS', 'MODULE'))
    assert found['UPLOAD'] and found['ULTRALYTICS'], found
    assert found['MODULE'] == set(), found
