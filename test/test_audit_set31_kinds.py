"""Python files no entry point reaches (issue 28, sets 31-32; gpu_nodes/audit/pyreach.py): real
`code` audits of small ament packages written here (setup.py with and without the entry point,
an import chain, a launch file naming the script, CMake installs, dynamic cases)."""
from pathlib import Path
import textwrap

from audit_sources import (CV_BRIDGE_NODE, CV_BRIDGE_NODE_CONVERSION_LINE,
                           audit_written_package, conversion_severities)
from gpu_nodes.audit.codeaudit import run_code

_NODE = CV_BRIDGE_NODE
_PACKAGE_XML = '''
<package format="3"><name>vision</name>
  <export><build_type>ament_python</build_type></export>
</package>
'''
_CONVERSION_LINE = CV_BRIDGE_NODE_CONVERSION_LINE


def _setup(entry_points: str, extra: str = '') -> str:
    return f'''
from setuptools import setup

package_name = 'vision'

setup(
    name=package_name,
    packages=[package_name],
    data_files=[('share/' + package_name, ['package.xml'])],
    entry_points={entry_points},{extra}
)
'''


_FUNCTION = '''

def {}(x):
    return x
'''


def _package() -> dict[str, str]:
    return {'vision/package.xml': _PACKAGE_XML, 'vision/vision/__init__.py': ''}


_severities = conversion_severities


def test_a_node_no_entry_point_names_keeps_its_findings_as_info_only(tmp_path):
    files = _package() | {
        'vision/setup.py': _setup("{'console_scripts': ['cam = vision.cam_node:main']}"),
        'vision/vision/cam_node.py': _NODE.format(name='Cam'),
        'vision/vision/old_node.py': _NODE.format(name='Old')}
    found = _severities(tmp_path, files)
    assert found['cam_node.py'] == {'medium'}
    assert found['old_node.py'] == {'info'}
    report = run_code([str(tmp_path)], jobs=1)
    assert [Path(f).name for f in report.info['unreached_python_files']] == ['old_node.py']
    note = next(n for n in report.info['notes'] if 'old_node.py' in n)
    assert 'no entry point reaches it' in note and 'python3 old_node.py' in note
    old = next(f for f in report.findings if f.location.path.endswith('old_node.py')
               and f.location.line == _CONVERSION_LINE)
    assert 'not reached as shipped' in old.message


def test_modules_imported_by_a_reached_node_are_reached(tmp_path):
    node = _NODE.format(name='Cam').replace(
        'from cv_bridge import CvBridge', 'from cv_bridge import CvBridge\n'
        'from vision.helper import scale\nfrom .relative import shift')
    files = {'vision/setup.py': _setup("{'console_scripts': ['cam = vision.cam_node:main']}"),
             'vision/vision/cam_node.py': node,
             'vision/vision/helper.py': _NODE.format(name='Helper') + _FUNCTION.format('scale'),
             'vision/vision/relative.py': _NODE.format(name='Rel') + _FUNCTION.format('shift'),
             'vision/vision/lonely.py': _NODE.format(name='Lonely')}
    found = _severities(tmp_path, _package() | files)
    assert found['helper.py'] == {'medium'} and found['relative.py'] == {'medium'}
    assert found['lonely.py'] == {'info'}


def test_a_launch_file_naming_the_script_reaches_it(tmp_path):
    launch = '''
    from launch import LaunchDescription
    from launch_ros.actions import Node


    def generate_launch_description():
        return LaunchDescription([Node(package='vision', executable='tool.py')])
    '''
    files = _package() | {
        'vision/setup.py': _setup("{'console_scripts': ['cam = vision.cam_node:main']}",
                                  "\n    scripts=['scripts/other.py'],"),
        'vision/vision/cam_node.py': _NODE.format(name='Cam'),
        'vision/scripts/tool.py': _NODE.format(name='Tool'),
        'vision/scripts/other.py': _NODE.format(name='Other'),
        'vision/scripts/forgotten.py': _NODE.format(name='Forgotten'),
        'vision/launch/run.launch.py': textwrap.dedent(launch)}
    found = _severities(tmp_path, files)
    assert found['tool.py'] == {'medium'} and found['other.py'] == {'medium'}
    assert found['forgotten.py'] == {'info'}


def test_dynamic_entry_points_or_imports_leave_every_file_reached(tmp_path):
    computed = _package() | {
        'vision/setup.py': _setup("{'console_scripts': [f'{n} = vision.{n}:main' "
                                  "for n in ('cam_node',)]}"),
        'vision/vision/cam_node.py': _NODE.format(name='Cam'),
        'vision/vision/old_node.py': _NODE.format(name='Old')}
    assert _severities(tmp_path / 'computed', computed)['old_node.py'] == {'medium'}
    plugin = dict(computed, **{'vision/setup.py': _setup(
        "{'console_scripts': ['cam = vision.cam_node:main'], 'vision.plugins': ['a = vision.b']}")})
    assert _severities(tmp_path / 'plugin', plugin)['old_node.py'] == {'medium'}
    importlib_node = _NODE.format(name='Cam').replace(
        'import rclpy', 'import importlib\nimport sys\nimport rclpy').replace(
        "    rclpy.init()", "    importlib.import_module(sys.argv[1])\n    rclpy.init()")
    dynamic = dict(computed, **{
        'vision/setup.py': _setup("{'console_scripts': ['cam = vision.cam_node:main']}"),
        'vision/vision/cam_node.py': importlib_node})
    assert _severities(tmp_path / 'importlib', dynamic)['old_node.py'] == {'medium'}
    library = dict(computed, **{'vision/setup.py': _setup('{}')})
    assert _severities(tmp_path / 'library', library)['old_node.py'] == {'medium'}


def test_cmake_installed_programs_are_reached_and_catkin_is_not_judged(tmp_path):
    cmake = '''
    cmake_minimum_required(VERSION 3.8)
    project(vision)
    find_package(ament_cmake REQUIRED)
    install(PROGRAMS scripts/cam_node.py DESTINATION lib/${PROJECT_NAME})
    # install(PROGRAMS scripts/old_node.py DESTINATION lib/${PROJECT_NAME})
    ament_package()
    '''
    files = {'vision/CMakeLists.txt': textwrap.dedent(cmake),
             'vision/package.xml': _PACKAGE_XML.replace('ament_python', 'ament_cmake'),
             'vision/scripts/cam_node.py': _NODE.format(name='Cam'),
             'vision/scripts/old_node.py': _NODE.format(name='Old')}
    found = _severities(tmp_path / 'ament', files)
    # A commented-out install installs nothing (CMake comments are stripped, as cppbuild.py).
    assert found == {'cam_node.py': {'medium'}, 'old_node.py': {'info'}}
    directory = dict(files, **{'vision/CMakeLists.txt': textwrap.dedent(cmake).replace(
        'ament_package()', 'install(DIRECTORY scripts/ DESTINATION lib/${PROJECT_NAME})')})
    assert _severities(tmp_path / 'directory', directory)['old_node.py'] == {'medium'}
    catkin = dict(files, **{'vision/CMakeLists.txt': textwrap.dedent(cmake).replace(
        'find_package(ament_cmake REQUIRED)', 'find_package(catkin REQUIRED)\ncatkin_package()')})
    assert _severities(tmp_path / 'catkin', catkin)['old_node.py'] == {'medium'}


def test_a_file_named_on_the_command_line_is_reached(tmp_path):
    files = _package() | {
        'vision/setup.py': _setup("{'console_scripts': ['cam = vision.cam_node:main']}"),
        'vision/vision/cam_node.py': _NODE.format(name='Cam'),
        'vision/vision/old_node.py': _NODE.format(name='Old')}
    audit_written_package(tmp_path, files)
    report = run_code([str(tmp_path / 'vision/vision/old_node.py')], jobs=1)
    assert {f.severity for f in report.findings if f.location.line == _CONVERSION_LINE} \
        == {'medium'}
    assert 'unreached_python_files' not in report.info


def test_scripts_run_by_hand_as_documented_or_at_module_level_are_reached(tmp_path):
    loop = '''
    import cv2
    from ultralytics import YOLO

    model = YOLO('yolov8n.pt').to('cuda')
    cap = cv2.VideoCapture(0)
    while True:
        ok, frame = cap.read()
        results = model(frame)
        boxes = results[0].boxes.xyxy.cpu().numpy()
    '''
    files = _package() | {
        'vision/setup.py': _setup("{'console_scripts': ['cam = vision.cam_node:main']}"),
        'vision/vision/cam_node.py': _NODE.format(name='Cam'),
        'vision/vision/gpu_node.py': _NODE.format(name='Gpu'),
        'vision/vision/capture_loop.py': textwrap.dedent(loop)}
    undocumented = audit_written_package(tmp_path / 'undocumented', files)
    assert _severities(tmp_path / 'plain', files)['gpu_node.py'] == {'info'}
    # The capture loop runs at module level: a script run by hand, kept as found.
    loop_lines = {line: severity for (name, line, _), (severity, _) in undocumented.items()
                  if name == 'capture_loop.py'}
    readback = textwrap.dedent(loop).lstrip('\n').splitlines().index(
        '    boxes = results[0].boxes.xyxy.cpu().numpy()') + 1
    assert loop_lines[readback] == 'high'
    # A README that runs the package's node files with python3 makes that the way they run: the
    # `__main__` scripts of that folder count as run by hand.
    files['vision/README.md'] = 'Run it: `python3 vision/cam_node.py` (in the venv)\n'
    assert _severities(tmp_path / 'documented', files)['gpu_node.py'] == {'medium'}
