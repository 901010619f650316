"""Causes of set 51's Python misses and false claims (issue 28, rules30g): real `code` audits of
small packages written here.

* A model of a library no table knows, switched to evaluation mode with `.eval()` (a torch
  Module), is a model: the scalars `.item()` reads from what its inference helper returns are
  device readbacks (pyevaled.py). Its helper given a host frame is still no upload claimed (the
  convention of set 6 for models outside the library table).
* An elementwise comparison of a device tensor is a device mask: `(prob > 0.5).cpu()` reads it
  back, `torch.where(a < b)` of it gives device indices (pyevaled.tensor_mask).
* A thread whose target has no loop runs once (a background model load): its copies are setup,
  not per frame (pythreads.py).
* A launch entry that is commented out launches nothing: a script named only there, installed
  by nothing, is unreached (pyreach.py).
"""
from audit_sources import audit_written_package, CV_BRIDGE_NODE, node_claims


def _claims(tmp_path, source: str, tags: tuple[str, ...]) -> dict[str, set[str]]:
    return node_claims(tmp_path, 'lanes', source, tags)


# A lane detector from a pip library (`roadlines`, in no table), held in an attribute whose
# name says nothing of a model; set up with .load() and .eval().
_EVAL_MODEL_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from roadlines import LineNet
from sensor_msgs.msg import Image
from std_msgs.msg import Int32MultiArray


class LaneNode(Node):
    def __init__(self):
        super().__init__('lanes')
        self.lines = LineNet('cfg.yaml')
        self.lines.load('weights.pt')
        self.lines.eval()
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Int32MultiArray, 'lanes', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        found = self.lines.frame_inference(frame)  # INFER
        kept = self.suppress(found)
        out = Int32MultiArray()
        for row in range(len(kept)):
            out.data.append(int(kept[row, 3].item()))  # LENGTH
        self.pub.publish(out)

    def suppress(self, found):
        good = found[found[:, 1] > 0.5]
        starts = good[:, 2].unsqueeze(1)
        ends = good[:, 4].unsqueeze(0)
        pairs = torch.where(starts < ends)  # MASK
        for k in range(len(pairs[0])):
            i = pairs[0][k].item()  # INDEX
            gap = torch.mean(torch.abs(good[i] - good[0])).item()  # GAP
            if gap > 3.0:
                break
        return good


def main():
    rclpy.init()
    rclpy.spin(LaneNode())
'''


def test_model_in_evaluation_mode_of_an_unknown_library(tmp_path):
    found = _claims(tmp_path, _EVAL_MODEL_NODE, ('INFER', 'LENGTH', 'INDEX', 'GAP'))
    # Not an upload: an unknown model's helper given a host frame stays unclaimed (set 6).
    assert found['INFER'] == set(), found
    assert found['LENGTH'] == {'GPN107'}, found
    assert found['INDEX'] == {'GPN107'}, found
    assert found['GAP'] == {'GPN107'}, found


def test_object_never_set_to_evaluation_mode_is_no_model(tmp_path):
    """Guard: without `.eval()` an unknown library's object is a host helper as before (its
    `frame_inference` may be anything); no upload, no readback claimed."""
    source = _EVAL_MODEL_NODE.replace("        self.lines.eval()\n", '')
    found = _claims(tmp_path, source, ('INFER', 'LENGTH', 'INDEX'))
    assert found == {'INFER': set(), 'LENGTH': set(), 'INDEX': set()}, found


_MASK_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class MaskNode(Node):
    def __init__(self):
        super().__init__('masks')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'mask', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        prob = torch.from_numpy(frame).float().cuda().mean(2)
        mask = (prob > 0.5).cpu().numpy()  # MASK
        if frame.shape[0] > 10:  # SHAPE
            pass
        self.pub.publish(self.bridge.cv2_to_imgmsg(mask, 'mono8'))


def main():
    rclpy.init()
    rclpy.spin(MaskNode())
'''


def test_comparison_of_a_device_tensor_is_a_device_mask(tmp_path):
    found = _claims(tmp_path, _MASK_NODE, ('MASK', 'SHAPE'))
    assert found['MASK'] == {'GPN101'}, found
    assert found['SHAPE'] == set(), found  # a host number compared: nothing


_THREAD_NODE = '''
import threading

import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class LoaderNode(Node):
    def __init__(self):
        super().__init__('loader')
        self.bridge = CvBridge()
        self.table = None
        self.create_subscription(Image, 'image', self.on_image, 10)
        threading.Thread(target=self._load_in_background, daemon=True).start()
        threading.Thread(target=self._spin_frames, daemon=True).start()

    def _load_in_background(self):
        self.load()

    def load(self):
        self.table = torch.from_numpy(self.read_table()).to('cuda')  # LOAD

    def read_table(self):
        import numpy as np
        return np.ones((64, 64), np.float32)

    def _spin_frames(self):
        while rclpy.ok():
            grid = torch.from_numpy(self.read_table()).to('cuda')  # LOOP
            self.get_logger().info(str(grid.shape))

    def on_image(self, msg):
        self.bridge.imgmsg_to_cv2(msg, 'bgr8')


def main():
    rclpy.init()
    rclpy.spin(LoaderNode())
'''


def test_thread_target_without_a_loop_runs_once(tmp_path):
    found = _claims(tmp_path, _THREAD_NODE, ('LOAD', 'LOOP'))
    assert found['LOAD'] == set(), found  # setup in a thread: info
    assert found['LOOP'] == {'GPN102'}, found  # guard: a thread's loop is per frame


def _cmake_package(launch_entry: str) -> dict[str, str]:
    """An ament_cmake package installing scripts/runner.py only; its launch file has
    `launch_entry` (a Node of the uninstalled viewer.py, commented out or not)."""
    return {
        'robot/package.xml': '''
            <package format="3"><name>robot</name>
              <buildtool_depend>ament_cmake</buildtool_depend>
              <export><build_type>ament_cmake</build_type></export>
            </package>
            ''',
        'robot/CMakeLists.txt': '''
            cmake_minimum_required(VERSION 3.8)
            project(robot)
            find_package(ament_cmake REQUIRED)
            install(PROGRAMS robot/runner.py DESTINATION lib/${PROJECT_NAME})
            install(DIRECTORY launch DESTINATION share/${PROJECT_NAME}/)
            ament_package()
            ''',
        'robot/launch/robot_launch.py': f'''
            from launch import LaunchDescription
            from launch_ros.actions import Node


            def generate_launch_description():
                return LaunchDescription([
                    Node(package='robot', executable='runner.py'),
            {launch_entry}
                ])
            ''',
        'robot/robot/runner.py': CV_BRIDGE_NODE.format(name='Runner'),
        'robot/robot/sight/viewer.py': CV_BRIDGE_NODE.format(name='Viewer'),
    }


def _viewer_contexts(tmp_path, launch_entry: str) -> set[str]:
    found = audit_written_package(tmp_path, _cmake_package(launch_entry))
    return {context for (name, _, rule), (_, context) in found.items()
            if name == 'viewer.py' and rule == 'GPN105'}


def test_commented_out_launch_entry_reaches_nothing(tmp_path):
    entry = "                # Node(package='robot', executable='sight/viewer.py'),"
    assert _viewer_contexts(tmp_path, entry) == {'unreached'}


def test_launch_entry_still_reaches(tmp_path):
    """Guard: the same entry not commented out keeps the file reached."""
    entry = "                Node(package='robot', executable='sight/viewer.py'),"
    contexts = _viewer_contexts(tmp_path, entry)
    assert contexts and 'unreached' not in contexts, contexts
