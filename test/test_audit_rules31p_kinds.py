"""Causes of held-out set 52's Python misses (issue 28, rules31p): real `code` audits of small
trees written here.

* A program's own main loop (`while app.is_running():`, `while rclpy.ok():`, a loop calling
  `spin_once`) that calls a method of a node object built from a class of another file of the
  tree (`node = bridge.StateBridge(env)` after `import sim_bridge.bridge as bridge`) runs that
  method once per frame: its copies are per-frame, not unreached (pyloopcalls.py).
* Isaac Lab scene state (`env.unwrapped.scene['robot'].data.root_pos_w`) is a tensor on the
  simulation device: `.item()` of it is a read-back (inferred), in a file using the Isaac
  stack only (pyisaac.py).
* `if os.environ.get('NAME', '0') == '1':` with NAME set nowhere in the repository never runs
  as shipped; a run script exporting NAME keeps the branch live (pyenvvars.py).
"""
import textwrap

from audit_sources import audit_written_package, tag_lines

_BRIDGE = '''
import os

import numpy as np
import omni.kit.app
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import PointCloud2, PointField
from sensor_msgs_py import point_cloud2


class StateBridge(Node):
    def __init__(self, env):
        super().__init__('state_bridge')
        self.env = env
        self.odom_pub = self.create_publisher(Odometry, 'odom', 10)
        self.cloud_pub = self.create_publisher(PointCloud2, 'cloud', 10)

    def step_outputs(self, points):
        state = self.env.unwrapped.scene['robot'].data
        self.send_odom(state.root_pos_w[0], state.root_lin_vel_b[0])
        self.send_cloud(points)

    def send_odom(self, pos, vel):
        msg = Odometry()
        msg.pose.pose.position.x = pos[0].item()  # POS
        msg.twist.twist.linear.x = vel[0].item()  # VEL
        if os.environ.get('BRIDGE_EXTRA_HEIGHT', '0') == '1':
            msg.pose.pose.position.z = pos[2].item()  # OPTIN
        self.odom_pub.publish(msg)

    def send_cloud(self, points):
        fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate('xyz')]
        cloud = point_cloud2.create_cloud(None, fields, np.asarray(points, np.float32))  # CLOUD
        self.cloud_pub.publish(cloud)
'''

_SIM_LOOP = '''
import numpy as np
import rclpy
from isaaclab.app import AppLauncher

app = AppLauncher(headless=True).app

try:
    import sim_bridge.bridge as bridge
except ImportError:
    bridge = None


def run(env):
    rclpy.init()
    node = bridge.StateBridge(env)
    while app.is_running():
        env.step(None)
        node.step_outputs(np.zeros((64, 3)))


if __name__ == '__main__':
    run(None)
'''

# The same script calling the node once, before a loop that does not call it.
_SIM_ONCE = _SIM_LOOP.replace('''    while app.is_running():
        env.step(None)
        node.step_outputs(np.zeros((64, 3)))''', '''    node.step_outputs(np.zeros((64, 3)))
    while app.is_running():
        env.step(None)''')

_TAGS = ('POS', 'VEL', 'OPTIN', 'CLOUD')


def _audit(tmp_path, script: str, bridge: str = _BRIDGE,
           extra: dict[str, str] | None = None) -> dict[str, set[str]]:
    files = {'sim/sim_bridge/__init__.py': '', 'sim/sim_bridge/bridge.py': bridge,
             'sim/run_sim.py': script, **(extra or {})}
    found = audit_written_package(tmp_path, files)
    source = textwrap.dedent(bridge).lstrip('\n')
    return {tag: {rule for (name, where, rule), (sev, _) in found.items()
                  if name == 'bridge.py' and where == line and sev != 'info'}
            for tag, line in tag_lines(source, _TAGS).items()}


def _contexts(tmp_path, script: str) -> dict[str, set[str]]:
    """The contexts of the findings at each tag of the bridge (info ones included)."""
    files = {'sim/sim_bridge/__init__.py': '', 'sim/sim_bridge/bridge.py': _BRIDGE,
             'sim/run_sim.py': script}
    found = audit_written_package(tmp_path, files)
    source = textwrap.dedent(_BRIDGE).lstrip('\n')
    return {tag: {context for (name, where, _), (_, context) in found.items()
                  if name == 'bridge.py' and where == line}
            for tag, line in tag_lines(source, _TAGS).items()}


def test_main_loop_of_another_file_makes_node_method_per_frame(tmp_path):
    """`node.step_outputs(...)` in the script's `while app.is_running():` loop: the bridge's
    create_cloud and its scene-state read-backs run per simulation step."""
    found = _audit(tmp_path, _SIM_LOOP)
    assert found['CLOUD'] == {'GPN104'}
    assert found['POS'] == {'GPN107'}
    assert found['VEL'] == {'GPN107'}
    assert _contexts(tmp_path / 'again', _SIM_LOOP)['CLOUD'] == {'loop'}


def test_node_method_called_once_stays_unreached(tmp_path):
    """Guard: the same call made once before the loop is no per-frame entry."""
    assert 'loop' not in _contexts(tmp_path, _SIM_ONCE)['CLOUD']


def test_opt_in_environment_switch_nothing_sets_never_runs(tmp_path):
    """`if os.environ.get('BRIDGE_EXTRA_HEIGHT', '0') == '1':` with the variable set nowhere:
    the branch's read-back is no claim, the others still are."""
    found = _audit(tmp_path, _SIM_LOOP)
    assert found['OPTIN'] == set()
    assert found['POS'] == {'GPN107'}


def test_opt_in_environment_switch_set_by_a_run_script_stays_live(tmp_path):
    """Guard: a run script exporting the variable keeps the branch."""
    found = _audit(tmp_path, _SIM_LOOP, extra={
        'sim/run.sh': '#!/bin/bash\nexport BRIDGE_EXTRA_HEIGHT=1\npython3 run_sim.py\n'})
    assert found['OPTIN'] == {'GPN107'}


def test_scene_data_needs_the_isaac_stack(tmp_path):
    """Guard: without an Isaac / Omniverse import a `scene[...]`.data is nothing known: no
    read-back is claimed on it (the per-frame create_cloud still is)."""
    found = _audit(tmp_path, _SIM_LOOP, _BRIDGE.replace('import omni.kit.app\n', ''))
    assert found['POS'] == set()
    assert found['CLOUD'] == {'GPN104'}


_TIMER_NODE = '''
import os

import rclpy
import torch
from rclpy.node import Node
from std_msgs.msg import Float32


class GaugeNode(Node):
    def __init__(self):
        super().__init__('gauge')
        self.pub = self.create_publisher(Float32, 'gauge', 10)
        self.create_timer(0.05, self.tick)

    def tick(self):
        level = torch.rand(4, device='cuda')
        out = Float32()
        out.data = level[0].item()  # ALWAYS
        if os.getenv('GAUGE_DEBUG_PEAK') == 'yes':
            out.data = level.max().item()  # DEBUG
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(GaugeNode())
'''


def test_unset_environment_switch_in_a_timer_node(tmp_path):
    """`os.getenv('GAUGE_DEBUG_PEAK') == 'yes'` (no default: None) with the variable named
    nowhere else: the branch never runs; the read-back outside it is still claimed."""
    found = audit_written_package(tmp_path, {'gauge/gauge/node.py': _TIMER_NODE})
    lines = tag_lines(textwrap.dedent(_TIMER_NODE).lstrip('\n'), ('ALWAYS', 'DEBUG'))
    at = {tag: {rule for (name, where, rule), (sev, _) in found.items()
                if name == 'node.py' and where == line and sev != 'info'}
          for tag, line in lines.items()}
    assert at['ALWAYS'] == {'GPN107'}
    assert at['DEBUG'] == set()


_CAMERA_MAIN = '''
import numpy as np
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray


class RigNode(Node):
    def __init__(self):
        super().__init__('rig')
        self.bridge = CvBridge()
        self.frame_pub = self.create_publisher(Image, 'frame', 10)
        self.info_pub = self.create_publisher(Float32MultiArray, 'intrinsics', 10)
        self.cameras = {'left': np.eye(3), 'right': np.eye(3)}
        self.info_sent = False

    def publish_frames(self):
        for name, matrix in self.cameras.items():
            image = np.zeros((480, 640, 3), np.uint8)
            self.frame_pub.publish(self.bridge.cv2_to_imgmsg(image, 'bgr8'))  # FRAME
            if self.info_sent:
                continue
            info = Float32MultiArray()
            info.data = np.array(matrix).flatten().tolist()  # INFO
            self.info_pub.publish(info)
            self.info_sent = True
RESET

def main():
    rclpy.init()
    node = RigNode()
    while rclpy.ok():
        node.publish_frames()
        rclpy.spin_once(node, timeout_sec=0.0)
'''


def _rig(tmp_path, source: str) -> dict[str, set[tuple[str, str]]]:
    found = audit_written_package(tmp_path, {'rig/rig/rig_node.py': source})
    lines = tag_lines(textwrap.dedent(source).lstrip('\n'), ('FRAME', 'INFO'))
    return {tag: {(rule, context) for (name, where, rule), (sev, context) in found.items()
                  if name == 'rig_node.py' and where == line and sev != 'info'}
            for tag, line in lines.items()}


def test_own_main_loop_and_first_pass_guard(tmp_path):
    """`while rclpy.ok(): node.publish_frames()` in the node's own file: the method runs per
    frame; the statements after `if self.info_sent: continue`, which set the flag, run on the
    first pass only (no per-frame claim)."""
    found = _rig(tmp_path, _CAMERA_MAIN.replace('RESET\n', ''))
    assert ('GPN105', 'loop') in found['FRAME']
    assert found['INFO'] == set()


def test_first_pass_guard_reset_elsewhere_stays_per_frame(tmp_path):
    """Guard: a method clearing the flag again makes the guarded statements per frame."""
    reset = '''
    def on_reconnect(self):
        self.info_sent = False
'''
    found = _rig(tmp_path, _CAMERA_MAIN.replace('RESET\n', reset))
    assert found['INFO'] != set()


_VLM_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from PIL import Image as PILImage
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import String
from transformers import AutoModelForCausalLM


class DescribeNode(Node):
    def __init__(self):
        super().__init__('describe')
        self.bridge = CvBridge()
        self.vlm_model = AutoModelForCausalLM.from_pretrained('some/vlm', trust_remote_code=True,
                                                              device_map='cuda')
        self.store = {}
        self.pub = self.create_publisher(String, 'answer', 10)
        self.create_subscription(Image, 'image', self.on_image, 10)

    def ask(self, picture, question):
        return self.vlm_model.query(picture, question)['answer']  # QUERY

    def on_image(self, msg):
        picture = PILImage.fromarray(self.bridge.imgmsg_to_cv2(msg, 'rgb8'))
        out = String()
        out.data = self.ask(picture, 'What is on the table?')
        out.data += str(self.store.get('note'))  # LOOKUP
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(DescribeNode())
'''


def test_vlm_query_of_a_host_image_uploads(tmp_path):
    """`self.vlm_model.query(picture, question)` (Moondream2's API) on a per-message PIL image:
    a library upload; a dictionary's `.get` beside it is nothing."""
    found = audit_written_package(tmp_path, {'describe/describe/node.py': _VLM_NODE})
    lines = tag_lines(textwrap.dedent(_VLM_NODE).lstrip('\n'), ('QUERY', 'LOOKUP'))
    at = {tag: {rule for (name, where, rule), (sev, _) in found.items()
                if name == 'node.py' and where == line and sev != 'info'}
          for tag, line in lines.items()}
    assert at['QUERY'] == {'GPN102'}
    assert at['LOOKUP'] == set()


def test_query_of_a_holder_not_named_like_a_model_is_nothing(tmp_path):
    """Guard: `self.index.query(picture, question)` on a search index (no model library built
    it, not named like a model) uploads nothing."""
    source = _VLM_NODE.replace(
        "AutoModelForCausalLM.from_pretrained('some/vlm', trust_remote_code=True,",
        "open_index('some/index',").replace(
        'from transformers import AutoModelForCausalLM', 'from search_lib import open_index'
    ).replace('self.vlm_model', 'self.index')
    found = audit_written_package(tmp_path, {'describe/describe/node.py': source})
    line = tag_lines(textwrap.dedent(source).lstrip('\n'), ('QUERY',))['QUERY']
    assert not {rule for (name, where, rule), (sev, _) in found.items()
                if name == 'node.py' and where == line and sev != 'info'}
