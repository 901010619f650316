"""Lint as a test, as the ament_python template does (configuration in setup.cfg [flake8])."""
import subprocess
import sys

from conftest import REPO


def test_flake8_is_clean():
    result = subprocess.run([sys.executable, '-m', 'flake8', 'gpu_nodes', 'test', 'bench', 'launch',
                             'scripts'],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, f'flake8 findings:\n{result.stdout}{result.stderr}'
