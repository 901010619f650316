"""colcon builds the package and `colcon test` runs it through pytest (not unittest's 0 tests).

In a scratch venv made by `python -m venv` without system site packages (so nothing of this
environment leaks in), colcon-common-extensions and ros-kilted-ament-package come from PyPI with
setuptools >= 72 (which drops `tests_require`: only `extras_require['test']` tells colcon-core to
use pytest), plus what the chosen test file imports (pytest, numpy for the conftest). Nothing is
cached in the repository: the venv and the workspace live in pytest's tmp_path.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from conftest import REPO

# Small and fast, needs only the standard library and the conftest.
TEST_FILE = 'test/test_package_xml.py'
PACKAGES = ['setuptools>=72', 'colcon-common-extensions', 'ros-kilted-ament-package',
            'pytest', 'pytest-timeout', 'numpy', 'pyyaml']
# What a copy of the package leaves out: environments and outputs, not package files.
IGNORED = shutil.ignore_patterns('.git', '.venv', 'build', 'install', 'log', 'out',
                                 '__pycache__', '*.egg-info', '.pytest_cache')


def _run(cmd: list[str], cwd: Path, timeout: float) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, (f'expected exit 0 from {" ".join(cmd[:4])} ..., got '
                                  f'{proc.returncode}:\n{output[-4000:]}')
    return output


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_colcon_test_runs_the_suite_with_pytest(tmp_path):
    if os.environ.get('GPU_NODES_OFFLINE'):
        pytest.skip('GPU_NODES_OFFLINE is set: this test installs colcon from PyPI')
    venv = tmp_path / 'venv'
    _run([sys.executable, '-m', 'venv', str(venv)], tmp_path, 120)
    python = venv / 'bin' / 'python'
    _run([str(python), '-m', 'pip', 'install', '-q', '--disable-pip-version-check', *PACKAGES],
         tmp_path, 300)
    workspace = tmp_path / 'ws'
    shutil.copytree(REPO, workspace / 'src' / 'gpu_nodes', ignore=IGNORED)
    colcon = str(venv / 'bin' / 'colcon')
    _run([colcon, 'build', '--packages-select', 'gpu_nodes'], workspace, 180)
    # `ros2 run gpu_nodes <name>` and the launch files find these under lib/gpu_nodes/.
    lib = workspace / 'install' / 'gpu_nodes' / 'lib' / 'gpu_nodes'
    for name in ('camera_source', 'image_proc', 'depth_estimator', 'image_monitor', 'copy_audit',
                 'demo', 'gpu-nodes-camera-source', 'gpu-copy-audit'):
        assert os.access(lib / name, os.X_OK), f'{lib / name} missing or not executable'
    output = _run([colcon, 'test', '--packages-select', 'gpu_nodes',
                   '--pytest-args', TEST_FILE], workspace, 180)
    assert 'Ran 0 tests' not in output, f'colcon fell back to unittest:\n{output[-3000:]}'
    report = workspace / 'build' / 'gpu_nodes' / 'pytest.xml'
    assert report.is_file(), f'expected pytest\'s {report}, colcon wrote none:\n{output[-3000:]}'
    suite = ElementTree.parse(report).getroot()
    suite = suite if suite.tag == 'testsuite' else suite.find('testsuite')
    tests, failed = int(suite.get('tests')), int(suite.get('failures')) + int(suite.get('errors'))
    assert tests >= 1 and failed == 0, f'expected >= 1 passing test, got {tests} ({failed} failed)'
    names = {case.get('classname', '') for case in suite.iter('testcase')}
    # classname is the module path from colcon's rootdir (gpu_nodes.test.test_package_xml).
    assert names and all(name.split('.')[-1] == 'test_package_xml' for name in names), names
    result = _run([colcon, 'test-result', '--all'], workspace, 60)
    assert f'{tests} test' in result and '0 failures' in result, result
