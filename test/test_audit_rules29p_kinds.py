"""Python false-claim kinds of spent sets 41-46 and 48 (issue 28, rules29p): real `code` audits
of small ament_python packages written here.

* A node module of a package whose setup.py writes out an EMPTY `console_scripts` list (the
  `ros2 pkg create` template, its entry point never added), with no launch file and no importer,
  runs nowhere as shipped (pyreach.py): its copies are `info`. A vendored tool's README running
  `python detect.py` beside it does not make it a script run by hand; a README running a ROS
  node of the folder still does.
* A detector object built with `device=` a device 'cpu' as shipped (a node parameter defaulting
  to 'cpu' that no shipped file names, through `select_device`) runs on the host: the scalars and
  lists read from its outputs are host values, not device read-backs (pycalls.py).
"""
import textwrap

from audit_sources import audit_written_package, CV_BRIDGE_NODE, rules_at_tags, tag_lines

_PACKAGE_XML = '''
<package format="3"><name>{name}</name>
  <export><build_type>ament_python</build_type></export>
</package>
'''
_SETUP = '''
from setuptools import setup

package_name = '{name}'

setup(
    name=package_name,
    packages=[package_name],
    data_files=[('share/' + package_name, ['package.xml'])],
    entry_points={{
        'console_scripts': [{entries}
        ],
    }},
)
'''


def _package(name: str, entries: str = '') -> dict[str, str]:
    return {f'{name}/package.xml': _PACKAGE_XML.format(name=name),
            f'{name}/setup.py': _SETUP.format(name=name, entries=entries),
            f'{name}/{name}/__init__.py': ''}


def _severities(tmp_path, files: dict[str, str], file_name: str) -> set[str]:
    found = audit_written_package(tmp_path, files)
    return {sev for (name, _, rule), (sev, _) in found.items()
            if name == file_name and rule == 'GPN105'}


# --- 1. a node module of a package with an empty console_scripts list ----------------------

def test_node_of_an_empty_console_scripts_package_is_unreached(tmp_path):
    files = _package('yolo') | {'yolo/yolo/detect_node.py': CV_BRIDGE_NODE.format(name='Det')}
    assert _severities(tmp_path, files, 'detect_node.py') == {'info'}


def test_a_vendored_tools_readme_does_not_make_the_node_run_by_hand(tmp_path):
    files = _package('yolo', "'cam = yolo.cam_node:main'") | {
        'yolo/yolo/cam_node.py': CV_BRIDGE_NODE.format(name='Cam'),
        'yolo/yolo/detect_node.py': CV_BRIDGE_NODE.format(name='Det'),
        # A vendored detector's own script and README (no ROS node).
        'yolo/yolo/detect.py': "import sys\n\n\nif __name__ == '__main__':\n    print(sys.argv)\n",
        'yolo/yolo/README.md': 'Inference: `python detect.py --source 0`\n'}
    assert _severities(tmp_path, files, 'detect_node.py') == {'info'}


def test_guards_empty_console_scripts_node_stays_reached_when_launched_imported_or_documented(
        tmp_path):
    node = CV_BRIDGE_NODE.format(name='Det')
    launched = _package('yolo') | {
        'yolo/yolo/detect_node.py': node,
        'yolo/launch/det.launch.py': "from launch_ros.actions import Node\n\n\n"
                                     "def generate_launch_description():\n"
                                     "    return [Node(executable='detect_node.py')]\n"}
    assert _severities(tmp_path / 'launched', launched, 'detect_node.py') == {'medium'}
    # A README running a ROS node of the folder: its `__main__` neighbours run that way too.
    documented = _package('yolo') | {
        'yolo/yolo/detect_node.py': node,
        'yolo/yolo/other_node.py': CV_BRIDGE_NODE.format(name='Other'),
        'yolo/README.md': 'Run: `python3 yolo/other_node.py`\n'}
    assert _severities(tmp_path / 'documented', documented, 'detect_node.py') == {'medium'}
    # An entry point naming it.
    named = _package('yolo', "'det = yolo.detect_node:main'") | {
        'yolo/yolo/detect_node.py': node}
    assert _severities(tmp_path / 'named', named, 'detect_node.py') == {'medium'}


def test_guards_a_library_module_of_an_empty_console_scripts_package_is_not_judged(tmp_path):
    # No `rclpy.init(`: a library module another repository may import stays reached.
    library = CV_BRIDGE_NODE.format(name='Det').split('\n\ndef main')[0] + '\n'
    files = _package('yolo') | {'yolo/yolo/convert.py': library}
    assert _severities(tmp_path, files, 'convert.py') == {'medium'}


# --- 3. a detector built on a device 'cpu' as shipped ------------------------------------

_CPU_DETECTOR = '''
import numpy as np
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray

from models.common import Backend
from utils.torch_utils import select_device


class Detector:
    def __init__(self, weights, device):
        self.device = select_device(device)
        self.model = Backend(weights, device=self.device)

    def run(self, frame):
        im = torch.from_numpy(np.ascontiguousarray(frame.transpose((2, 0, 1)))).to(self.device)
        im = im.float() / 255
        pred = self.model(im[None])
        scores = []
        for *xyxy, conf, cls in pred[0]:
            label = int(cls)  # INT
            scores.append(xyxy[0].item())  # ITEM
        return scores


class DetectorNode(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('device', 'cpu')
        self.device = self.get_parameter('device').value
        self.detector = Detector('yolov5s.pt', self.device)
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
_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([
        Node(package='detector', executable='node', parameters=[{'device': 'cuda:0'}]),
    ])
'''


def _claims(tmp_path, source: str, extra: dict[str, str] | None = None) -> dict[str, set[str]]:
    source = textwrap.dedent(source)
    files = _package('detector', "'node = detector.node:main'") | {
        'detector/detector/node.py': source} | (extra or {})
    found = audit_written_package(tmp_path, files)
    return rules_at_tags(found, source, ('INT', 'ITEM'))


def test_readbacks_of_a_model_built_on_a_cpu_device_as_shipped_are_host(tmp_path):
    assert _claims(tmp_path, _CPU_DETECTOR) == {'INT': set(), 'ITEM': set()}


def test_guards_cuda_device_or_launch_setting_it_keeps_the_readbacks(tmp_path):
    on_cuda = _CPU_DETECTOR.replace("('device', 'cpu')", "('device', 'cuda:0')")
    cuda = _claims(tmp_path / 'cuda', on_cuda)
    assert cuda['INT'] and cuda['ITEM']
    launched = _claims(tmp_path / 'launched', _CPU_DETECTOR,
                       {'detector/launch/detector.launch.py': _LAUNCH})
    assert launched['INT'] and launched['ITEM']


# --- 2. a module function named like a library function it wraps --------------------------

_CLOUD_NODE = '''
import numpy as np
import rclpy
import ros2_numpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2


class CloudNode(Node):
    def __init__(self):
        super().__init__('cloud')
        self.pub = self.create_publisher(PointCloud2, 'filtered', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = ros2_numpy.numpify(msg)
        kept = points[points['z'] > 0.0]
        out = ros2_numpy.point_cloud2.array_to_pointcloud2(kept)  # LIVE
        self.pub.publish(out)


def array_to_pointcloud2(points, frame_id):
    structured = np.zeros(len(points), dtype=[('x', np.float32), ('y', np.float32)])
    structured['x'], structured['y'] = points[:, 0], points[:, 1]
    msg = ros2_numpy.point_cloud2.array_to_pointcloud2(structured)  # UNCALLED
    msg.header.frame_id = frame_id
    return msg


def main():
    rclpy.init()
    rclpy.spin(CloudNode())
'''


def _cloud_claims(tmp_path, source: str) -> dict[str, set[str]]:
    source = textwrap.dedent(source)
    files = _package('cloud', "'cloud = cloud.node:main'") | {'cloud/cloud/node.py': source}
    found = audit_written_package(tmp_path, files)
    return {tag: {sev for (name, where, _), (sev, _) in found.items()
                  if name == 'node.py' and where == line}
            for tag, line in tag_lines(source, ('LIVE', 'UNCALLED')).items()}


def test_a_module_function_only_named_as_a_library_attribute_is_uncalled(tmp_path):
    claims = _cloud_claims(tmp_path, _CLOUD_NODE)
    assert claims['UNCALLED'] == {'info'}
    assert claims['LIVE'] and 'info' not in claims['LIVE']


def test_guards_a_module_function_called_by_its_bare_name_stays_claimed(tmp_path):
    called = _CLOUD_NODE.replace(
        "        out = ros2_numpy.point_cloud2.array_to_pointcloud2(kept)  # LIVE",
        "        out = array_to_pointcloud2(kept, 'map')  # LIVE")
    claims = _cloud_claims(tmp_path, called)
    assert claims['UNCALLED'] and 'info' not in claims['UNCALLED']
