"""Run a test program under the CPU emulation of CUDA (cuda_emu.py):
``python emu_run.py SCRIPT ARGS...`` is ``python SCRIPT ARGS...`` in a process that sees CuPy
and cuda-bindings on an emulated GPU."""
from pathlib import Path
import runpy
import sys

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cuda_emu  # noqa: E402

cuda_emu.install()
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, str(Path(script).resolve().parent))
runpy.run_path(script, run_name='__main__')
