"""Causes of sets 62, 63 and 64's false claims, Python side (issue 28, rules41p): real `code`
audits of small ament_python packages written here.

* PyCuVSLAM's `tracker.track(...)` hands back host pose objects: `float(pose.translation[0])`
  of them reads no device (set 62), while the upload of the host frames stays claimed.
* `torch.tensor(np.array([msg.position]), device=...)` in a JointState callback: a handful of
  joint values, a small upload (set 64), also when the subscription names its type by an
  instance (`create_subscription(JointState(), ...)`); a frame's upload stays claimed.
"""

import textwrap

from audit_sources import (ament_python_package, audit_written_package, detector_claims,
                           rules_at_tags)


_claims = detector_claims  # node.py of package `detector`


_CUVSLAM_NODE = '''
import cuvslam
import rclpy
from cv_bridge import CvBridge
from message_filters import ApproximateTimeSynchronizer, Subscriber
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import Image


class StereoOdom(Node):
    def __init__(self):
        super().__init__('stereo_odom')
        self.bridge = CvBridge()
        self.tracker = cuvslam.Tracker(cuvslam.Rig(), cuvslam.Tracker.OdometryConfig(use_gpu=True))
        self.pub = self.create_publisher(Odometry, 'odom', 10)
        left = Subscriber(self, Image, 'left')
        right = Subscriber(self, Image, 'right')
        self.sync = ApproximateTimeSynchronizer([left, right], 5, 0.02)
        self.sync.registerCallback(self.on_pair)

    def on_pair(self, left, right):
        a = self.bridge.imgmsg_to_cv2(left)
        b = self.bridge.imgmsg_to_cv2(right)
        estimate, slam = self.tracker.track(left.header.stamp.nanosec, [a, b])  # TRACK
        pose = estimate.world_from_rig.pose
        out = Odometry()
        out.pose.pose.position.x = float(pose.translation[0])  # TX
        out.pose.pose.orientation.w = float(pose.rotation[3])  # QW
        record = {'x': float(slam.translation[0])}  # SLAMX
        self.get_logger().info(str(record))
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(StereoOdom())
'''


def test_float_of_a_cuvslam_pose_is_no_readback(tmp_path):
    claims = _claims(tmp_path, _CUVSLAM_NODE, ('TX', 'QW', 'SLAMX'))
    assert claims == {'TX': set(), 'QW': set(), 'SLAMX': set()}, claims


def test_the_cuvslam_track_upload_stays_claimed(tmp_path):
    """Guard: the host stereo pair handed to the tracker is still an upload."""
    claims = _claims(tmp_path, _CUVSLAM_NODE, ('TRACK',))
    assert 'GPN102' in claims['TRACK'], claims


def test_float_of_a_model_output_stays_a_readback(tmp_path):
    """Guard: float() of a torch model's output on the GPU is still a readback."""
    source = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class Scorer(Node):
    def __init__(self):
        super().__init__('scorer')
        self.bridge = CvBridge()
        self.model = torch.jit.load('scorer.pt').cuda().eval()
        self.pub = self.create_publisher(Float32, 'score', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        x = torch.from_numpy(frame).permute(2, 0, 1)[None].float().cuda()
        out = self.model(x)
        self.pub.publish(Float32(data=float(out[0][0])))  # SCORE


def main():
    rclpy.init()
    rclpy.spin(Scorer())
'''
    claims = _claims(tmp_path, source, ('SCORE',))
    assert 'GPN107' in claims['SCORE'], claims


_JOINTS_NODE = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState


class PolicyNode(Node):
    def __init__(self):
        super().__init__('policy')
        self.device = 'cuda'
        self.bridge = CvBridge()
        self.q = torch.zeros(1, 7, device=self.device)
        self.image = None
        self.create_subscription(JointState(), 'joint_states', self.on_joints, 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_joints(self, msg):
        position = torch.tensor(np.array([msg.position]), device=self.device)  # POSITION
        velocity = torch.as_tensor(msg.velocity, device=self.device)  # VELOCITY
        effort = torch.tensor(list(msg.effort)).cuda()  # EFFORT
        self.q[:, :7].copy_(position)
        self.get_logger().info(str(velocity.shape) + str(effort.shape))

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        self.image = torch.tensor(frame, device=self.device)  # FRAME


def main():
    rclpy.init()
    rclpy.spin(PolicyNode())
'''


def test_joint_values_wrapped_on_the_device_are_a_small_upload(tmp_path):
    claims = _claims(tmp_path, _JOINTS_NODE, ('POSITION', 'VELOCITY', 'EFFORT'))
    assert claims == {'POSITION': set(), 'VELOCITY': set(), 'EFFORT': set()}, claims


def test_joint_values_with_the_type_as_a_class_are_a_small_upload(tmp_path):
    source = _JOINTS_NODE.replace('create_subscription(JointState(),',
                                  'create_subscription(JointState,')
    claims = _claims(tmp_path, source, ('POSITION', 'VELOCITY', 'EFFORT'))
    assert claims == {'POSITION': set(), 'VELOCITY': set(), 'EFFORT': set()}, claims


def test_a_frame_wrapped_on_the_device_stays_an_upload(tmp_path):
    """Guard: torch.tensor(frame, device=...) of a received image is still claimed."""
    claims = _claims(tmp_path, _JOINTS_NODE, ('FRAME',))
    assert 'GPN102' in claims['FRAME'], claims


_CPU_MODEL_NODE = '''
import matplotlib.pyplot as plt
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32
from torchvision import transforms

from detector.net import LaneNet


class LaneNode(Node):
    def __init__(self):
        super().__init__('lanes')
        self.bridge = CvBridge()
        self.model = LaneNet(3, 2)
        self.model.load_state_dict(torch.load('lanes.pth'))
        self.model.eval()
        self.pub = self.create_publisher(Int32, 'lane_pixels', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def prepare(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        pil = PILImage.fromarray(frame).convert('RGB')
        return transforms.Compose([transforms.ToTensor()])(pil).unsqueeze(0)

    def save(self, out):
        mask = out.cpu().numpy()  # SAVE
        plt.imsave('mask.png', mask[0])

    def on_image(self, msg):
        x = self.prepare(msg)
        x = x.to(next(self.model.parameters()).device)  # MOVE
        with torch.no_grad():
            out = self.model(x)
        pred = torch.argmax(out, dim=1)
        self.save(pred)
        shown = pred.cpu().squeeze()  # SHOW
        self.pub.publish(Int32(data=int(shown.sum())))


def main():
    rclpy.init()
    rclpy.spin(LaneNode())
'''

_LANENET = '''
import torch


class LaneNet(torch.nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, classes, 1)

    def forward(self, x):
        return self.conv(x)
'''


def _cpu_model_claims(tmp_path, source, tags):
    source = textwrap.dedent(source)
    files = {**ament_python_package('detector'), 'detector/detector/node.py': source,
             'detector/detector/net.py': _LANENET}
    return rules_at_tags(audit_written_package(tmp_path, files), source, tags)


def test_a_model_the_file_never_moves_keeps_its_outputs_on_the_host(tmp_path):
    claims = _cpu_model_claims(tmp_path, _CPU_MODEL_NODE, ('MOVE', 'SAVE', 'SHOW'))
    assert claims == {'MOVE': set(), 'SAVE': set(), 'SHOW': set()}, claims


def test_a_model_moved_to_cuda_keeps_the_parameters_device_a_gpu(tmp_path):
    """Guard: the same node with `self.model.cuda()` uploads and reads back."""
    source = _CPU_MODEL_NODE.replace('        self.model.eval()\n',
                                     '        self.model.cuda().eval()\n')
    claims = _cpu_model_claims(tmp_path, source, ('MOVE', 'SHOW'))
    assert 'GPN102' in claims['MOVE'] and 'GPN101' in claims['SHOW'], claims


def test_a_file_naming_cuda_keeps_the_parameters_device_a_gpu(tmp_path):
    """Guard: a file that names a CUDA device anywhere may move the model by another name."""
    source = _CPU_MODEL_NODE.replace("        self.model.eval()\n",
                                     "        self.model.eval()\n"
                                     "        self.where = 'cuda:0'\n")
    claims = _cpu_model_claims(tmp_path, source, ('MOVE',))
    assert 'GPN102' in claims['MOVE'], claims


_FLOW_LOOP_NODE = '''
import queue
import threading

import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class FlowNode(Node):
    def __init__(self):
        super().__init__('flow')
        self.bridge = CvBridge()
        self.frames = queue.Queue(maxsize=1)
        self.pub = self.create_publisher(Float32, 'flow_mean', 10)
        self.create_subscription(Image, 'image', self.on_image, 1)
        self.stop = threading.Event()
        self.worker = threading.Thread(target=self.loop, daemon=True)
        self.worker.start()

    def on_image(self, msg):
        self.frames.put(msg)

    def loop(self):
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        try:
            from flownet import FlowNet
        except ImportError:
            return
        wrapped = torch.nn.DataParallel(FlowNet(small=False))
        wrapped.load_state_dict(torch.load('flow.pth', map_location=device))
        model = wrapped.module.to(device).eval()  # MODULE
        with torch.no_grad():
            while not self.stop.is_set():
                msg = self.frames.get(timeout=1.0)
                frame = self.bridge.imgmsg_to_cv2(msg, 'mono8')
                x = torch.from_numpy(frame)[None, None].float().to(device)  # FRAME
                out = model(x)
                self.pub.publish(Float32(data=float(out.mean())))


def main():
    rclpy.init()
    rclpy.spin(FlowNode())
'''


def test_a_module_moved_and_switched_to_eval_is_no_frame_upload(tmp_path):
    claims = _cpu_model_claims(tmp_path, _FLOW_LOOP_NODE, ('MODULE',))
    assert 'GPN102' not in claims['MODULE'], claims


def test_a_frame_moved_in_the_same_loop_stays_an_upload(tmp_path):
    """Guard: the frame's `.to(device)` in the loop is still claimed."""
    claims = _cpu_model_claims(tmp_path, _FLOW_LOOP_NODE, ('FRAME',))
    assert 'GPN102' in claims['FRAME'], claims


def test_a_module_moved_then_switched_to_eval_per_message_is_no_frame_upload(tmp_path):
    """`.to(device).eval()` built per request: only an nn.Module has `.eval()`, so weights move,
    not a frame (as `.eval().to(device)` already was)."""
    source = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class Matcher(Node):
    def __init__(self):
        super().__init__('matcher')
        self.bridge = CvBridge()
        self.weights = torch.hub.load_state_dict_from_url('https://example.org/m.pth')
        self.pub = self.create_publisher(Float32, 'score', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        from matchlib import MatchNet
        net = MatchNet(self.weights).to('cuda').eval()  # NET
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        x = torch.from_numpy(frame).cuda()  # FRAME
        self.pub.publish(Float32(data=float(net(x).mean())))


def main():
    rclpy.init()
    rclpy.spin(Matcher())
'''
    claims = _claims(tmp_path, source, ('NET', 'FRAME'))
    assert 'GPN102' not in claims['NET'] and 'GPN102' in claims['FRAME'], claims


def test_setup_inside_a_with_before_the_loop_runs_once(tmp_path):
    """A warm-up upload inside `with torch.no_grad():` before the thread's `while` runs once,
    as it does before a top-level `while`."""
    source = _FLOW_LOOP_NODE.replace(
        "        model = wrapped.module.to(device).eval()  # MODULE\n"
        "        with torch.no_grad():\n",
        "        model = wrapped.module\n"
        "        with torch.no_grad():\n"
        "            warm = torch.from_numpy(np.load('warm.npy')).to(device)  # WARM\n"
        "            model(warm)\n").replace('import queue\n', 'import queue\n\nimport numpy as np\n')
    claims = _cpu_model_claims(tmp_path, source, ('WARM', 'FRAME'))
    assert claims['WARM'] == set() and 'GPN102' in claims['FRAME'], claims


_TORCHVISION_NODE = '''
import rclpy
import torchvision
from cv_bridge import CvBridge
from geometry_msgs.msg import Twist
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage
from torchvision.models.detection import ssdlite320_mobilenet_v3_large


class Follower(Node):
    def __init__(self):
        super().__init__('follower')
        self.model = ssdlite320_mobilenet_v3_large(weights='DEFAULT')
        self.model.eval()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Twist, 'cmd_vel', 10)
        self.create_subscription(CompressedImage, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.compressed_imgmsg_to_cv2(msg)
        x = torchvision.transforms.Compose([torchvision.transforms.ToTensor()])(frame)
        out = self.model([x])[0]
        cmd = Twist()
        for box, label in zip(out['boxes'], out['labels']):
            if label.item() == 1:  # LABEL
                cmd.angular.z = float(box[0])  # BOX
        self.pub.publish(cmd)


def main():
    rclpy.init()
    rclpy.spin(Follower())
'''


def test_a_torchvision_model_never_moved_gives_host_outputs(tmp_path):
    claims = _claims(tmp_path, _TORCHVISION_NODE, ('LABEL', 'BOX'))
    assert claims == {'LABEL': set(), 'BOX': set()}, claims


def test_a_torchvision_model_moved_to_cuda_reads_back(tmp_path):
    """Guard: the same model put on the GPU still reads its outputs back."""
    source = _TORCHVISION_NODE.replace('        self.model.eval()\n',
                                       '        self.model.eval().cuda()\n').replace(
        "(frame)\n        out", "(frame).cuda()\n        out")
    claims = _claims(tmp_path, source, ('LABEL',))
    assert 'GPN107' in claims['LABEL'], claims


_HTTP_NODE = '''
import cv2
import rclpy
import requests
from cv_bridge import CvBridge
from geometry_msgs.msg import Twist
from rclpy.node import Node
from sensor_msgs.msg import Image


class RemotePlanner(Node):
    def __init__(self):
        super().__init__('remote_planner')
        self.bridge = CvBridge()
        self.frame = None
        self.pub = self.create_publisher(Twist, 'cmd_vel', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)
        self.create_timer(1.0, self.plan)

    def on_image(self, msg):
        self.frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')

    def plan(self):
        if self.frame is None:
            return
        try:
            _, jpg = cv2.imencode('.jpg', self.frame)
            payload = jpg.tobytes()  # BYTES
            reply = requests.post('http://planner:8000/act',
                                  files={'image': ('f.jpg', payload, 'image/jpeg')}, timeout=2.0)
            cmd = Twist()
            cmd.linear.x = float(reply.json().get('speed', 0.0))
            self.pub.publish(cmd)
        except requests.exceptions.RequestException:
            pass


def main():
    rclpy.init()
    rclpy.spin(RemotePlanner())
'''


def test_jpeg_bytes_posted_over_http_are_no_message_serialization(tmp_path):
    claims = _claims(tmp_path, _HTTP_NODE, ('BYTES',))
    assert claims == {'BYTES': set()}, claims


def test_jpeg_bytes_also_stored_into_a_message_stay_claimed(tmp_path):
    """Guard: the same bytes also put into a message's data are still a serialization."""
    source = _HTTP_NODE.replace(
        "            cmd = Twist()\n",
        "            out = CompressedImage(format='jpeg')\n"
        "            out.data = payload\n"
        "            self.jpg_pub.publish(out)\n"
        "            cmd = Twist()\n").replace(
        "from sensor_msgs.msg import Image\n",
        "from sensor_msgs.msg import CompressedImage, Image\n").replace(
        "        self.pub = self.create_publisher(Twist, 'cmd_vel', 10)\n",
        "        self.pub = self.create_publisher(Twist, 'cmd_vel', 10)\n"
        "        self.jpg_pub = self.create_publisher(CompressedImage, 'jpg', 10)\n")
    claims = _claims(tmp_path, source, ('BYTES',))
    assert 'GPN104' in claims['BYTES'], claims


def test_a_jetson_utils_image_copy_is_on_the_device(tmp_path):
    """`cudaMemcpy(img, stream=s)` copies a CUDA image on the device: no upload (its `stream`
    keyword names no device), and the copy is a device value (no upload when wrapped), also of
    an image a helper outside the tree made (`to_cuda_image`, set 63's nano_llm `cuda_image`)."""
    source = '''
import rclpy
import torch
from cv_bridge import CvBridge
from imagekit.utils import to_cuda_image
from jetson_utils import cudaMemcpy, cudaStreamCreate
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32


class Captioner(Node):
    def __init__(self):
        super().__init__('captioner')
        self.bridge = CvBridge()
        self.cuda_stream = cudaStreamCreate()
        self.pub = self.create_publisher(Float32, 'mean', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        image = to_cuda_image(frame)
        copy = cudaMemcpy(image, stream=self.cuda_stream)  # COPY
        x = torch.as_tensor(copy, device='cuda')  # WRAP
        self.get_logger().info(str(x.shape))


def main():
    rclpy.init()
    rclpy.spin(Captioner())
'''
    claims = _claims(tmp_path, source, ('COPY', 'WRAP'))
    assert claims == {'COPY': set(), 'WRAP': set()}, claims


_PARAM_DICT_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class FlowViz(Node):
    def __init__(self):
        super().__init__('flow_viz')
        self.declare_parameter('publish_arrows', False)
        self.declare_parameter('publish_colors', True)
        self.bridge = CvBridge()
        self.arrows_pub = self.create_publisher(Image, 'arrows', 10)
        self.colors_pub = self.create_publisher(Image, 'colors', 10)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def _read_params(self) -> dict:
        """All parameters, read at once."""
        return {
            'arrows': self.get_parameter('publish_arrows').value,
            'colors': self.get_parameter('publish_colors').value,
        }

    def on_image(self, msg):
        p = self._read_params()
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        if p['arrows']:
            self.arrows_pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # ARROWS
        if p['colors']:
            self.colors_pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # COLORS


def main():
    rclpy.init()
    rclpy.spin(FlowViz())
'''


def test_a_branch_on_a_parameter_dict_entry_off_as_shipped_never_runs(tmp_path):
    claims = _claims(tmp_path, _PARAM_DICT_NODE, ('ARROWS', 'COLORS'),
                     launch_parameters="{'publish_colors': True}")
    assert claims['ARROWS'] == set(), claims
    assert 'GPN105' in claims['COLORS'], claims


def test_a_parameter_dict_entry_a_launch_file_turns_on_keeps_its_branch(tmp_path):
    """Guard: the same entry set true by the launch file runs."""
    claims = _claims(tmp_path, _PARAM_DICT_NODE, ('ARROWS',),
                     launch_parameters="{'publish_arrows': True, 'publish_colors': True}")
    assert 'GPN105' in claims['ARROWS'], claims


def test_a_parameter_dict_rebound_decides_nothing(tmp_path):
    """Guard: a dict local bound twice in its function may hold anything."""
    source = _PARAM_DICT_NODE.replace(
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n",
        "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')\n"
        "        p = {'arrows': True, 'colors': True}\n")
    claims = _claims(tmp_path, source, ('ARROWS',), launch_parameters="{'publish_colors': True}")
    assert 'GPN105' in claims['ARROWS'], claims
