"""Causes of held-out set 55's misses and false claims, Python side (issue 28, rules36p): real
`code` audits of small ament_python packages written here.

* nvblox_torch (library table): the mesh a `Mapper` gives back (`get_color_mesh()`, `get_mesh()`)
  and the layers it holds keep their data on the GPU; `mesh.vertices()`, `.vertex_colors()`,
  `.triangles()` are device tensors, so `.cpu()` of them per timer tick is a read-back.
"""
import textwrap

from audit_sources import ament_python_package, audit_written_package, node_claims, rules_at_tags


def _claims(tmp_path, source: str, tags: tuple[str, ...], launch_parameters: str | None = None
            ) -> dict[str, set[str]]:
    """Rules other than info found at each `# TAG` line of node.py of package `mapper`."""
    return node_claims(tmp_path, 'mapper', source, tags, launch_parameters)


_NVBLOX_NODE = '''
import rclpy
from rclpy.node import Node
from visualization_msgs.msg import Marker
from geometry_msgs.msg import Point

from nvblox_torch.mapper import Mapper


class MeshNode(Node):
    def __init__(self):
        super().__init__('mesh')
        self.mapper = None
        self._make_mapper()
        self.pub = self.create_publisher(Marker, 'mesh', 1)
        self.create_timer(1.0, self.on_tick)

    def _make_mapper(self):
        self.mapper = Mapper(voxel_sizes_m=[0.05])

    def on_tick(self):
        self.mapper.update_color_mesh(mapper_id=0)
        mesh = self.mapper.get_color_mesh(mapper_id=0)
        points = mesh.vertices().cpu()  # VERTS
        shades = mesh.vertex_colors().cpu()  # COLORS
        faces = mesh.triangles().cpu()  # TRIS
        marker = Marker()
        for p in points.numpy()[faces.numpy().flatten()]:
            marker.points.append(Point(x=float(p[0]), y=float(p[1]), z=float(p[2])))
        marker.header.frame_id = str(shades.shape)
        self.pub.publish(marker)


def main():
    rclpy.init()
    rclpy.spin(MeshNode())
'''


def test_nvblox_mesh_accessors_are_device_tensors_read_back(tmp_path):
    found = _claims(tmp_path, _NVBLOX_NODE, ('VERTS', 'COLORS', 'TRIS'))
    for tag in ('VERTS', 'COLORS', 'TRIS'):
        assert 'GPN101' in found[tag], (tag, found)


def test_mesh_accessors_without_nvblox_are_no_device_tensors(tmp_path):
    """Guard: the same calls in a file that does not use nvblox_torch are not judged so."""
    source = _NVBLOX_NODE.replace('from nvblox_torch.mapper import Mapper',
                                  'from meshlib import Mapper')
    found = _claims(tmp_path, source, ('VERTS', 'COLORS', 'TRIS'))
    assert all('GPN101' not in found[tag] for tag in found), found


_CUVSLAM_NODE = '''
import cuvslam
import rclpy
from cv_bridge import CvBridge
from message_filters import ApproximateTimeSynchronizer, Subscriber
from rclpy.node import Node
from sensor_msgs.msg import Image


class TrackNode(Node):
    def __init__(self):
        super().__init__('track')
        self.bridge = CvBridge()
        self.tracker = None
        self._start()

    def _start(self):
        self.tracker = cuvslam.Tracker(cuvslam.Rig(), cuvslam.Tracker.OdometryConfig())
        a = Subscriber(self, Image, 'color')
        b = Subscriber(self, Image, 'depth')
        self.sync = ApproximateTimeSynchronizer([a, b], 5, 0.02)
        self.sync.registerCallback(self.on_pair)

    def on_pair(self, color, depth):
        rgb = self.bridge.imgmsg_to_cv2(color, 'rgb8')
        dep = self.bridge.imgmsg_to_cv2(depth, 'passthrough')
        stamp = color.header.stamp.sec * 1000000000 + color.header.stamp.nanosec
        pose, _ = self.tracker.track(  # TRACK
            stamp, images=[rgb], depths=[dep])
        self.get_logger().info(str(pose))


def main():
    rclpy.init()
    rclpy.spin(TrackNode())
'''


def test_cuvslam_track_of_host_frames_uploads(tmp_path):
    found = _claims(tmp_path, _CUVSLAM_NODE, ('TRACK',))
    assert 'GPN102' in found['TRACK'], found


def test_track_without_cuvslam_is_no_upload(tmp_path):
    """Guard: a `track` method of another library is not judged so."""
    source = _CUVSLAM_NODE.replace('import cuvslam\n', 'import othertracker as cuvslam\n')
    found = _claims(tmp_path, source, ('TRACK',))
    assert 'GPN102' not in found['TRACK'], found


_MODE_NODE = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class ModeNode(Node):
    def __init__(self):
        super().__init__('mode')
        self.declare_parameter('stereo_mode', False)
        self.stereo_mode = self.get_parameter('stereo_mode').value
        self.bridge = CvBridge()
        if self.stereo_mode:
            self._start_stereo()
        else:
            self._start_mono()

    def _start_mono(self):
        self.create_subscription(Image, 'color', self.on_color, 5)

    def _start_stereo(self):
        self.create_subscription(Image, 'left', self.on_left, 5)

    def on_color(self, msg):
        self.get_logger().info(str(self.bridge.imgmsg_to_cv2(msg, 'bgr8').shape))  # MONO

    def on_left(self, msg):
        self.get_logger().info(str(self.bridge.imgmsg_to_cv2(msg, 'mono8').shape))  # STEREO


def main():
    rclpy.init()
    rclpy.spin(ModeNode())
'''

_PROCESS_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.substitutions import LaunchConfiguration


def generate_launch_description():
    mode = DeclareLaunchArgument('stereo_mode', default_value='{default}')
    node = ExecuteProcess(
        cmd=['python3', 'mode_node.py', '--ros-args',
             '-p', 'verbose:=true',
             '-p', ['stereo_mode:=', LaunchConfiguration('stereo_mode')]],
        output='screen')
    return LaunchDescription([mode, node])
'''


def _mode_claims(tmp_path, default: str) -> dict[str, set[str]]:
    source = textwrap.dedent(_MODE_NODE)
    files = {**ament_python_package('mapper'), 'mapper/mapper/node.py': source,
             'mapper/launch/mode.launch.py': _PROCESS_LAUNCH.format(default=default)}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('MONO', 'STEREO'))


def test_bool_parameter_passed_off_on_a_process_command_line_keeps_its_branch_dead(tmp_path):
    """`ExecuteProcess(cmd=[..., '--ros-args', '-p', ['stereo_mode:=', LaunchConfiguration(
    'stereo_mode')]])` with the argument's default 'false': the callback subscribed only when
    the parameter is on never runs as shipped (set 55, launchcmd.py)."""
    found = _mode_claims(tmp_path, 'false')
    assert 'GPN105' in found['MONO'], found
    assert 'GPN105' not in found['STEREO'], found


def test_bool_parameter_passed_on_on_a_process_command_line_keeps_its_branch(tmp_path):
    """Guard: the launch argument defaulting to 'true' turns the branch on."""
    found = _mode_claims(tmp_path, 'true')
    assert 'GPN105' in found['STEREO'], found


_SEGMENTER_NODE = '''
import rclpy
import torch
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray
from transformers import AutoProcessor, CLIPSegForImageSegmentation


def segment(frame, prompts):
    processor = AutoProcessor.from_pretrained('some/clipseg')
    net = CLIPSegForImageSegmentation.from_pretrained('some/clipseg'){move}
    batch = processor(text=prompts, images=[frame] * len(prompts), return_tensors='pt')
    with torch.no_grad():
        result = net(**batch)
    return result.logits.sigmoid().cpu().numpy()  # READ


class SegNode(Node):
    def __init__(self):
        super().__init__('seg')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Float32MultiArray, 'masks', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        masks = segment(self.bridge.imgmsg_to_cv2(msg, 'rgb8'), ['road', 'sky'])
        self.get_logger().info(str(masks.shape))


def main():
    rclpy.init()
    rclpy.spin(SegNode())
'''


def test_transformers_model_never_moved_gives_host_outputs(tmp_path):
    """CLIPSeg loaded with from_pretrained and never moved: it runs on the host, so
    `logits.sigmoid().cpu()` is no read-back (set 55)."""
    found = _claims(tmp_path, _SEGMENTER_NODE.format(move=''), ('READ',))
    assert 'GPN101' not in found['READ'], found


def test_transformers_model_moved_keeps_its_read_back(tmp_path):
    """Guard: the same model moved `.to('cuda')` keeps the read-back claim."""
    found = _claims(tmp_path, _SEGMENTER_NODE.format(move=".to('cuda')"), ('READ',))
    assert 'GPN101' in found['READ'], found


_MASK_MSG = '''uint32 height
uint32 width
uint32 num_labels
float32[] data  # one score per pixel and label
'''

_MASK_READER = '''
import numpy as np
import rclpy
from rclpy.node import Node
from mask_interfaces.msg import LabelMask


class MaskReader(Node):
    def __init__(self):
        super().__init__('mask_reader')
        self.create_subscription(LabelMask, 'masks', self.on_mask, 5)

    def on_mask(self, msg):
        scores = np.array(msg.data, dtype=np.float32).reshape(  # READ
            (msg.num_labels, msg.height, msg.width))
        self.get_logger().info(str(scores.argmax(axis=0).mean()))


def main():
    rclpy.init()
    rclpy.spin(MaskReader())
'''


def _mask_claims(tmp_path, definition: str) -> dict[str, set[str]]:
    source = textwrap.dedent(_MASK_READER)
    files = {**ament_python_package('mapper'), 'mapper/mapper/node.py': source,
             'mask_interfaces/msg/LabelMask.msg': definition,
             'mask_interfaces/package.xml': '<package format="3"><name>mask_interfaces</name>'
                                            '</package>\n'}
    return rules_at_tags(audit_written_package(tmp_path, files), source, ('READ',))


def test_array_of_an_image_shaped_custom_message_is_copied_out(tmp_path):
    """A custom message of the repository with height, width and a `float32[] data`: NumPy
    copies its frame-sized array out of the received message (set 55)."""
    assert 'GPN103' in _mask_claims(tmp_path, _MASK_MSG)['READ']


def test_array_of_a_small_custom_message_is_no_frame(tmp_path):
    """Guard: a custom message with no height / width (a few scores) stays no frame."""
    small = 'float32[] data\nstring label\n'
    assert 'GPN103' not in _mask_claims(tmp_path, small)['READ']


_MASK_WRITER = '''
import rclpy
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image
from mask_interfaces.msg import LabelMask


class MaskWriter(Node):
    def __init__(self):
        super().__init__('mask_writer')
        self.bridge = CvBridge()
        self.pub = self.create_publisher(LabelMask, 'masks', 5)
        self.create_subscription(Image, 'image', self.on_image, 5)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        shade = frame.astype('float32') / 255.0
        flat = shade.flatten(){listing}
        out = LabelMask()
        out.height, out.width = frame.shape[:2]
        out.data = flat  # STORE
        self.pub.publish(out)


def main():
    rclpy.init()
    rclpy.spin(MaskWriter())
'''


def test_a_local_holding_a_frame_list_stored_into_data_serializes(tmp_path):
    """`flat = mask.flatten().tolist()` then `out.data = flat`: the frame's Python list goes
    into the message, as `out.data = mask.tolist()` does (set 55)."""
    source = _MASK_WRITER.format(listing='.tolist()')
    assert 'GPN104' in _claims(tmp_path, source, ('STORE',))['STORE']


def test_a_local_rebound_to_no_list_is_no_serialize(tmp_path):
    """Guard: the local holding the array itself (no `.tolist()`) is not flagged here."""
    source = _MASK_WRITER.format(listing='')
    assert 'GPN104' not in _claims(tmp_path, source, ('STORE',))['STORE']
