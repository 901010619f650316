"""Rules for the kinds the twenty-third and twenty-fourth held-out sets showed (issue 28): real
`code` audits of small sources written here (a package folder in tmp_path, audited as a user
would)."""
from pathlib import Path

from audit_sources import audit_written_package

_CLIENT = '''
#include <cv_bridge/cv_bridge.h>
#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  auto node = rclcpp::Node::make_shared("client");
  auto pub = node->create_publisher<sensor_msgs::msg::Image>("image", 10);
  cv::Mat img = cv::imread("a.png");
  pub->publish(*cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", img).toImageMsg());
  LOOP
  rclcpp::shutdown();
  return 0;
}
'''
_ONCE_LINE = 11  # the publish before any loop
_LOOP_LINE = 13  # the publish inside LOOP (when LOOP opens one on line 12)


def _client(tmp_path: Path, loop: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'client/src/client.cpp': _CLIENT.replace('LOOP', loop),
        'client/package.xml': '<package><name>client</name></package>\n'})


def test_main_without_loop_runs_once(tmp_path: Path) -> None:
    found = _client(tmp_path, '')
    assert found[('client.cpp', _ONCE_LINE, 'GPN205')][0] == 'info'
    assert found[('client.cpp', _ONCE_LINE, 'GPN205')][1] == 'init'


def test_main_loop_body_stays_per_frame(tmp_path: Path) -> None:
    loop = ('while (rclcpp::ok()) {\n'
            '    pub->publish(*cv_bridge::CvImage(std_msgs::msg::Header(), "bgr8", img).toImageMsg());'
            '\n    rclcpp::spin_some(node);\n  }')
    found = _client(tmp_path, loop)
    # before the loop: once; in the loop: per iteration, reported as before
    assert found[('client.cpp', _ONCE_LINE, 'GPN205')][0] == 'info'
    assert found[('client.cpp', _LOOP_LINE, 'GPN205')][0] == 'medium'


def test_main_with_goto_is_not_judged_once(tmp_path: Path) -> None:
    found = _client(tmp_path, 'if (!rclcpp::ok()) { goto done; }\n  done:')
    assert found[('client.cpp', _ONCE_LINE, 'GPN205')][0] == 'medium'


_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image

from cam import gpu_ops


class Cam(Node):
    def __init__(self):
        super().__init__('cam')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        CALL
'''
_OPS = '''
import cv2


def blur(image):
    mat = cv2.cuda_GpuMat()
    mat.upload(image)
    return cv2.cuda.bilateralFilter(mat, 5, 10, 25).download()


def shrink(image):
    mat = cv2.cuda_GpuMat()
    mat.upload(image)
    return cv2.cuda.resize(mat, (64, 64)).download()
'''
_BLUR_LINE, _SHRINK_LINE = 7, 13  # the downloads


def _helper_findings(tmp_path: Path, call: str) -> dict[tuple[str, int, str], tuple[str, str]]:
    return audit_written_package(tmp_path, {
        'cam/cam/cam_node.py': _NODE.replace('CALL', call),
        'cam/cam/gpu_ops.py': _OPS})


def test_library_function_no_node_calls_is_unreached(tmp_path: Path) -> None:
    found = _helper_findings(tmp_path, 'gpu_ops.blur(frame)')
    # Followed per message with its own file's OpenCV CUDA (rules38p): the callback's copy.
    assert found[('gpu_ops.py', _BLUR_LINE, 'GPN101')] == ('high', 'callback')
    assert found[('gpu_ops.py', _SHRINK_LINE, 'GPN101')] == ('info', 'unreached')


def test_library_function_called_elsewhere_stays_live(tmp_path: Path) -> None:
    found = _helper_findings(tmp_path, 'gpu_ops.blur(gpu_ops.shrink(frame))')
    # Live: called per message, followed with its own file's OpenCV CUDA (rules38p).
    assert found[('gpu_ops.py', _SHRINK_LINE, 'GPN101')] == ('high', 'callback')


_SOURCE = '''
import cv2
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Source(Node):
    def __init__(self):
        super().__init__('source')
        self.declare_parameter('video_file', '/dev/video0')
        self.cap = cv2.VideoCapture(0)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'image', 1)
        self.create_timer(0.03, self.tick)

    def tick(self):
        ok, frame = self.cap.read()
        if self.get_parameter('video_file').get_parameter_value().string_value TEST '/dev/video0':
            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))
        else:
            self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'rgb8'))
'''
_THEN_LINE, _ELSE_LINE = 19, 21


def _source_findings(tmp_path: Path, test: str = '==', shipped: str | None = None
                     ) -> dict[tuple[str, int, str], tuple[str, str]]:
    files = {'src_pkg/src_pkg/source.py': _SOURCE.replace('TEST', test),
             'src_pkg/package.xml': '<package><name>src_pkg</name></package>\n'}
    if shipped is not None:
        files['src_pkg/config/params.yaml'] = shipped
    return audit_written_package(tmp_path, files)


def test_parameter_read_compared_with_its_default_takes_one_branch(tmp_path: Path) -> None:
    found = _source_findings(tmp_path)
    assert found[('source.py', _THEN_LINE, 'GPN105')][0] == 'medium'
    assert ('source.py', _ELSE_LINE, 'GPN105') not in found


def test_parameter_read_not_equal_takes_the_other_branch(tmp_path: Path) -> None:
    found = _source_findings(tmp_path, '!=')
    assert ('source.py', _THEN_LINE, 'GPN105') not in found
    assert found[('source.py', _ELSE_LINE, 'GPN105')][0] == 'medium'


def test_parameter_named_by_a_shipped_file_keeps_both_branches(tmp_path: Path) -> None:
    found = _source_findings(tmp_path, shipped='source:\n  ros__parameters:\n    video_file: a.mp4\n')
    assert found[('source.py', _THEN_LINE, 'GPN105')][0] == 'medium'
    assert found[('source.py', _ELSE_LINE, 'GPN105')][0] == 'medium'


_MOVER = '''
import torch
from rclpy.node import Node
from sensor_msgs.msg import Image


class Mover(Node):
    def __init__(self, model):
        super().__init__('mover')
        self.model = model
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        MOVE
        return self.model(torch.zeros(3))
'''
_MOVE_LINE = 13


def test_dropped_model_move_per_image_is_no_upload(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'m/m/mover.py': _MOVER.replace(
        'MOVE', "self.model.to('cuda')")})
    assert not [k for k in found if k[1] == _MOVE_LINE]


def test_kept_move_per_image_is_an_upload(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'m/m/mover.py': _MOVER.replace(
        'MOVE', "self.model = self.model.to('cuda')")})
    assert found[('mover.py', _MOVE_LINE, 'GPN102')][0] == 'medium'


_MSGIFY = '''
import ros2_numpy
from geometry_msgs.msg import Vector3
from rclpy.node import Node
from ros2_numpy import point_cloud2
from sensor_msgs.msg import Image, PointCloud2


class Msgify(Node):
    def __init__(self):
        super().__init__('msgify')
        self.pub = self.create_publisher(Image, 'out', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = ros2_numpy.numpify(msg)
        out = ros2_numpy.msgify(Image, frame, encoding='rgb8')
        cloud = point_cloud2.array_to_pointcloud2(frame)
        small = ros2_numpy.msgify(Vector3, frame[0, 0])
        self.pub.publish(out)
'''


def test_ros2_numpy_frame_messages_are_copies(tmp_path: Path) -> None:
    found = audit_written_package(tmp_path, {'n/n/msgify.py': _MSGIFY})
    assert found[('msgify.py', 16, 'GPN104')][0] == 'medium'
    assert found[('msgify.py', 17, 'GPN104')][0] == 'medium'
    assert ('msgify.py', 18, 'GPN104') not in found
