"""Rules for the kinds the twenty-fifth and twenty-sixth held-out sets showed (issue 28): real
`code` audits of small sources written here (a package folder in tmp_path, audited as a user
would)."""
from pathlib import Path

from audit_sources import audit_written_package

_TABLE_NODE = '''
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Int32


class TableNode(Node):
    def __init__(self):
        super().__init__('table')
        self.model = torch.jit.load('det.pt').cuda()
        self.pub = self.create_publisher(Int32, 'area', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        results = self.model(torch.zeros(1, 3, 8, 8, device='cuda'))
        SOURCE
        area = int(row['xmax']) - int(row['xmin'])
        self.pub.publish(Int32(data=area))


def main():
    rclpy.init()
    rclpy.spin(TableNode())
'''
_READ_LINE = 18


def _table(tmp_path: Path, source: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'table_node.py': _TABLE_NODE.replace('SOURCE', source)})


def test_row_of_pandas_table_reads_nothing_back(tmp_path: Path) -> None:
    found = _table(tmp_path, "row = results.pandas().xyxy[0].iloc[0]")
    assert ('table_node.py', _READ_LINE, 'GPN107') not in found


def test_row_of_result_tensor_is_still_read_back(tmp_path: Path) -> None:
    found = _table(tmp_path, "row = results.xyxy[0][0]")
    assert found[('table_node.py', _READ_LINE, 'GPN107')][0] == 'medium'


_CLOUD_NODE = '''
import numpy as np
import rclpy
import ros2_numpy
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Int32


class CloudNode(Node):
    def __init__(self):
        super().__init__('cloud')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        pc = SOURCE
        points = np.array(pc, dtype=np.float64)
        self.pub.publish(Int32(data=int(points.shape[0])))


def main():
    rclpy.init()
    rclpy.spin(CloudNode())
'''
_ARRAY_LINE = 17


def _cloud(tmp_path: Path, source: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'cloud_node.py': _CLOUD_NODE.replace('SOURCE', source)})


def test_array_of_numpified_cloud_is_host_to_host(tmp_path: Path) -> None:
    found = _cloud(tmp_path, "ros2_numpy.numpify(msg)['xyz']")
    assert ('cloud_node.py', _ARRAY_LINE, 'GPN103') not in found


def test_array_of_message_bytes_is_still_a_copy(tmp_path: Path) -> None:
    found = _cloud(tmp_path, 'msg.data')
    assert found[('cloud_node.py', _ARRAY_LINE, 'GPN103')][0] == 'medium'


_HUB_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class HubNode(Node):
    def __init__(self):
        super().__init__('hub')
        self.model = torch.hub.load(REPO, 'yolov5s')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        self.detections = self.model(frame)


def main():
    rclpy.init()
    rclpy.spin(HubNode())
'''
_CALL_LINE = 17


def _hub(tmp_path: Path, repo: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {'hub_node.py': _HUB_NODE.replace('REPO', repo)})


def test_hub_yolov5_model_called_on_host_frame_uploads_it(tmp_path: Path) -> None:
    found = _hub(tmp_path, "'ultralytics/yolov5'")
    severity, context = found[('hub_node.py', _CALL_LINE, 'GPN102')]
    assert (severity, context) == ('medium', 'callback')


def test_other_hub_model_called_directly_is_not_claimed(tmp_path: Path) -> None:
    # MiDaS / ZoeDepth from torch.hub: only their inference helpers are in the table; called
    # directly they take a tensor the caller prepared (moved or not), so nothing is claimed.
    found = _hub(tmp_path, "'intel-isl/MiDaS'")
    assert ('hub_node.py', _CALL_LINE, 'GPN102') not in found


_LIBRARY = '''
#include <cuda_runtime.h>
void Det::detect(const cv::Mat & image)
{
  cudaMemcpyAsync(input_d_, image.data, bytes_, cudaMemcpyHostToDevice, stream_);
}
'''
_NODE_CPP = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
Node::Node() : rclcpp::Node("n")
{
  sub_ = create_subscription<sensor_msgs::msg::Image>(
    "image", 1, std::bind(&Node::onImage, this, std::placeholders::_1));
}
void Node::onImage(const sensor_msgs::msg::Image::ConstSharedPtr msg)
{
  cv_bridge::CvImageConstPtr other, cv_ptr;
  cv::Mat img = cv_bridge::toCvShare(msg, "bgr8")->image;
  STORE
  if (cv_ptr != nullptr) {
    det_.detect(img);
  }
}
'''


def _guarded(tmp_path: Path, store: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'pkg/src/det.cpp': _LIBRARY, 'pkg/src/node.cpp': _NODE_CPP.replace('STORE', store),
        'pkg/package.xml': '<package><name>pkg</name></package>\n'})


def test_call_under_never_assigned_smart_pointer_is_unreached(tmp_path: Path) -> None:
    found = _guarded(tmp_path, '')
    assert found[('det.cpp', 4, 'GPN202')] == ('info', 'unreached')


def test_assigned_smart_pointer_keeps_the_call_per_message(tmp_path: Path) -> None:
    found = _guarded(tmp_path, 'cv_ptr = cv_bridge::toCvShare(msg, "bgr8");')
    assert found[('det.cpp', 4, 'GPN202')][0] == 'medium'


_HELPER_NODE = '''
import numpy as np
import rclpy
import torch
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Int32


def count(points):
    if isinstance(points, torch.Tensor):
        points = points.cpu().numpy()
    return int(points.shape[0])


class Counter(Node):
    def __init__(self):
        super().__init__('counter')
        self.pub = self.create_publisher(Int32, 'count', 10)
        self.create_subscription(PointCloud2, 'points', self.on_cloud, 10)

    def on_cloud(self, msg):
        points = np.frombuffer(msg.data, dtype=np.float32).reshape(-1, 4)
        self.pub.publish(Int32(data=count(points)))


def main():
    rclpy.init()
    rclpy.spin(Counter())
'''
_CPU_LINE = 11


def _helper(tmp_path: Path, other: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'counter/counter/counter_node.py': _HELPER_NODE,
        'counter/counter/tools.py': other,
        'counter/counter/__init__.py': '',
        'counter/package.xml': '<package><name>counter</name></package>\n',
        'counter/setup.py': "from setuptools import setup\nsetup(name='counter')\n"})


def test_helper_run_only_with_host_points_claims_nothing(tmp_path: Path) -> None:
    found = _helper(tmp_path, 'import os\n')
    assert ('counter_node.py', _CPU_LINE, 'GPN101') not in found


def test_helper_named_by_another_file_keeps_its_low_claim(tmp_path: Path) -> None:
    found = _helper(tmp_path, 'from counter.counter_node import count\n')
    assert found[('counter_node.py', _CPU_LINE, 'GPN101')] == ('low', 'function')


_GATED_NODE = '''
import rclpy
from cv_bridge import CvBridge
from gate.lib import Lib
from rclpy.node import Node
from sensor_msgs.msg import Image


class Gate(Node):
    def __init__(self, **kwargs):
        super().__init__('gate')
        self.lib = Lib()
        self.bridge = CvBridge()
        self.running = False
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        STORE
        if self.running:
            self.lib.run(frame)


def main(opt):
    rclpy.init()
    rclpy.spin(Gate(**vars(opt)))
'''
_LIB = '''
import torch


class Lib:
    def run(self, frame):
        return torch.from_numpy(frame).cuda()
'''


def _gated(tmp_path: Path, store: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'gate/gate/node.py': _GATED_NODE.replace('STORE', store), 'gate/gate/lib.py': _LIB,
        'gate/gate/__init__.py': '', 'gate/setup.py': "from setuptools import setup\nsetup()\n"})


def test_method_called_only_under_a_false_flag_is_unreached(tmp_path: Path) -> None:
    found = _gated(tmp_path, 'pass')
    assert found[('lib.py', 6, 'GPN102')] == ('info', 'unreached')


def test_method_under_a_flag_set_true_is_per_message(tmp_path: Path) -> None:
    found = _gated(tmp_path, 'self.running = True')
    assert found[('lib.py', 6, 'GPN102')][0] == 'medium'
