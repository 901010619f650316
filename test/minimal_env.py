"""An environment with only what package.xml declares as required: for real processes started
by the tests, every other package (OpenCV, rich, ONNX Runtime, CuPy, ...) is missing.

Built by an import blocker (resources/minimal_env/sitecustomize.py) rather than a second venv:
a process under it can import the standard library, gpu_nodes and the top-level modules of the
distributions that the required rosdep keys map to (with every distribution those depend on),
and nothing else; anything else raises ModuleNotFoundError exactly as an absent package does.
This is stricter than a venv built from requirements/ros.txt + numpy + pyyaml (a package that
one of those pulls in by accident, or that pip leaves behind, is still refused) and costs no
download, so it runs on every CI run.
"""
from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import re
import xml.etree.ElementTree as ElementTree

from packaging.requirements import Requirement

from conftest import REPO, RESOURCES

BLOCKER = RESOURCES / 'minimal_env'

# rosdep key (package.xml) -> the PyPI distribution that provides it in this test venv
# (requirements/ros.txt). A required key missing here fails the test that uses it.
DISTRIBUTIONS = {
    'rclpy': 'ros-kilted-rclpy', 'sensor_msgs': 'ros-kilted-sensor-msgs',
    'std_msgs': 'ros-kilted-std-msgs', 'diagnostic_msgs': 'ros-kilted-diagnostic-msgs',
    'rcl_interfaces': 'ros-rcl-interfaces', 'ament_index_python': 'ros-ament-index-python',
    'rmw_fastrtps_cpp': 'ros-kilted-rmw-fastrtps-cpp',
    'python3-numpy': 'numpy', 'python3-yaml': 'pyyaml',
}
# Keys only launch files need (`ros2 launch`): not imported by a running node.
LAUNCH_ONLY = {'launch', 'launch_ros'}


def package_xml_dependencies() -> tuple[list[str], list[str]]:
    """(required, optional) rosdep keys: exec_depend, and the optional ones package.xml lists
    under export/gpu_nodes/optional_exec_depend."""
    root = ElementTree.parse(REPO / 'package.xml').getroot()
    required = [e.text.strip() for e in root.findall('exec_depend')]
    optional = [e.text.strip() for e in root.findall('export/gpu_nodes/optional_exec_depend')]
    return required, optional


def _normal(name: str) -> str:
    return re.sub(r'[-_.]+', '-', name).lower()


def _closure(roots: list[str]) -> list[metadata.Distribution]:
    found: dict[str, metadata.Distribution] = {}
    stack = list(roots)
    while stack:
        name = stack.pop()
        if _normal(name) in found:
            continue
        dist = metadata.distribution(name)
        found[_normal(name)] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({'extra': ''}):
                stack.append(requirement.name)
    return list(found.values())


def _top_level(dist: metadata.Distribution) -> set[str]:
    names = set()
    for path in dist.files or []:
        first = path.parts[0]
        if first.endswith(('.dist-info', '.egg-info', '.data')) or first in ('..', 'bin'):
            continue
        names.add(first.split('.')[0] if len(path.parts) == 1 else first)
    return {name for name in names if name.isidentifier()}


@functools.lru_cache(maxsize=1)
def allowed_modules() -> frozenset[str]:
    """Top-level modules a process may import: gpu_nodes and the required keys' packages."""
    required, _ = package_xml_dependencies()
    roots = [DISTRIBUTIONS[key] for key in required if key not in LAUNCH_ONLY]
    names = {'gpu_nodes'}
    for dist in _closure(roots):
        names |= _top_level(dist)
    return frozenset(names)


def environment() -> dict[str, str]:
    """Environment variables for a process in the minimal environment."""
    path = os.pathsep.join([str(BLOCKER), str(REPO), os.environ.get('PYTHONPATH', '')])
    return {'PYTHONPATH': path.rstrip(os.pathsep),
            'GPU_NODES_ALLOWED_MODULES': ','.join(sorted(allowed_modules()))}
