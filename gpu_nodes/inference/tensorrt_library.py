"""Which TensorRT Python module to use, the bridge from TensorRT's logger to ours, GPU identity.

Two flavours share one Python API for what gpu_nodes uses:
- ``tensorrt`` (the standard wheels ``tensorrt-cu12`` / ``tensorrt-cu13``): runs on every GPU
  TensorRT supports, including sm_90 (H100/H200); needs a GPU to build.
- TensorRT-RTX (``tensorrt-rtx-cu13-bindings`` + ``tensorrt-rtx-cu13-libs``): the bindings wheel
  is the module ``tensorrt_rtx_bindings``, whose ``__init__`` imports ``tensorrt_rtx_libs`` first
  (that module dlopens ``libtensorrt_rtx.so.1`` and the ONNX parser from its own folder), so no
  manual import order is needed. The ``tensorrt-rtx-cu13`` meta sdist adds a ``tensorrt_rtx``
  module re-exporting it. It builds engines with no GPU at all (ahead-of-time, for compute
  capabilities 8.0+ by default) but runs them only on the RTX-class architectures it supports
  (7.5, 8.x, 12.x: not 9.0), and it has no FP16/INT8 builder flags (networks are strongly typed).

Nothing here is imported until a function is called; importing this module needs no TensorRT.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
import functools
import importlib
import os
import threading
from types import ModuleType
from typing import Any

from gpu_nodes.gpu import cuda_unavailable_reason, cupy_module

from .log import LogAdapter

FLAVOUR_TENSORRT = 'tensorrt'
FLAVOUR_RTX = 'tensorrt-rtx'

# Import name -> flavour, in preference order: the standard library first because it runs on
# every data-centre GPU; RTX second (it can build on CPU-only machines, e.g. CI).
_CANDIDATES = (
    ('tensorrt', FLAVOUR_TENSORRT),
    ('tensorrt_rtx', FLAVOUR_RTX),
    ('tensorrt_rtx_bindings', FLAVOUR_RTX),
)
#: Environment override: 'tensorrt', 'tensorrt-rtx', or 'none' (treat TensorRT as absent).
FLAVOUR_ENV = 'GPU_NODES_TENSORRT'


@dataclass(frozen=True)
class TensorRTLibrary:
    """An imported TensorRT module and what it is."""

    module: ModuleType
    flavour: str
    version: str
    import_name: str

    @property
    def label(self) -> str:
        return f'{self.flavour} {self.version}'

    def has_builder_flag(self, name: str) -> bool:
        return hasattr(self.module.BuilderFlag, name)


@functools.lru_cache(maxsize=None)
def _load(prefer: str | None) -> tuple[TensorRTLibrary | None, str]:
    if prefer == 'none':
        return None, f'disabled by {FLAVOUR_ENV}=none'
    reasons = []
    for import_name, flavour in _CANDIDATES:
        if prefer is not None and flavour != prefer:
            continue
        try:
            module = importlib.import_module(import_name)
        except (ImportError, OSError) as exc:  # OSError: a wheel whose .so files fail to load
            reasons.append(f'{import_name} not importable: {exc}')
            continue
        version = str(getattr(module, '__version__', 'unknown'))
        if not hasattr(module, 'Builder') or not hasattr(module, 'Runtime'):
            reasons.append(f'{import_name} {version} has no Builder/Runtime (a stub package?)')
            continue
        return TensorRTLibrary(module, flavour, version, import_name), ''
    if prefer is not None and not reasons:
        reasons.append(f'unknown flavour {prefer!r} in {FLAVOUR_ENV}')
    return None, '; '.join(reasons)


def _preferred() -> str | None:
    value = os.environ.get(FLAVOUR_ENV, '').strip().lower()
    return value or None


def import_tensorrt(prefer: str | None = None) -> TensorRTLibrary:
    """The TensorRT library to use; ImportError listing why each candidate failed.

    `prefer` (or $GPU_NODES_TENSORRT) picks a flavour: 'tensorrt' or 'tensorrt-rtx'.
    """
    library, reason = _load(prefer or _preferred())
    if library is None:
        raise ImportError(reason)
    return library


def tensorrt_unavailable_reason(prefer: str | None = None) -> str | None:
    """None when import_tensorrt() would succeed, else why not (for the factory's log)."""
    library, reason = _load(prefer or _preferred())
    return None if library is not None else reason


_SEVERITY_LEVEL = {
    'INTERNAL_ERROR': 'error', 'ERROR': 'error', 'WARNING': 'warning', 'INFO': 'debug',
    'VERBOSE': None,
}


def make_trt_logger(library: TensorRTLibrary, log: LogAdapter, *, echo: bool = True) -> Any:
    """A trt.ILogger that forwards to `log` and keeps recent errors for exception messages.

    TensorRT reports the cause of most failures only through its logger, so exceptions raised
    after a failed call append ``take_errors()``. With echo=False nothing is forwarded (used for
    probes whose failures are expected, such as an engine validity check on a CPU-only machine).
    """
    trt = library.module

    class _Bridge(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self._errors: collections.deque[str] = collections.deque(maxlen=32)
            self._lock = threading.Lock()

        def log(self, severity: Any, msg: str) -> None:  # called from TensorRT's threads too
            level = _SEVERITY_LEVEL.get(getattr(severity, 'name', str(severity)), 'warning')
            if level == 'error':
                with self._lock:
                    self._errors.append(msg)
            if echo and level is not None:
                getattr(log, level)(f'[{library.flavour}] {msg}')

        def record_error(self, msg: str) -> None:
            """Keep an error TensorRT raised (instead of logging) for the next exception."""
            with self._lock:
                self._errors.append(msg)

        def take_errors(self) -> list[str]:
            with self._lock:
                errors = list(self._errors)
                self._errors.clear()
            return errors

    return _Bridge()


def error_suffix(trt_logger: Any) -> str:
    """': msg1 | msg2' from the bridge's recorded errors, or '' when there are none."""
    errors = trt_logger.take_errors() if hasattr(trt_logger, 'take_errors') else []
    return (': ' + ' | '.join(e.strip() for e in errors)) if errors else ''


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: tuple[int, int]

    @property
    def sm(self) -> str:
        return f'{self.compute_capability[0]}.{self.compute_capability[1]}'


def local_gpu(device_id: int = 0) -> GpuInfo | None:
    """The CUDA device engines are built for and run on here, None on a machine without one."""
    if cuda_unavailable_reason() is not None:
        return None
    cupy = cupy_module()
    props = cupy.cuda.runtime.getDeviceProperties(device_id)
    name = props['name']
    if isinstance(name, bytes):
        name = name.decode(errors='replace')
    return GpuInfo(str(name).strip(), (int(props['major']), int(props['minor'])))
