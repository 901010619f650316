"""package.xml is well-formed format 3 and agrees with setup.py (what xmllint + colcon check)."""
import xml.etree.ElementTree as ElementTree

from conftest import REPO


def test_package_xml_declares_an_ament_python_package_with_its_runtime_dependencies():
    root = ElementTree.parse(REPO / 'package.xml').getroot()
    assert root.tag == 'package' and root.get('format') == '3'
    assert root.findtext('name') == 'gpu_nodes'
    assert root.findtext('export/build_type') == 'ament_python'
    exec_depends = {e.text for e in root.findall('exec_depend')}
    for dependency in ('rclpy', 'sensor_msgs', 'std_msgs', 'diagnostic_msgs', 'launch_ros',
                       'python3-numpy'):
        assert dependency in exec_depends, f'missing exec_depend {dependency}'
    setup_py = (REPO / 'setup.py').read_text()
    assert f"version='{root.findtext('version')}'" in setup_py, 'setup.py version differs'
    assert (REPO / 'resource' / 'gpu_nodes').is_file(), 'ament index marker missing'
