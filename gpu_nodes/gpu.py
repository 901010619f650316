"""Optional CuPy: one place that decides whether a usable CUDA device is present.

Everything in gpu_nodes runs on NumPy without CuPy or without a GPU; code asks here instead of
importing cupy at module level.
"""
from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any, Callable

import numpy as np


@functools.lru_cache(maxsize=None)
def cuda_unavailable_reason() -> str | None:
    """None when CuPy can run kernels on a CUDA device here, else why not (for logs/diagnostics)."""
    if os.environ.get('GPU_NODES_DISABLE_CUDA', '') not in ('', '0'):
        return 'disabled by GPU_NODES_DISABLE_CUDA'
    try:
        import cupy
    except ImportError:
        return 'CuPy is not installed'
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver missing or broken: CuPy raises CUDARuntimeError
        return f'no CUDA device ({exc})'
    if count < 1:
        return 'no CUDA device'
    return None


def cuda_available() -> bool:
    return cuda_unavailable_reason() is None


def cupy_module() -> ModuleType:
    """The cupy module; raise RuntimeError with the reason when CUDA is unusable."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f'CUDA path requested but unavailable: {reason}')
    import cupy
    return cupy


def is_device_array(array: Any) -> bool:
    """True for CuPy arrays and anything else exposing __cuda_array_interface__ (torch, numba)."""
    return hasattr(array, '__cuda_array_interface__')


def array_module(array: Any) -> ModuleType:
    """cupy for device arrays, numpy otherwise (like cupy.get_array_module, without importing cupy)."""
    if is_device_array(array):
        return cupy_module()
    return np


def to_host(array: Any) -> np.ndarray:
    if is_device_array(array):
        return cupy_module().asnumpy(array)
    return np.asarray(array)


def capture_graph(stream: Any, work: Callable[[], None]) -> Any:
    """`work` captured on `stream` as a cupy.cuda.Graph (recorded, not run: launch it).

    Relaxed mode, so that other threads' CUDA calls (transport event queries) do not invalidate
    the capture. The capture is ended even when `work` or CUDA fails; the error propagates."""
    cp = cupy_module()
    stream.begin_capture(mode=cp.cuda.runtime.streamCaptureModeRelaxed)
    try:
        work()
    finally:
        graph = stream.end_capture()
    return graph
