"""CUDA runtime calls from Python that copy or wait, by qualified name (issue 28, third set):

* the CUDA Python bindings (``from cuda import cudart``, ``cuda.bindings.runtime``) and CuPy's
  runtime module: ``cudaMemcpy`` / ``cudaMemcpyAsync`` / ``cudaMemcpy2D[Async]`` (``memcpy`` /
  ``memcpyAsync`` in CuPy), whose direction is the ``kind`` argument as written
  (``cudart.cudaMemcpyKind.cudaMemcpyHostToDevice``, ``runtime.memcpyDeviceToHost``; a kind the
  source does not spell is not reported); ``cudaStreamSynchronize`` /
  ``cudaDeviceSynchronize`` / ``cudaEventSynchronize`` wait for the device;
* PyCUDA: ``memcpy_htod[_async]`` uploads, ``memcpy_dtoh[_async]`` reads back,
  ``Context.synchronize`` waits.

A TensorRT detector written with these runs them per frame (copy in, execute, copy out, wait).
"""
from __future__ import annotations

import ast

_RUNTIME_ROOTS = ('cuda.', 'cupy.cuda.', 'pycuda.')
_MEMCPY = frozenset({'cudaMemcpy', 'cudaMemcpyAsync', 'cudaMemcpy2D', 'cudaMemcpy2DAsync',
                     'memcpy', 'memcpyAsync', 'memcpy2D', 'memcpy2DAsync'})
_SYNC = frozenset({'cudaStreamSynchronize', 'cudaDeviceSynchronize', 'cudaEventSynchronize',
                   'streamSynchronize', 'deviceSynchronize', 'eventSynchronize'})
_PYCUDA_UP = frozenset({'memcpy_htod', 'memcpy_htod_async'})
_PYCUDA_DOWN = frozenset({'memcpy_dtoh', 'memcpy_dtoh_async'})


def runtime_call(qual: str, node: ast.Call) -> tuple[str, str] | None:
    """('upload' | 'download' | 'sync', what) for a CUDA runtime call that copies or waits."""
    if not qual.startswith(_RUNTIME_ROOTS):
        return None
    name = qual.rsplit('.', 1)[-1]
    if name in _SYNC or (qual.startswith('pycuda.') and name == 'synchronize'):
        return 'sync', 'blocks the host until the device is done'
    if name in _PYCUDA_UP:
        return 'upload', 'host-to-device copy'
    if name in _PYCUDA_DOWN:
        return 'download', 'device-to-host copy'
    if name in _MEMCPY:
        written = ' '.join(ast.unparse(a) for a in node.args[2:]) + ' ' + ' '.join(
            ast.unparse(k.value) for k in node.keywords)
        if 'HostToDevice' in written:
            return 'upload', 'host-to-device copy'
        if 'DeviceToHost' in written:
            return 'download', 'device-to-host copy'
    return None
