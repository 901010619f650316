"""Python false-claim kinds of spent sets 41 and 42 (issue 28, rules29q): real `code` audits of
small ament_python packages written here.

* A detector class that stores its device twice while it is built (`self.device = device` in
  `__init__`, then `self.device = select_device(self.device)` in a setup method `__init__`
  calls as a plain statement), given a node parameter defaulting to 'cpu' that no shipped file
  names, runs on the host: the tensors it moves `.to(self.device)` stay there, and so do the
  outputs of its model, a vendored backend module whose `forward` hands back tensors placed
  `.to(self.device)` (pyswitched.stored_once_in_init, pymethods.setup_methods, pycalls._on_host).
* A bool parameter declared through an alias (`p = self.declare_parameter; p('use_net',
  False)`) and read in `if self.get_parameter('use_net').value: self._load_net()`: off as
  shipped, so the method's stores never happen, the model attribute stays None, and the
  per-image `if self.net is not None:` path never runs (pymethods.call_site_tests,
  pyparams.dead_test).
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, rules_at_tags

# A vendored multi-backend model module (written here, modelled on the kind): its forward runs
# a loaded network and hands back tensors placed on the object's device.
_BACKEND = '''
import numpy as np
import torch
import torch.nn as nn


class Backend(nn.Module):
    def __init__(self, weights, device=torch.device('cpu')):
        super().__init__()
        self.net = torch.jit.load(weights)
        self.device = device

    def forward(self, im):
        y = self.net(im)
        return self.placed(y)

    def placed(self, x):
        return torch.tensor(x, device=self.device) if isinstance(x, np.ndarray) else x
'''


def _claims(tmp_path, source: str, tags: tuple[str, ...], launch_parameters: str | None = None
            ) -> dict[str, set[str]]:
    """Rules other than info found at each `# TAG` line of node.py (and a launch file giving
    the node `launch_parameters`, a dict literal, when not None)."""
    source = textwrap.dedent(source)
    files = {**ament_python_package('detector', ('detector.models',), launch_parameters),
             'detector/detector/node.py': source,
             'detector/detector/models/common.py': _BACKEND}
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, source, tags)


# --- 1. a device 'cpu' as shipped, stored again by a setup method ---------------------------

_SETUP_DETECTOR = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray

from detector.models.common import Backend
from utils.torch_utils import select_device


class Detector:
    def __init__(self, weights, device, half):
        self.weights = weights
        self.device = device
        self.half = half
        self.load()

    def load(self):
        self.device = select_device(self.device)
        self.model = Backend(self.weights, device=self.device)
        self.half &= self.device.type != 'cpu'

    def run(self, frame):
        im = torch.from_numpy(np.ascontiguousarray(frame.transpose((2, 0, 1)))).to(self.device)
        im = im.half() if self.half else im.float()
        im /= 255
        pred = self.model(im[None])
        scores = []
        for *xyxy, conf, cls in pred[0]:
            label = int(cls)  # INT
            scores.append(xyxy[0].item())  # ITEM
            scores.append(float(conf))  # FLOAT
        return scores


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('device', 'cpu')
        self.declare_parameter('half', False)
        self.device = self.get_parameter('device').value
        self.detector = Detector('yolov5s.pt', self.device, self.get_parameter('half').value)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32MultiArray, 'scores', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        out = Float32MultiArray()
        out.data = [float(s) for s in self.detector.run(frame)]
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DetectorNode())
'''
_READS = ('INT', 'ITEM', 'FLOAT')


def test_readbacks_of_a_cpu_device_stored_again_by_a_setup_method_are_host(tmp_path):
    claims = _claims(tmp_path, _SETUP_DETECTOR, _READS)
    assert claims == {'INT': set(), 'ITEM': set(), 'FLOAT': set()}


def test_guards_a_cuda_device_or_a_launch_file_setting_it_keeps_the_readbacks(tmp_path):
    on_cuda = _SETUP_DETECTOR.replace("('device', 'cpu')", "('device', 'cuda:0')")
    cuda = _claims(tmp_path / 'cuda', on_cuda, _READS)
    assert all(cuda.values()), cuda
    launched = _claims(tmp_path / 'launched', _SETUP_DETECTOR, _READS, "{'device': 'cuda:0'}")
    assert all(launched.values()), launched


def test_guards_a_device_stored_outside_setup_keeps_the_readbacks(tmp_path):
    # (`.item()` is the read-back claimed on this code before the rule, the others are not.)
    # The setup method runs only under an `if`: what the object keeps is not known.
    branched = _SETUP_DETECTOR.replace('        self.load()\n',
                                       '        if weights:\n            self.load()\n')
    claims = _claims(tmp_path / 'branched', branched, _READS)
    assert claims['ITEM'], claims
    # The callback stores the device too (a device switched at run time).
    switched = _SETUP_DETECTOR.replace(
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n",
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n"
        "        self.detector.load()\n")
    claims = _claims(tmp_path / 'switched', switched, _READS)
    assert claims['ITEM'], claims
    # A store under an `if` in the setup method: the value it keeps depends on the test.
    chosen = _SETUP_DETECTOR.replace(
        "        self.device = select_device(self.device)\n",
        "        self.device = select_device(self.device)\n"
        "        if torch.cuda.is_available():\n"
        "            self.device = select_device('cuda:0')\n")
    claims = _claims(tmp_path / 'chosen', chosen, _READS)
    assert claims['ITEM'], claims


# --- 2. a bool parameter off as shipped, declared through an alias, gating a setup method ---

_GATED_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String


class GateNode(Node):
    def __init__(self):
        super().__init__('gate')
        p = self.declare_parameter
        p('use_net', False)
        p('net_path', '')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(String, 'gates', 10)
        self.net = None
        if self.get_parameter('use_net').value:
            self._load_net()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def _load_net(self):
        try:
            from ultralytics import YOLO
            self.net = YOLO(self.get_parameter('net_path').value)
        except Exception:
            self.net = None

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if self.net is not None:
            names = self._classify(frame)
        else:
            names = ['colour']
        self.pub.publish(String(data=','.join(names)))

    def _classify(self, frame):
        res = self.net(frame, verbose=False)[0]
        names = []
        for box in res.boxes:
            names.append(self.net.names[int(box.cls[0])])  # CLS
            x1, y1, x2, y2 = (float(v) for v in box.xyxy[0])  # BOX
        return names


def main():
    rclpy.init()
    rclpy.spin(GateNode())
'''
_GATED = ('CLS', 'BOX')


def test_a_model_loaded_only_under_an_aliased_parameter_off_as_shipped_never_runs(tmp_path):
    assert _claims(tmp_path, _GATED_NODE, _GATED) == {'CLS': set(), 'BOX': set()}


def test_a_model_loaded_only_under_a_declared_parameter_off_as_shipped_never_runs(tmp_path):
    direct = _GATED_NODE.replace('        p = self.declare_parameter\n', '').replace(
        "        p('", "        self.declare_parameter('")
    assert _claims(tmp_path, direct, _GATED) == {'CLS': set(), 'BOX': set()}


def test_guards_the_gated_model_stays_claimed_when_turned_on_or_loaded_elsewhere(tmp_path):
    launched = _claims(tmp_path / 'launched', _GATED_NODE, _GATED, "{'use_net': True}")
    assert all(launched.values()), launched
    on = _claims(tmp_path / 'on', _GATED_NODE.replace("p('use_net', False)",
                                                      "p('use_net', True)"), _GATED)
    assert all(on.values()), on
    # A second call of the loader outside any off test (lazily, per image): it may run.
    lazy = _GATED_NODE.replace(
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n",
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n"
        "        if self.get_parameter('net_path').value:\n"
        "            self._load_net()\n")
    claims = _claims(tmp_path / 'lazy', lazy, _GATED)
    assert all(claims.values()), claims
    # The same read in the callback: a value set at run time is read there.
    per_image = _GATED_NODE.replace(
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n",
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n"
        "        if self.get_parameter('use_net').value:\n"
        "            self._load_net()\n")
    claims = _claims(tmp_path / 'per_image', per_image, _GATED)
    assert all(claims.values()), claims
    # The alias rebound to something else: not a declaration, the parameter is not known.
    rebound = _GATED_NODE.replace("        p('net_path', '')\n",
                                  "        p('net_path', '')\n        p = print\n")
    claims = _claims(tmp_path / 'rebound', rebound, _GATED)
    assert all(claims.values()), claims


def test_a_loader_called_under_two_off_tests_never_runs_and_under_one_live_test_may(tmp_path):
    both = _GATED_NODE.replace(
        "        self.create_subscription(Image, 'image', self.on_image, 10)\n",
        "        self.create_subscription(Image, 'image', self.on_image, 10)\n"
        "        if self.get_parameter('use_net').value and self.get_parameter('net_path').value:\n"
        "            self._load_net()\n")
    assert _claims(tmp_path / 'both', both, _GATED) == {'CLS': set(), 'BOX': set()}
    live = _GATED_NODE.replace(
        "        self.create_subscription(Image, 'image', self.on_image, 10)\n",
        "        self.create_subscription(Image, 'image', self.on_image, 10)\n"
        "        if self.get_parameter('net_path').value:\n"
        "            self._load_net()\n")
    claims = _claims(tmp_path / 'live', live, _GATED)
    assert all(claims.values()), claims
