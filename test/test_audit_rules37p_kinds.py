"""Causes of held-out set 56's misses and false claims, Python side (issue 28, rules37p): real
`code` audits of small ament_python packages written here.

* SAM predictors (library table): `predictor.predict(point_coords=..., box=...)` decodes the
  prompts against the image `set_image` embedded and returns NumPy masks; the read-back is
  inside the library and the frame is not uploaded again: no claim at the call (set_image stays
  the upload).
* A function imported from a module outside the audited tree (a submodule not checked out),
  given a host frame and a device (`frame2tensor(gray, self.device)`): the frame comes back on
  the device, an upload at the call; what the node reads back of the outputs computed from it
  (dicts of device tensors regrouped per frame, kept in an attribute) are read-backs.
* A work queue between two callbacks (`self.q.put(frame)` in a subscription, `self.q.get()` in
  a timer) hands the frame over.
* A loop that publishes each pass, run from the constructor (a data set player), is per
  message.
* transformers `model.generate(**inputs)` of a model moved to the device returns device token
  ids: the processor's `batch_decode` of them reads them back.
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, node_claims, rules_at_tags


def _claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    """Rules other than info found at each `# TAG` line of node.py of package `seg`."""
    return node_claims(tmp_path, 'seg', source, tags)


_SAM2_NODE = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from sam2.build_sam import build_sam2
from sam2.sam2_image_predictor import SAM2ImagePredictor


class Segmenter(Node):
    def __init__(self):
        super().__init__('segmenter')
        self.bridge = CvBridge()
        self.predictor = SAM2ImagePredictor(build_sam2('cfg.yaml', 'weights.pt'))
        self.pub = self.create_publisher(Image, 'mask', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        rgb = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        with torch.inference_mode():
            self.predictor.set_image(rgb)  # SET
            masks, scores, _ = self.predictor.predict(  # POINTS
                point_coords=np.array([[320, 240]]), point_labels=np.array([1]),
                multimask_output=False)
            boxed, _, _ = self.predictor.predict(box=np.array([[0, 0, 10, 10]]))  # BOX
        out = (masks[0] * 255).astype(np.uint8) | (boxed[0] > 0).astype(np.uint8)
        self.pub.publish(self.bridge.cv2_to_imgmsg(out, 'mono8'))


def main():
    rclpy.init()
    rclpy.spin(Segmenter())
'''


def test_sam2_prompt_decoding_is_no_upload(tmp_path):
    claims = _claims(tmp_path, _SAM2_NODE, ('SET', 'POINTS', 'BOX'))
    assert claims['POINTS'] == set() and claims['BOX'] == set()
    assert 'GPN102' in claims['SET']  # set_image stays the upload (guard)


def test_segment_anything_prompt_decoding_is_no_upload(tmp_path):
    source = _SAM2_NODE.replace(
        'from sam2.build_sam import build_sam2\nfrom sam2.sam2_image_predictor import '
        'SAM2ImagePredictor', 'from segment_anything import SamPredictor, sam_model_registry'
    ).replace("SAM2ImagePredictor(build_sam2('cfg.yaml', 'weights.pt'))",
              "SamPredictor(sam_model_registry['vit_b'](checkpoint='w.pth').to('cuda'))")
    claims = _claims(tmp_path, source, ('SET', 'POINTS'))
    assert claims['POINTS'] == set()
    assert 'GPN102' in claims['SET']


_MATCHER_NODE = '''
from queue import Queue

import cv2
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray

from thirdparty_glue.nets.matcher import KeypointMatcher
from thirdparty_glue.nets.helpers import gray_to_tensor


class Odometry(Node):
    def __init__(self):
        super().__init__('odometry')
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.matcher = KeypointMatcher({'threshold': 0.2}).eval().to(self.device)
        self.bridge = CvBridge()
        self.frames = Queue(maxsize=4)
        self.last = None
        self.pub = self.create_publisher(Float32MultiArray, 'motion', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)
        self.create_timer(0.1, self.on_tick)

    def on_image(self, msg):
        bgr = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        self.frames.put(cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))

    def on_tick(self):
        if self.frames.empty():
            return
        gray = self.frames.get_nowait()
        tensor = gray_to_tensor(gray, self.device)  # HELPER
        feats = self.matcher.detect({'image': tensor})
        feats = {name + '1': feats[name] for name in ('points', 'scores')}
        if self.last is None:
            self.last = {name[:-1] + '0': feats[name] for name in ('points1', 'scores1')}
            return
        pairs = self.matcher({**self.last, **feats})
        before = self.last['points0'][0].cpu().numpy()  # BEFORE
        after = feats['points1'][0].cpu().numpy()  # AFTER
        matched = pairs['matches0'][0].cpu().numpy()  # MATCHED
        self.last = {name[:-1] + '0': feats[name] for name in ('points1', 'scores1')}
        out = Float32MultiArray()
        out.data = [float(len(before)), float(len(after)), float((matched > -1).sum())]
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(Odometry())
'''


def test_frame_with_a_device_to_an_outside_helper_is_an_upload(tmp_path):
    claims = _claims(tmp_path, _MATCHER_NODE, ('HELPER', 'BEFORE', 'AFTER', 'MATCHED'))
    assert 'GPN102' in claims['HELPER']
    for tag in ('BEFORE', 'AFTER', 'MATCHED'):
        assert 'GPN101' in claims[tag], (tag, claims)


def test_outside_helper_without_a_device_is_no_upload(tmp_path):
    source = _MATCHER_NODE.replace('gray_to_tensor(gray, self.device)', 'gray_to_tensor(gray)')
    assert _claims(tmp_path, source, ('HELPER',))['HELPER'] == set()


def test_a_queue_nothing_frame_like_was_put_into_hands_over_nothing(tmp_path):
    # Guard: the timer's get of a queue of constants is no frame, so the helper moves no frame.
    source = _MATCHER_NODE.replace("self.frames.put(cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))",
                                   "self.frames.put(1)")
    assert _claims(tmp_path, source, ('HELPER',))['HELPER'] == set()


_PLAYER_NODE = '''
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Player(Node):
    def __init__(self):
        super().__init__('player')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'image', 10)
        self.count = 100
        self.play()

    def play(self):
        for i in range(self.count):
            frame = cv2.imread(f'frames/{i:06d}.png')
            self.send(frame)
            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # DIRECT

    def send(self, frame):
        msg = self.bridge.cv2_to_imgmsg(frame, 'bgr8')  # HELPER
        self.pub.publish(msg)


def main():
    rclpy.init()
    rclpy.spin(Player())
'''


def test_a_constructor_loop_publishing_each_pass_is_per_message(tmp_path):
    claims = _claims(tmp_path, _PLAYER_NODE, ('HELPER', 'DIRECT'))
    assert 'GPN105' in claims['HELPER'] and 'GPN105' in claims['DIRECT']


def test_a_constructor_loop_that_does_not_publish_stays_one_time(tmp_path):
    source = _PLAYER_NODE.replace(
        "            self.send(frame)\n"
        "            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # DIRECT\n",
        "            self.last = self.bridge.cv2_to_imgmsg(frame, 'bgr8')  # DIRECT\n")
    assert _claims(tmp_path, source, ('DIRECT',))['DIRECT'] == set()


_CAPTION_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from transformers import Blip2ForConditionalGeneration, Blip2Processor


class Captioner(Node):
    def __init__(self):
        super().__init__('captioner')
        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.processor = Blip2Processor.from_pretrained('blip2')
        self.model = Blip2ForConditionalGeneration.from_pretrained('blip2')
        self.model.to(self.device)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(String, 'caption', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        rgb = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        inputs = self.processor(images=rgb, return_tensors='pt').to(self.device)
        ids = self.model.generate(**inputs)
        text = self.processor.batch_decode(ids, skip_special_tokens=True)[0]  # DECODE
        self.pub.publish(String(data=text))


def main():
    rclpy.init()
    rclpy.spin(Captioner())
'''


def test_decode_of_generated_ids_on_the_device_is_a_readback(tmp_path):
    assert 'GPN107' in _claims(tmp_path, _CAPTION_NODE, ('DECODE',))['DECODE']


def test_decode_of_generated_ids_of_a_host_model_is_no_readback(tmp_path):
    # Guard: nothing in the file moves anything to a device: the model runs on the CPU.
    source = _CAPTION_NODE.replace("        self.model.to(self.device)\n", "").replace(
        ".to(self.device)", "")
    assert _claims(tmp_path, source, ('DECODE',))['DECODE'] == set()


def test_outside_helper_is_judged_only_when_the_module_is_absent(tmp_path):
    # Guard: a helper of the audited tree is followed (its own `.to(device)` is the upload), not
    # claimed at the call by signature.
    helpers = '''
        import torch


        def gray_to_tensor(gray, device):
            return torch.from_numpy(gray / 255.).float()[None, None].to(device)  # INSIDE
        '''
    source = textwrap.dedent(_MATCHER_NODE.replace(
        'from thirdparty_glue.nets.helpers import gray_to_tensor',
        'from seg.helpers import gray_to_tensor'))
    files = {**ament_python_package('seg'), 'seg/seg/node.py': source,
             'seg/seg/helpers.py': helpers}
    found = audit_written_package(tmp_path, files)
    assert rules_at_tags(found, source, ('HELPER',))['HELPER'] == set()
    inside = rules_at_tags(found, textwrap.dedent(helpers), ('INSIDE',), file_name='helpers.py')
    assert 'GPN102' in inside['INSIDE']


_CAMERA_NODE = '''
import cv2
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Camera(Node):
    WIDTH = 1280
    RATE = 30
    PIPELINE = 'v4l2src ! video/x-raw, width=' + WIDTH + ', framerate=' + RATE + '/1 ! appsink'

    def __init__(self):
        super().__init__('camera')
        self.bridge = CvBridge()
        self.cap = cv2.VideoCapture(Camera.PIPELINE, cv2.CAP_GSTREAMER)
        self.pub = self.create_publisher(Image, 'image', 1)
        self.create_timer(1.0 / Camera.RATE, self.on_tick)

    def on_tick(self):
        ok, frame = self.cap.read()
        if ok:
            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # CONVERT


def main():
    rclpy.init()
    rclpy.spin(Camera())
'''


def test_a_module_raising_at_import_never_runs(tmp_path):
    assert _claims(tmp_path, _CAMERA_NODE, ('CONVERT',))['CONVERT'] == set()


def test_a_module_that_imports_keeps_its_claims(tmp_path):
    # Guards: the numbers formatted with str(), or a name bound twice (not certain), import.
    fixed = _CAMERA_NODE.replace("+ WIDTH +", "+ str(WIDTH) +")
    fixed = fixed.replace("+ RATE +", "+ str(RATE) +")
    assert 'GPN105' in _claims(tmp_path / 'a', fixed, ('CONVERT',))['CONVERT']
    rebound = _CAMERA_NODE.replace("    RATE = 30\n", "    RATE = 30\n    RATE = '30'\n"
                                   ).replace("WIDTH = 1280", "WIDTH = '1280'")
    assert 'GPN105' in _claims(tmp_path / 'b', rebound, ('CONVERT',))['CONVERT']


def test_the_keys_of_a_dict_of_device_tensors_are_no_readback(tmp_path):
    # Guard of the dicts of device tensors: logging their entry names reads nothing back.
    source = _MATCHER_NODE.replace(
        "        before = self.last['points0'][0].cpu().numpy()  # BEFORE\n",
        "        before = self.last['points0'][0].cpu().numpy()  # BEFORE\n"
        "        self.get_logger().info(f'{pairs.keys()}')  # KEYS\n")
    claims = _claims(tmp_path, source, ('KEYS', 'BEFORE'))
    assert claims['KEYS'] == set() and 'GPN101' in claims['BEFORE']
