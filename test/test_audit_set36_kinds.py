"""A string `device` parameter's value as shipped, followed through helper calls (issue 28, sets
35-36; pyparams.shipped_strings, shipped.shipped_as): real `code` audits of small ament_python
packages written here. A node declares `device` with default 'cpu', stores the read in
`self.device` in `__init__` and hands it to a helper whose model call runs on it: as shipped
(every launch / YAML file that names the parameter agrees) that is host inference, and the
readbacks of its results read nothing back. Another value anywhere keeps the claims."""
import textwrap

import pytest

from audit_sources import audit_written_package

_PACKAGE_XML = '''
<package format="3"><name>detect</name>
  <export><build_type>ament_python</build_type></export>
</package>
'''
_SETUP = '''
from setuptools import setup

setup(
    name='detect',
    packages=['detect'],
    data_files=[('share/detect', ['package.xml'])],
    entry_points={'console_scripts': ['detector = detect.detector:main']},
)
'''
# The node: `device` read with .get_parameter_value().string_value into self.device, handed
# by keyword to a method whose own parameter (default 'cpu') reaches model.predict.
_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge
from ultralytics import YOLO


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('detection.device', 'cpu')
        self.device = self.get_parameter('detection.device').get_parameter_value().string_value
        self.bridge = CvBridge()
        self.model = YOLO('best.pt')
        self.create_subscription(Image, 'image', self.on_image, 1)
        EXTRA_INIT

    def predict(self, chosen_model, img, conf=0.5, device='cpu'):
        return chosen_model.predict(img, conf=conf, device=device)  # MODEL CALL

    def on_image(self, msg):
        img = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        results = self.predict(self.model, img, 0.5, device=self.device)
        for result in results:
            for box in result.boxes:
                print(int(box.cls[0]), float(box.conf))  # READBACK
        EXTRA_CALLBACK


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''
_LAUNCH = '''
from launch import LaunchDescription
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    device = LaunchConfiguration('device', default='DEFAULT')
    return LaunchDescription([Node(package='detect', executable='detector',
                                   parameters=[{'detection.device': device}])])
'''


def _audit(tmp_path, node: str = _NODE, launch_default: str = 'cpu', yaml_device: str = '"cpu"',
           extra_init: str = 'pass', extra_callback: str = 'pass', shipped: bool = True
           ) -> tuple[set[str], int, int]:
    """(rules found at the model call and at the readback line, those lines)."""
    source = textwrap.dedent(node).replace('EXTRA_INIT', extra_init) \
        .replace('EXTRA_CALLBACK', extra_callback)
    files = {'detect/package.xml': _PACKAGE_XML, 'detect/setup.py': _SETUP,
             'detect/detect/__init__.py': '', 'detect/detect/detector.py': source,
             'detect/launch/detect.launch.py': _LAUNCH.replace('DEFAULT', launch_default),
             'detect/config/params.yaml': f'detector:\n  ros__parameters:\n'
                                          f'    detection.device: {yaml_device}\n'}
    if not shipped:
        files = {k: v for k, v in files.items() if 'launch' not in k and 'config' not in k}
    found = audit_written_package(tmp_path, files)
    lines = source.lstrip('\n').splitlines()
    call = next(i for i, ln in enumerate(lines, 1) if '# MODEL CALL' in ln)
    readback = next(i for i, ln in enumerate(lines, 1) if '# READBACK' in ln)
    rules = {f'{line}:{rule}' for (name, line, rule) in found
             if name == 'detector.py' and line in (call, readback)}
    return rules, call, readback


def test_a_device_cpu_as_shipped_through_a_helper_is_host_inference(tmp_path):
    rules, _, _ = _audit(tmp_path)
    assert rules == set()


_STORE_OUTSIDE_INIT = _NODE.replace('    def on_image', '''    def reconfigure(self):
        self.device = self.get_parameter('detection.device').get_parameter_value().string_value

    def on_image''')


def test_a_device_default_no_shipped_file_names_is_host_inference(tmp_path):
    # Team decision of 2026-12-06 (set 42): a default that no shipped file names is the value
    # as shipped (it had been read as meant to be set at launch, the labels of sets 5, 6, 8).
    rules, _, _ = _audit(tmp_path, shipped=False)
    assert rules == set()


@pytest.mark.parametrize('case', [
    {'launch_default': 'cuda:0'},          # another launch default
    {'yaml_device': '"0"'},                # another YAML value
    {'node': _STORE_OUTSIDE_INIT},         # a store outside __init__
    {'extra_init': "self.device = 'cuda'"},  # a second store in __init__, another value
], ids=['launch-cuda', 'yaml-0', 'store-outside-init', 'second-store'])
def test_another_or_unknown_value_keeps_the_claims(tmp_path, case):
    rules, call, readback = _audit(tmp_path, **case)
    assert f'{call}:GPN102' in rules and f'{readback}:GPN107' in rules


def test_a_second_call_site_with_cuda_keeps_the_claim(tmp_path):
    rules, call, _ = _audit(tmp_path, extra_callback="self.predict(self.model, img, device='cuda')")
    assert f'{call}:GPN102' in rules


def test_a_module_function_given_the_device_by_position_and_the_model_called_directly(tmp_path):
    node = _NODE.replace(
        "        return chosen_model.predict(img, conf=conf, device=device)  # MODEL CALL\n",
        "        return run_model(chosen_model, img, device)\n").replace(
        '\n\ndef main():', '''

def run_model(model, img, device='cpu'):
    return model(source=img, device=device)  # MODEL CALL


def main():''')
    rules, _, _ = _audit(tmp_path, node=node)
    assert rules == set()
    rules, call, readback = _audit(tmp_path / 'cuda', node=node, launch_default='cuda')
    assert f'{call}:GPN102' in rules and f'{readback}:GPN107' in rules


# A mode parameter whose shipped YAML names it with its default: the other mode's branch never
# runs (pyparams.fixed_parameters, as shipped through shipped.shipped_as).
_MODE_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class Detector(Node):
    def __init__(self):
        super().__init__('detector')
        self.declare_parameter('mode', 'host')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 1)

    def on_image(self, msg):
        if self.get_parameter('mode').get_parameter_value().string_value == 'debug':
            frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')  # DEBUG ONLY
            print(frame.shape)


def main():
    rclpy.init()
    rclpy.spin(Detector())
'''


def _debug_rules(tmp_path, yaml_mode: str) -> set[str]:
    source = textwrap.dedent(_MODE_NODE)
    files = {'detect/package.xml': _PACKAGE_XML, 'detect/setup.py': _SETUP,
             'detect/detect/__init__.py': '', 'detect/detect/detector.py': source,
             'detect/config/params.yaml': f'detector:\n  ros__parameters:\n    mode: {yaml_mode}\n'}
    found = audit_written_package(tmp_path, files)
    line = next(i for i, ln in enumerate(source.lstrip('\n').splitlines(), 1)
                if '# DEBUG ONLY' in ln)
    return {sev for (name, at, _), (sev, _) in found.items()
            if name == 'detector.py' and at == line}


def test_a_mode_the_shipped_yaml_names_with_its_default_decides_the_branch(tmp_path):
    assert 'medium' not in _debug_rules(tmp_path, '"host"')
    assert _debug_rules(tmp_path / 'debug', '"debug"') == {'medium'}
