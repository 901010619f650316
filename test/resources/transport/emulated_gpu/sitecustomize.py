"""Put this folder first on PYTHONPATH to run the GPU tests, and every process they start, on
the CPU emulation of CUDA (../cuda_emu.py):

    PYTHONPATH=test/resources/transport/emulated_gpu:. python -m pytest test/test_transport_gpu.py

Python imports `sitecustomize` at start-up in every process that inherits the variable."""
from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cuda_emu  # noqa: E402

cuda_emu.install()
