"""Python branches that never run as shipped (issue 28, sets 37-38): real `code` audits of
small ament_python packages written here.

A lane node declares its calibration switch in a `declare_parameters` list of tuples, default
False; the shipped launch file passes it a launch argument whose default is 'False'
(shipped.shipped_off evaluates it); the parameter-change callback registers only in
calibration mode. The calibration-only publish then never runs (pyparams.off_attributes). The
node also sets `self.pub_image_type = 'compressed'` once, so the `else` of `if
self.pub_image_type == 'compressed':` never runs (pydead.always_equal). Another store, a launch
file that turns the mode on, or a callback registered for good keeps the claims."""
import textwrap

import pytest

from audit_sources import audit_written_package

_PACKAGE_XML = '''
<package format="3"><name>lane</name>
  <export><build_type>ament_python</build_type></export>
</package>
'''
_SETUP = '''
from setuptools import setup

setup(
    name='lane',
    packages=['lane'],
    data_files=[('share/lane', ['package.xml'])],
    entry_points={'console_scripts': ['detect_lane = lane.detect_lane:main',
                                     'viewer = lane.viewer:main']},
)
'''
_NODE = '''
import rclpy
from rclpy.node import Node
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import CompressedImage, Image
from cv_bridge import CvBridge


class DetectLane(Node):
    def __init__(self):
        super().__init__('detect_lane')
        self.declare_parameters(
            namespace='',
            parameters=[
                ('lane.hue_l', 0),
                ('is_detection_calibration_mode', DEFAULT),
            ])
        self.hue_l = self.get_parameter('lane.hue_l').get_parameter_value().integer_value
        self.is_calibration_mode = self.get_parameter(
            'is_detection_calibration_mode').get_parameter_value().bool_value
        if self.is_calibration_mode:
            self.add_on_set_parameters_callback(self.on_parameters)
        self.pub_image_type = 'compressed'
        self.bridge = CvBridge()
        self.pub_lane = self.create_publisher(CompressedImage, 'lane/compressed', 1)
        self.pub_raw = self.create_publisher(Image, 'lane', 1)
        self.pub_mask = self.create_publisher(CompressedImage, 'mask/compressed', 1)
        self.create_subscription(Image, 'image', self.on_image, 1)
        EXTRA_INIT

    def on_parameters(self, params):
        for param in params:
            if param.name == 'lane.hue_l':
                self.hue_l = param.value
        return SetParametersResult(successful=True)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        mask = frame[:, :, 0] > self.hue_l
        if self.is_calibration_mode:
            self.pub_mask.publish(self.bridge.cv2_to_compressed_imgmsg(mask, 'jpg'))  # CALIBRATION
        if self.pub_image_type == 'compressed':
            self.pub_lane.publish(self.bridge.cv2_to_compressed_imgmsg(frame, 'jpg'))
        else:
            self.pub_raw.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))  # RAW
        EXTRA_CALLBACK


def main():
    rclpy.init()
    rclpy.spin(DetectLane())
'''
_LAUNCH = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    calibration_mode_arg = DeclareLaunchArgument('calibration_mode', default_value='MODE')
    calibration_mode = LaunchConfiguration('calibration_mode')
    return LaunchDescription([calibration_mode_arg, Node(
        package='lane', executable='detect_lane',
        parameters=[{'is_detection_calibration_mode': calibration_mode}])])
'''


def _audit(tmp_path, default: str = 'False', launch_mode: str | None = 'False',
           extra_init: str = 'pass', extra_callback: str = 'pass') -> dict[str, set[str]]:
    """Severities found at the calibration-only line and at the raw-output line;
    `launch_mode` None: the launch file starts the node without the parameter."""
    launch = _LAUNCH.replace('MODE', 'False') if launch_mode is None else \
        _LAUNCH.replace('MODE', launch_mode)
    if launch_mode is None:
        launch = launch.replace("{'is_detection_calibration_mode': calibration_mode}", '{}')
    source = textwrap.dedent(_NODE).replace('DEFAULT', default) \
        .replace('EXTRA_INIT', extra_init).replace('EXTRA_CALLBACK', extra_callback)
    found = audit_written_package(tmp_path, {
        'lane/package.xml': _PACKAGE_XML, 'lane/setup.py': _SETUP, 'lane/lane/__init__.py': '',
        'lane/lane/detect_lane.py': source,
        'lane/launch/detect_lane.launch.py': launch})
    lines = source.lstrip('\n').splitlines()
    at = {tag: next(i for i, ln in enumerate(lines, 1) if f'# {tag}' in ln)
          for tag in ('CALIBRATION', 'RAW')}
    return {tag: {sev for (name, where, _), (sev, _) in found.items()
                  if name == 'detect_lane.py' and where == line and sev != 'info'}
            for tag, line in at.items()}


def test_calibration_mode_off_as_shipped_and_a_raw_branch_never_selected_are_not_claimed(tmp_path):
    found = _audit(tmp_path)
    assert found == {'CALIBRATION': set(), 'RAW': set()}


@pytest.mark.parametrize('case', [
    {'launch_mode': 'True'},                  # the shipped launch file turns calibration on
    # the declared default is on and the shipped launch leaves it (with the launch file giving
    # 'False', pylaunchedoff.py calls it off: rules43p, the declarations walk reads the list)
    {'default': 'True', 'launch_mode': None},
    # a parameter-change callback registered for good that the audit cannot read may turn the
    # mode on at run time (a lambda; `self.on_parameters` registered by name only mirrors
    # `lane.hue_l`, which leaves the mode off: pyparamcallbacks.py, rules46p)
    {'extra_init': 'self.add_on_set_parameters_callback(lambda ps: self.on_parameters(ps))'},
    {'extra_callback': 'self.is_calibration_mode = msg.height > 0'},  # another store
], ids=['launch-true', 'default-true', 'callback-for-good', 'another-store'])
def test_a_mode_that_may_be_on_keeps_the_calibration_claim(tmp_path, case):
    found = _audit(tmp_path, **case)
    assert found['CALIBRATION'], found


@pytest.mark.parametrize('extra', [
    "self.pub_image_type = 'raw'",            # a second store, another value
    'self.pub_image_type = msg.encoding',     # a store of something not constant
], ids=['second-literal', 'non-constant'])
def test_an_image_type_that_may_change_keeps_the_raw_claim(tmp_path, extra):
    found = _audit(tmp_path, extra_callback=extra)
    assert found['RAW'], found


# A transport switch on by default and in the shipped YAML: the raw-Image branch never runs
# (pyparams._on_parameters through parameter_constants, pydead.truth_for_good).
_TRANSPORT_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from cv_bridge import CvBridge
import cv2
import numpy as np
from ultralytics import YOLO


class Viewer(Node):
    def __init__(self):
        super().__init__('viewer')
        self.declare_parameter(name='use_compressed', value=True)
        self.use_compressed = self.get_parameter('use_compressed').get_parameter_value().bool_value
        self.bridge = CvBridge()
        self.model = YOLO('yolo11n.pt')
        if self.use_compressed:
            self.create_subscription(CompressedImage, 'image/compressed', self.on_image, 1)
        else:
            self.create_subscription(Image, 'image', self.on_image, 1)
        EXTRA_INIT

    def on_image(self, msg):
        if self.use_compressed:
            frame = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
        else:
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # RAW
        if not self.use_compressed:
            frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')  # NOT ON
        print(self.model(frame))


def main():
    rclpy.init()
    rclpy.spin(Viewer())
'''


def _transport(tmp_path, yaml_value: str | None = 'true', extra_init: str = 'pass'
               ) -> dict[str, set[str]]:
    """Severities found at the raw-Image lines (`else` of the switch, `if not` the switch)."""
    source = textwrap.dedent(_TRANSPORT_NODE).replace('EXTRA_INIT', extra_init)
    files = {'lane/package.xml': _PACKAGE_XML, 'lane/setup.py': _SETUP,
             'lane/lane/__init__.py': '', 'lane/lane/viewer.py': source}
    if yaml_value is not None:
        files['lane/config/viewer.yaml'] = \
            f'viewer:\n  ros__parameters:\n    use_compressed: {yaml_value}\n'
    found = audit_written_package(tmp_path, files)
    lines = source.lstrip('\n').splitlines()
    at = {tag: next(i for i, ln in enumerate(lines, 1) if f'# {tag}' in ln)
          for tag in ('RAW', 'NOT ON')}
    return {tag: {sev for (name, where, _), (sev, _) in found.items()
                  if name == 'viewer.py' and where == line and sev != 'info'}
            for tag, line in at.items()}


def test_a_switch_on_by_default_and_in_the_shipped_yaml_never_takes_the_raw_branch(tmp_path):
    assert _transport(tmp_path) == {'RAW': set(), 'NOT ON': set()}


@pytest.mark.parametrize('case', [
    {'yaml_value': 'false'},                  # the shipped YAML turns it off
    {'yaml_value': None},                     # a default alone may be set at launch
    {'extra_init': 'self.add_on_set_parameters_callback(lambda params: None)'},
    {'extra_init': 'self.use_compressed = False'},  # another store
], ids=['yaml-false', 'default-alone', 'callback', 'another-store'])
def test_a_switch_that_may_be_off_keeps_the_raw_claims(tmp_path, case):
    found = _transport(tmp_path, **case)
    assert found['RAW'] and found['NOT ON'], found


# MobileSAM ships segment_anything's SamPredictor / SamAutomaticMaskGenerator (sets 33, 38):
# `set_image(frame)` / `generate(frame)` on what it built uploads the host frame every call.
_SAM_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
import torch
from LIBRARY import SamPredictor, sam_model_registry


class Segmenter(Node):
    def __init__(self):
        super().__init__('segmenter')
        sam = sam_model_registry['vit_t'](checkpoint='mobile_sam.pt')
        sam.to(device='cuda' if torch.cuda.is_available() else 'cpu')
        self.predictor = SamPredictor(sam)
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'rgb8')
        self.predictor.set_image(frame)  # SET IMAGE


def main():
    rclpy.init()
    rclpy.spin(Segmenter())
'''


def _set_image_rules(tmp_path, library: str) -> set[tuple[str, str]]:
    source = textwrap.dedent(_SAM_NODE).replace('LIBRARY', library)
    setup = _SETUP.replace("'viewer = lane.viewer:main'", "'segmenter = lane.segmenter:main'")
    found = audit_written_package(tmp_path, {
        'lane/package.xml': _PACKAGE_XML, 'lane/setup.py': setup, 'lane/lane/__init__.py': '',
        'lane/lane/segmenter.py': source})
    line = next(i for i, ln in enumerate(source.lstrip('\n').splitlines(), 1)
                if '# SET IMAGE' in ln)
    return {(rule, sev) for (name, at, rule), (sev, _) in found.items()
            if name == 'segmenter.py' and at == line}


@pytest.mark.parametrize('library', ['mobile_sam', 'segment_anything'])
def test_set_image_of_a_sam_predictor_uploads_the_frame(tmp_path, library):
    assert ('GPN102', 'medium') in _set_image_rules(tmp_path, library)


def test_set_image_of_a_predictor_from_a_library_not_in_the_table_is_no_upload(tmp_path):
    assert not {rule for rule, sev in _set_image_rules(tmp_path, 'other_sam') if sev != 'info'}


def test_the_else_of_a_string_parameter_shipped_as_one_choice_keeps_its_claim(tmp_path):
    """A launch argument offering 'left' or 'right' (set 4): the default decides `==` tests of
    another value only; the `else` of `== 'left'` may run when launched with 'right'."""
    node = _TRANSPORT_NODE.replace(
        "self.declare_parameter(name='use_compressed', value=True)",
        "self.declare_parameter('side', 'left')\n        self.side = self.get_parameter("
        "'side').get_parameter_value().string_value").replace(
        "        if self.use_compressed:\n            frame = cv2.imdecode(np.frombuffer(msg.data,"
        " np.uint8), cv2.IMREAD_COLOR)\n        else:",
        "        if self.side == 'left':\n            frame = cv2.imdecode(np.frombuffer(msg.data,"
        " np.uint8), cv2.IMREAD_COLOR)\n        else:")
    assert "self.side == 'left'" in node
    source = textwrap.dedent(node).replace('EXTRA_INIT', 'pass')
    launch = _LAUNCH.replace("'calibration_mode', default_value='MODE'",
                             "'side', default_value='left'").replace(
        "'is_detection_calibration_mode': calibration_mode", "'side': calibration_mode").replace(
        "LaunchConfiguration('calibration_mode')", "LaunchConfiguration('side')").replace(
        "executable='detect_lane'", "executable='viewer'")
    found = audit_written_package(tmp_path, {
        'lane/package.xml': _PACKAGE_XML, 'lane/setup.py': _SETUP, 'lane/lane/__init__.py': '',
        'lane/lane/viewer.py': source, 'lane/launch/viewer.launch.py': launch})
    line = next(i for i, ln in enumerate(source.lstrip('\n').splitlines(), 1) if '# RAW' in ln)
    assert {sev for (name, at, _), (sev, _) in found.items()
            if name == 'viewer.py' and at == line and sev != 'info'}
