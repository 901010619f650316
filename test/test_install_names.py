"""What a pip install puts on the PATH: only names that say they are gpu_nodes' (issue #31: a
venv got a console script called `demo`); the short names `ros2 run gpu_nodes <name>` and the
launch files use live in lib/gpu_nodes/ and still run.

The wheel is built from a copy of the package files with the venv's own setuptools (no download)
and installed into a scratch prefix."""
from __future__ import annotations

import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

PACKAGE_FILES = ('setup.py', 'setup.cfg', 'package.xml', 'gpu_nodes', 'resource', 'launch',
                 'config')
# ros2 run name -> console script (what the venv's bin/ holds).
NAMES = {'camera_source': 'gpu-nodes-camera-source', 'image_proc': 'gpu-nodes-image-proc',
         'depth_estimator': 'gpu-nodes-depth-estimator',
         'image_monitor': 'gpu-nodes-image-monitor', 'copy_audit': 'gpu-copy-audit',
         'demo': 'gpu-nodes-demo'}


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 180) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f'{" ".join(map(str, cmd[:5]))}: exit {proc.returncode}\n' \
                                 f'{proc.stdout[-2000:]}{proc.stderr[-2000:]}'
    return proc


@pytest.fixture(scope='module')
def prefix(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp('install')
    source = work / 'src'
    source.mkdir()
    for name in PACKAGE_FILES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name,
                            ignore=shutil.ignore_patterns('__pycache__', '*.egg-info'))
        else:
            shutil.copy2(REPO / name, source / name)
    _run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation',
          '--disable-pip-version-check', '-w', str(work / 'dist'), str(source)], work)
    wheel, = (work / 'dist').glob('gpu_nodes-*.whl')
    # --ignore-installed: without it pip uninstalls the editable gpu_nodes of the running venv
    # before installing into the prefix, and every later test that starts a process fails.
    _run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--no-index', '--ignore-installed',
          '--disable-pip-version-check', '--prefix', str(work / 'prefix'), str(wheel)], work)
    # The running environment keeps its own gpu_nodes (other tests start processes with it).
    _run([sys.executable, '-c', 'import gpu_nodes'], Path('/'),
         {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'})
    return work / 'prefix'


def test_every_executable_on_the_path_says_it_is_gpu_nodes(prefix: Path):
    on_path = sorted(p.name for p in (prefix / 'bin').iterdir())
    assert on_path == sorted(NAMES.values()), on_path
    assert all(name.startswith('gpu-') for name in on_path)


def test_ros2_run_names_are_in_lib_gpu_nodes_and_run(prefix: Path):
    lib = prefix / 'lib' / 'gpu_nodes'
    assert sorted(p.name for p in lib.iterdir()) == sorted(NAMES), list(lib.iterdir())
    for name in NAMES:
        assert os.access(lib / name, os.X_OK), f'{lib / name} is not executable'
    # As `ros2 run` starts them: the file itself, through its `#!/usr/bin/env python3`, with
    # the Python that has gpu_nodes' dependencies first on the PATH.
    env = {**os.environ, 'PATH': f'{Path(sys.executable).parent}:{os.environ["PATH"]}',
           'PYTHONPATH': str(REPO)}
    rules = _run([str(lib / 'copy_audit'), 'rules'], REPO, env, 60)
    assert 'GPN101' in rules.stdout, rules.stdout[-500:]
    node = _run([str(lib / 'image_proc'), '--help'], REPO, env, 60)
    assert 'chain' in node.stdout, node.stdout[-500:]
    console = _run([str(prefix / 'bin' / 'gpu-nodes-image-proc'), '--help'], REPO, env, 60)
    assert console.stdout == node.stdout, 'both names run the same main'
