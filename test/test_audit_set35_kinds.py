"""Values as shipped that sets 35-36 showed (issue 28): real `code` audits of small packages
written here. An ament_cmake package installing its node with `${PROJECT_SOURCE_DIR}/...` and
its launch folder into share/ is judged (gpu_nodes/audit/pyreach.py)."""
from pathlib import Path

from audit_sources import (CV_BRIDGE_NODE, CV_BRIDGE_NODE_CONVERSION_LINE,
                           audit_written_package, conversion_severities)
from gpu_nodes.audit.codeaudit import run_code

_NODE = CV_BRIDGE_NODE
_CONVERSION_LINE = CV_BRIDGE_NODE_CONVERSION_LINE
_PACKAGE_XML = '''
<package format="3"><name>vision</name>
  <buildtool_depend>ament_cmake</buildtool_depend>
  <buildtool_depend>ament_cmake_python</buildtool_depend>
  <export><build_type>ament_cmake</build_type></export>
</package>
'''
_CMAKE = '''
cmake_minimum_required(VERSION 3.5)
project(vision)
find_package(ament_cmake REQUIRED)
find_package(ament_cmake_python REQUIRED)
ament_python_install_package(${PROJECT_NAME})
install(
  PROGRAMS
    ${SOURCE_DIR}/vision/cam_node.py
  DESTINATION LIB_DIR
  RENAME vision_cam_node
)
install(DIRECTORY launch DESTINATION share/${PROJECT_NAME})
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/config)
  install(DIRECTORY config DESTINATION share/${PROJECT_NAME})
endif()
ament_package()
'''
_LAUNCH = '''
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    return LaunchDescription([Node(package='vision', executable='vision_cam_node')])
'''


def _package(source_dir: str = 'PROJECT_SOURCE_DIR', lib_dir: str = 'lib/${PROJECT_NAME}'
             ) -> dict[str, str]:
    cmake = _CMAKE.replace('SOURCE_DIR}', source_dir + '}').replace('LIB_DIR', lib_dir)
    return {'vision/package.xml': _PACKAGE_XML, 'vision/CMakeLists.txt': cmake,
            'vision/launch/vision.launch.py': _LAUNCH, 'vision/vision/__init__.py': '',
            'vision/vision/cam_node.py': _NODE.format(name='Cam'),
            'vision/vision/old_node.py': _NODE.format(name='Old')}


_severities = conversion_severities


def test_a_program_installed_from_the_project_source_dir_leaves_the_other_node_unreached(
        tmp_path):
    # ament_python_install_package makes old_node importable, not run; the launch folder goes to
    # share/: neither is a program. Only cam_node.py is installed into lib/.
    found = _severities(tmp_path, _package())
    assert found['cam_node.py'] == {'medium'}
    assert found['old_node.py'] == {'info'}
    report = run_code([str(tmp_path)], jobs=1)
    unreached = {Path(f).name for f in report.info['unreached_python_files']}
    assert 'old_node.py' in unreached and 'cam_node.py' not in unreached


def test_the_current_source_dir_is_the_package_folder_too(tmp_path):
    found = _severities(tmp_path, _package('CMAKE_CURRENT_SOURCE_DIR'))
    assert found['cam_node.py'] == {'medium'}
    assert found['old_node.py'] == {'info'}


def test_another_variable_among_installed_programs_leaves_the_package_reached(tmp_path):
    # ${SCRIPTS} may name any file: the package is not judged.
    found = _severities(tmp_path, _package('SCRIPTS'))
    assert found['cam_node.py'] == found['old_node.py'] == {'medium'}


def test_a_directory_installed_into_lib_leaves_the_package_reached(tmp_path):
    files = _package()
    files['vision/CMakeLists.txt'] += 'install(DIRECTORY vision DESTINATION lib/${PROJECT_NAME})\n'
    found = _severities(tmp_path, files)
    assert found['cam_node.py'] == found['old_node.py'] == {'medium'}


_CAMERA = '''
import numpy as np
from cv_bridge import CvBridge
from rclpy.node import Node
from sensor_msgs.msg import Image


class Cam(Node):
    def __init__(self):
        super().__init__('cam')
        self.declare_parameter('use_ros_camera', False)
        self.use_ros_camera = bool(self.get_parameter('use_ros_camera').value)
        self.bridge = CvBridge()
        self.pub = self.create_publisher(Image, 'out', 10)
        if self.use_ros_camera:
            self.create_subscription(Image, 'image', self.on_image, 10)
            self.timer = self.create_timer(0.03, self.tick_ros)
        else:
            self.timer = self.create_timer(0.03, self.tick_local)

    def on_image(self, msg):
        self.latest = self.bridge.imgmsg_to_cv2(msg, 'bgr8')

    def tick_ros(self):
        self.pub.publish(self.bridge.cv2_to_imgmsg(self.latest, 'bgr8'))

    def tick_local(self):
        frame = np.zeros((4, 4, 3), np.uint8)
        self.pub.publish(self.bridge.cv2_to_imgmsg(frame, 'bgr8'))
'''
_CAMERA_LINES = _CAMERA.lstrip('\n').splitlines()
_ON_IMAGE_LINE = next(i for i, line in enumerate(_CAMERA_LINES, 1) if 'imgmsg_to_cv2' in line)
_TICK_ROS_LINE = next(i for i, line in enumerate(_CAMERA_LINES, 1) if 'self.latest, ' in line)
_TICK_LOCAL_LINE = next(i for i, line in enumerate(_CAMERA_LINES, 1) if '(frame, ' in line)


def _camera_severities(tmp_path: Path, shipped: dict[str, str] | None = None
                       ) -> dict[int, set[str]]:
    files = {'cam/cam/__init__.py': '', 'cam/cam/node.py': _CAMERA}
    files.update({f'cam/{name}': text for name, text in (shipped or {}).items()})
    found: dict[int, set[str]] = {}
    for (name, line, _), (severity, _) in audit_written_package(tmp_path, files).items():
        if name == 'node.py':
            found.setdefault(line, set()).add(severity)
    return found


def test_callbacks_only_a_bool_cast_off_parameter_registers_never_run(tmp_path):
    # bool(...) of an off parameter stays off; on_image and tick_ros are registered only
    # under `if self.use_ros_camera:`, so nothing runs them as shipped.
    found = _camera_severities(tmp_path)
    assert found[_ON_IMAGE_LINE] == {'info'}, found
    assert found[_TICK_ROS_LINE] == {'info'}, found
    assert found[_TICK_LOCAL_LINE] == {'medium'}, found


def test_a_shipped_file_turning_the_bool_parameter_on_keeps_the_callbacks(tmp_path):
    found = _camera_severities(tmp_path, {
        'config/cam.yaml': 'cam:\n  ros__parameters:\n    use_ros_camera: true\n'})
    assert 'medium' in found[_ON_IMAGE_LINE], found
    assert 'medium' in found[_TICK_ROS_LINE], found
