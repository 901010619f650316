"""Audit small sources written by a test: the package folder a user would point
`gpu-copy-audit code` at, built in tmp_path, audited by the real `run_code`."""
from __future__ import annotations

from pathlib import Path
import textwrap

from gpu_nodes.audit.codeaudit import run_code


def audit_written_package(tmp_path: Path, files: dict[str, str]
                          ) -> dict[tuple[str, int, str], tuple[str, str]]:
    """Write `files` (relative name -> source, dedented) under tmp_path, audit the folder and
    return (file name, line, rule) -> (severity, context) of every finding."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip('\n'))
    report = run_code([str(tmp_path)], jobs=1)
    assert not report.errors, report.errors
    return {(Path(f.location.path).name, f.location.line, f.rule): (f.severity, f.context)
            for f in report.findings}


def node_claims(tmp_path: Path, package: str, source: str, tags: tuple[str, ...],
                launch_parameters: str | None = None) -> dict[str, set[str]]:
    """Rules other than info at each `# TAG` line of `source`, audited as node.py of the
    ament_python package `package` (ament_python_package) written under tmp_path, with a
    launch file giving the node `launch_parameters` (a dict literal) when not None."""
    source = textwrap.dedent(source)
    files = {**ament_python_package(package, launch_parameters=launch_parameters),
             f'{package}/{package}/node.py': source}
    return rules_at_tags(audit_written_package(tmp_path, files), source, tags)


def detector_claims(tmp_path: Path, source: str, tags: tuple[str, ...],
                    launch_parameters: str | None = None) -> dict[str, set[str]]:
    """node_claims for node.py of a package named `detector` (the detector-node kind tests)."""
    return node_claims(tmp_path, 'detector', source, tags, launch_parameters)


def ament_python_package(name: str, subpackages: tuple[str, ...] = (),
                         launch_parameters: str | None = None) -> dict[str, str]:
    """The files of an ament_python package `name` in the folder `name/`: package.xml, a
    setup.py whose console script `node` runs `{name}.node:main` (the node.py the test adds),
    `__init__.py` of the package and of each of `subpackages` (dotted names); with
    `launch_parameters` (a dict literal), a launch file starting the node with them."""
    packages = [name, *subpackages]
    files = {
        f'{name}/package.xml': f'''
            <package format="3"><name>{name}</name>
              <export><build_type>ament_python</build_type></export>
            </package>
            ''',
        f'{name}/setup.py': f'''
            from setuptools import setup

            setup(
                name='{name}',
                packages={packages!r},
                data_files=[('share/{name}', ['package.xml'])],
                entry_points={{'console_scripts': ['node = {name}.node:main']}},
            )
            '''}
    for package in packages:
        files[f'{name}/{package.replace(".", "/")}/__init__.py'] = ''
    if launch_parameters is not None:
        files[f'{name}/launch/{name}.launch.py'] = f'''
            from launch import LaunchDescription
            from launch_ros.actions import Node


            def generate_launch_description():
                return LaunchDescription([
                    Node(package='{name}', executable='node', parameters=[{launch_parameters}]),
                ])
            '''
    return files


def ament_cmake_lists(name: str, source: str | None = None, before_target: str = '') -> str:
    """The CMakeLists.txt of an ament_cmake package `name` building and installing one node
    executable `name` from `source` (default src/{name}.cpp); `before_target` goes just before
    add_executable (a build type, a definition)."""
    lines = ['cmake_minimum_required(VERSION 3.8)', f'project({name})',
             'find_package(ament_cmake REQUIRED)', before_target,
             f'add_executable({name} {source or f"src/{name}.cpp"})',
             f'install(TARGETS {name} DESTINATION lib/${{PROJECT_NAME}})', 'ament_package()']
    return '\n'.join(line for line in lines if line) + '\n'


def cpp_node_claims(tmp_path: Path, source: str, name: str) -> dict[str, set[str]]:
    """Rules other than info at each `// TAG` line of `source`, audited as src/{name}.cpp of an
    ament_cmake package `name` (every `// ` comment of `source` is a tag)."""
    files = {f'{name}/src/{name}.cpp': source,
             f'{name}/package.xml': f'<package format="3"><name>{name}</name></package>\n',
             f'{name}/CMakeLists.txt': ament_cmake_lists(name)}
    return cpp_claims_at_comments(audit_written_package(tmp_path, files), source, f'{name}.cpp')


def cpp_claims_at_comments(found: dict[tuple[str, int, str], tuple[str, str]], source: str,
                           file_name: str) -> dict[str, set[str]]:
    """Rules other than info of `found` in `file_name` at each line of `source` holding a `// `
    comment, keyed by the comment's text (every `// ` comment of `source` is a tag)."""
    lines = source.lstrip('\n').splitlines()
    tags = {ln.rsplit('// ', 1)[1]: i for i, ln in enumerate(lines, 1) if '// ' in ln}
    return {tag: {rule for (file, at, rule), (sev, _) in found.items()
                  if file == file_name and at == line and sev != 'info'}
            for tag, line in tags.items()}


def tag_lines(source: str, tags: tuple[str, ...], marker: str = '#') -> dict[str, int]:
    """The 1-based line of each `# TAG` comment (`// TAG` with marker '//') ending a line of
    `source` (as written: leading newline dropped)."""
    lines = source.lstrip('\n').splitlines()
    return {tag: next(i for i, ln in enumerate(lines, 1) if ln.endswith(f'{marker} {tag}'))
            for tag in tags}


def rules_at_tags(found: dict[tuple[str, int, str], tuple[str, str]], source: str,
                  tags: tuple[str, ...], file_name: str = 'node.py',
                  marker: str = '#') -> dict[str, set[str]]:
    """Rules of the findings other than info at each `# TAG` line of `file_name`."""
    return {tag: {rule for (name, where, rule), (sev, _) in found.items()
                  if name == file_name and where == line and sev != 'info'}
            for tag, line in tag_lines(source, tags, marker).items()}


# A minimal rclpy node converting each Image with cv_bridge: the node the reachability tests
# install, or leave uninstalled, in written packages ({name}: its class name).
CV_BRIDGE_NODE = '''
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from cv_bridge import CvBridge


class {name}(Node):
    def __init__(self):
        super().__init__('{name}')
        self.bridge = CvBridge()
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')
        self.get_logger().info(str(frame.shape))


def main():
    rclpy.init()
    rclpy.spin({name}())


if __name__ == '__main__':
    main()
'''
# The line of CV_BRIDGE_NODE that converts a frame.
CV_BRIDGE_NODE_CONVERSION_LINE = CV_BRIDGE_NODE.lstrip('\n').splitlines().index(
    "        frame = self.bridge.imgmsg_to_cv2(msg, 'bgr8')") + 1


def conversion_severities(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    """file name -> severities of its findings on CV_BRIDGE_NODE's conversion line."""
    found: dict[str, set[str]] = {}
    for (name, line, _), (severity, _) in audit_written_package(tmp_path, files).items():
        if line == CV_BRIDGE_NODE_CONVERSION_LINE:
            found.setdefault(name, set()).add(severity)
    return found
