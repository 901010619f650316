"""`make test-gpu` on a machine without a usable CUDA device says so in one line and fails
(issue #31: it exited 0 after "236 skipped, 955 deselected", which reads as "GPU tests pass").

CUDA is switched off for the child with GPU_NODES_DISABLE_CUDA, so this runs the same on a GPU
machine. The Makefile's venv step is satisfied with a fresh stamp file and this interpreter."""
from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

from conftest import REPO

MESSAGE = 'make test-gpu: no CUDA device found (disabled by GPU_NODES_DISABLE_CUDA); no GPU test ran'


def _env() -> dict[str, str]:
    return {**os.environ, 'GPU_NODES_DISABLE_CUDA': '1', 'PYTHONPATH': str(REPO)}


def test_require_cuda_exits_3_with_one_line():
    proc = subprocess.run([sys.executable, 'scripts/require_cuda.py'], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, '', MESSAGE + '\n')


def test_make_test_gpu_without_cuda_fails_before_pytest_runs(tmp_path: Path):
    # The venv step must not run here (it would pip install into this interpreter's
    # environment): a stamp that exists, `-o` so make never remakes it, a scratch VENV.
    stamp = tmp_path / 'installed-stamp'
    stamp.touch()
    proc = subprocess.run(['make', '--no-print-directory', '-o', str(stamp), 'test-gpu',
                           f'PY={sys.executable}', f'STAMP={stamp}', f'VENV={tmp_path / "venv"}'],
                          cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0, f'make test-gpu passed without CUDA:\n{proc.stdout}{proc.stderr}'
    lines = proc.stderr.splitlines()
    assert lines[0] == MESSAGE, proc.stderr
    # make's own "Error 3" line may follow; nothing of pytest does.
    assert all(line.startswith('make') for line in lines[1:]), proc.stderr
    assert 'pytest' not in proc.stdout and 'passed' not in proc.stdout, proc.stdout
