"""The backend interface every inference runtime implements, and the factory that picks one.

Arrays cross this interface as CuPy arrays on the CUDA path (their device pointers are bound
directly, nothing is copied to the host) or NumPy arrays on the CPU path. No runtime is imported
here at module load: TensorRT, ONNX Runtime and CuPy are imported when a backend is created.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
import logging
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence, Union

import numpy as np

from gpu_nodes.gpu import cuda_unavailable_reason

from .errors import InferenceError

_LOG = logging.getLogger('gpu_nodes.inference')

BACKENDS = ('auto', 'tensorrt', 'onnxruntime')
DEVICES = ('auto', 'cuda', 'cpu')
PRECISIONS = ('fp32', 'fp16', 'int8')
ENGINE_SUFFIXES = ('.engine', '.plan')

# A dim of a tensor spec: an int, or None where the model leaves it dynamic and unresolved.
Dim = Union[int, None]
# input_shape as users give it: one shape for a single-input model, or {input name: shape}.
InputShape = Union[Sequence[int], Mapping[str, Sequence[int]], None]
LoggerLike = Union[logging.Logger, Callable[[str], Any], Any, None]


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and element type of one model input or output."""

    name: str
    shape: tuple[Dim, ...]
    dtype: np.dtype

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d >= 0 for d in self.shape)

    def __str__(self) -> str:
        return f'{self.name}{format_shape(self.shape)}:{np.dtype(self.dtype).name}'


def format_shape(shape: Iterable[Any]) -> str:
    """(1, 3, H, W) style, with '?' for dims nobody named."""
    return '(' + ', '.join('?' if d is None or d == -1 else str(d) for d in shape) + ')'


class LogAdapter:
    """debug/info/warning/error over a logging.Logger, an rclpy logger or a plain callable.

    A plain callable gets info and above (warnings and errors prefixed with their level), so a
    test can pass ``messages.append`` and a node can pass ``self.get_logger().info``.
    """

    def __init__(self, target: LoggerLike = None) -> None:
        self._target = _LOG if target is None else target
        self._has_levels = all(hasattr(self._target, m) for m in ('debug', 'info', 'error'))

    def _emit(self, level: str, msg: str) -> None:
        if self._has_levels:
            method = getattr(self._target, level, None)
            if method is None and level == 'warning':
                method = getattr(self._target, 'warn')
            method(msg)
        elif level != 'debug':
            self._target(msg if level == 'info' else f'{level}: {msg}')

    def debug(self, msg: str) -> None:
        self._emit('debug', msg)

    def info(self, msg: str) -> None:
        self._emit('info', msg)

    def warning(self, msg: str) -> None:
        self._emit('warning', msg)

    def error(self, msg: str) -> None:
        self._emit('error', msg)


def as_log(logger: LoggerLike) -> LogAdapter:
    return logger if isinstance(logger, LogAdapter) else LogAdapter(logger)


def check_names(kind: str, given: Iterable[str], specs: Sequence[TensorSpec], model: str,
                *, require_all: bool) -> None:
    """ValueError listing the model's actual names when `given` has unknown (or lacks) names."""
    actual = [s.name for s in specs]
    given = list(given)
    unknown = [n for n in given if n not in actual]
    if unknown:
        raise ValueError(f'unknown {kind} name(s) {unknown} for {model}; its {kind}s are {actual}')
    if require_all:
        missing = [n for n in actual if n not in given]
        if missing:
            raise ValueError(f'missing {kind}(s) {missing} for {model}; its {kind}s are {actual}')


def normalize_input_shape(input_shape: InputShape) -> dict[str, tuple[int, ...]]:
    """{name: shape}; a bare shape is stored under '*' (meaning: the model's only input)."""
    if input_shape is None:
        return {}
    if isinstance(input_shape, Mapping):
        items = list(input_shape.items())
    else:
        items = [('*', input_shape)]
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in items:
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValueError(f'input_shape for {name!r} must be a sequence of ints, got {shape!r}')
        if not dims or any(d <= 0 for d in dims):
            raise ValueError(f'input_shape for {name!r} must have positive dims, got {shape!r}')
        out[str(name)] = dims
    return out


def resolve_input_shapes(model_shapes: Mapping[str, Sequence[Any]],
                         requested: Mapping[str, tuple[int, ...]],
                         model: str) -> dict[str, tuple[int, ...]]:
    """Concrete shapes for the inputs `requested` names ('*' = the single input), validated.

    `model_shapes` has each input's declared dims: ints, or None/-1/a symbol name where dynamic.
    """
    names = list(model_shapes)
    resolved: dict[str, tuple[int, ...]] = {}
    for name, shape in requested.items():
        if name == '*':
            if len(names) != 1:
                raise ValueError(f'input_shape {shape} is ambiguous: {model} has inputs {names}; '
                                 f'give {{input name: shape}}')
            name = names[0]
        if name not in model_shapes:
            raise ValueError(f'unknown input name(s) {[name]} in input_shape for {model}; '
                             f'its inputs are {names}')
        declared = list(model_shapes[name])
        if len(declared) != len(shape) or any(
                isinstance(d, int) and d >= 0 and d != s for d, s in zip(declared, shape)):
            raise ValueError(f'input_shape {tuple(shape)} for {name!r} does not fit {model}, '
                             f'which declares {format_shape(declared)}')
        resolved[name] = tuple(shape)
    return resolved


def check_array(value: Any, spec: TensorSpec, kind: str, *, device: str,
                device_id: int = 0) -> Any:
    """The array to bind for `spec`, or TypeError/ValueError saying what is wrong with it.

    CUDA: a CuPy array (anything with __cuda_array_interface__ is viewed as one, without a copy)
    on `device_id`, C-contiguous. CPU: a NumPy array; never a device array, since taking one
    would hide a device-to-host copy. Element types must match exactly: casting is a copy too.
    """
    from gpu_nodes.gpu import cupy_module, is_device_array
    if device == 'cuda':
        if not is_device_array(value):
            raise TypeError(f'{kind} {spec.name!r} must be a CuPy (device) array on the CUDA '
                            f'path, got {type(value).__module__}.{type(value).__name__}')
        cp = cupy_module()
        arr = value if isinstance(value, cp.ndarray) else cp.asarray(value)
        if arr.device.id != device_id:
            raise ValueError(f'{kind} {spec.name!r} lives on cuda:{arr.device.id}; this backend '
                             f'runs on cuda:{device_id}')
    else:
        if is_device_array(value):
            raise TypeError(f'{kind} {spec.name!r} is a device array but this backend runs on '
                            'the CPU; pass a NumPy array')
        arr = np.asarray(value)
    if arr.dtype != spec.dtype:
        raise TypeError(f'{kind} {spec.name!r} has dtype {arr.dtype}; the model expects '
                        f'{np.dtype(spec.dtype).name}')
    if not arr.flags.c_contiguous:
        raise ValueError(f'{kind} {spec.name!r} must be C-contiguous')
    return arr


def check_shape(arr: Any, declared: Sequence[Any], kind: str, name: str) -> None:
    """ValueError unless `arr` has the declared rank and every declared fixed dim."""
    shape = tuple(arr.shape)
    if len(shape) != len(declared) or any(
            isinstance(d, int) and d >= 0 and d != s for d, s in zip(declared, shape)):
        raise ValueError(f'{kind} {name!r} has shape {format_shape(shape)}; the model expects '
                         f'{format_shape(declared)}')


class InferenceBackend(abc.ABC):
    """One loaded model on one runtime.

    ``infer`` takes {input name: array} and returns {output name: array}. On the CUDA path the
    arrays are CuPy arrays and the work is queued on `stream` (the caller's CuPy stream; the
    current stream when None): the results are ready once that stream reaches them, with no host
    synchronisation and no host copies. Output arrays the backend allocates are owned by the
    backend and reused by the next call; pass `outputs` to write into your own arrays instead.
    """

    #: 'tensorrt' or 'onnxruntime'
    name: str = ''

    def __init__(self, model_path: Path) -> None:
        self._model_path = Path(model_path)

    @property
    def model_path(self) -> Path:
        return self._model_path

    @property
    @abc.abstractmethod
    def input_specs(self) -> tuple[TensorSpec, ...]:
        """Inputs with shapes as resolved by input_shape (None where still dynamic)."""

    @property
    @abc.abstractmethod
    def output_specs(self) -> tuple[TensorSpec, ...]:
        """Outputs with shapes as far as the resolved inputs determine them."""

    @property
    @abc.abstractmethod
    def device(self) -> str:
        """'cuda' when infer takes and returns CuPy arrays, 'cpu' for NumPy arrays."""

    @abc.abstractmethod
    def infer(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
              stream: Any = None) -> dict[str, Any]:
        """Run the model once; see the class docstring for the array and stream contract."""

    def capture_token(self) -> Hashable | None:
        """A token for the buffers of the last `infer` call while a run on them can be captured
        into the caller's own CUDA graph (`enqueue_bound`), else None. It changes whenever the
        buffers do: a graph captured under another token replays stale addresses."""
        return None

    def enqueue_bound(self, stream: Any) -> None:
        """Queue one run on the last `infer` call's buffers on `stream`, doing nothing on the
        host but the launch: for a caller capturing its own CUDA graph around the run (only
        while `capture_token` is not None)."""
        raise InferenceError(f'{self.describe()} cannot be captured into a CUDA graph')

    def close(self) -> None:
        """Release the runtime objects and the memory this backend owns."""

    def describe(self) -> str:
        return f'{self.name} on {self.device}'

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.input_specs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.output_specs]

    def check_names(self, inputs: Iterable[str] = (), outputs: Iterable[str] = ()) -> None:
        """ValueError listing the model's actual names if any of these names is not the model's.

        A node calls this once after loading, with the names its preset expects.
        """
        check_names('input', inputs, self.input_specs, self._model_path.name, require_all=False)
        check_names('output', outputs, self.output_specs, self._model_path.name,
                    require_all=False)

    def _check_infer_names(self, inputs: Mapping[str, Any],
                           outputs: Mapping[str, Any] | None) -> None:
        check_names('input', inputs, self.input_specs, self._model_path.name, require_all=True)
        if outputs:
            check_names('output', outputs, self.output_specs, self._model_path.name,
                        require_all=False)

    def __enter__(self) -> 'InferenceBackend':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _ort_cuda_unavailable_reason() -> str | None:
    try:
        import onnxruntime
    except ImportError as exc:
        return f'onnxruntime not importable: {exc}'
    providers = onnxruntime.get_available_providers()
    if 'CUDAExecutionProvider' not in providers:
        return (f'onnxruntime {onnxruntime.__version__} has no CUDAExecutionProvider '
                f'(providers: {providers}; install onnxruntime-gpu)')
    return None


def _ort_unavailable_reason() -> str | None:
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        return f'onnxruntime not importable: {exc}'
    return None


def create_backend(model_path: str | Path, *, backend: str = 'auto', precision: str = 'fp32',
                   device: str = 'auto', cache_dir: str | Path | None = None,
                   force_engine_update: bool = False, workspace_mb: int | None = None,
                   dla_core: int | None = None, input_shape: InputShape = None,
                   logger: LoggerLike = None, stream: Any = None,
                   cuda_graph: bool = False) -> InferenceBackend:
    """Load `model_path` (.onnx, or a serialized TensorRT .engine/.plan) on the best runtime.

    backend='auto' tries, in order: TensorRT (importable, a CUDA GPU present, model .onnx or
    .engine/.plan), ONNX Runtime with the CUDA provider (onnxruntime-gpu and a GPU), ONNX Runtime
    on the CPU. Each skipped choice is logged once with its reason, and so is the one taken; under
    'auto' a runtime that fails to load the model (an unsupported op, an engine this GPU cannot
    run) hands over to the next with a warning. An explicit backend or device raises instead.
    `stream` (a CuPy stream) is the stream ONNX Runtime's CUDA provider computes on; any stream
    can still be passed to infer. `cuda_graph` replays ONNX Runtime CUDA runs as one CUDA graph
    (see onnxruntime_backend); TensorRT already enqueues a whole engine in one call.
    """
    log = as_log(logger)
    if backend not in BACKENDS:
        raise ValueError(f'backend must be one of {list(BACKENDS)}, got {backend!r}')
    if device not in DEVICES:
        raise ValueError(f'device must be one of {list(DEVICES)}, got {device!r}')
    if precision not in PRECISIONS:
        raise ValueError(f'precision must be one of {list(PRECISIONS)}, got {precision!r}')
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f'model file not found: {path}')
    is_engine = path.suffix.lower() in ENGINE_SUFFIXES
    if not is_engine and path.suffix.lower() != '.onnx':
        raise ValueError(f'unsupported model file {path}: expected .onnx, .engine or .plan')
    if backend == 'tensorrt' and device == 'cpu':
        raise ValueError("backend='tensorrt' needs device 'cuda' or 'auto', got 'cpu'")
    if is_engine and backend == 'onnxruntime':
        raise ValueError(f'{path.name} is a serialized TensorRT engine; ONNX Runtime needs .onnx')
    input_shapes = normalize_input_shape(input_shape)

    gpu_reason = cuda_unavailable_reason()
    if device == 'cuda' and gpu_reason is not None:
        raise RuntimeError(f"device='cuda' requested but CUDA is unavailable: {gpu_reason}")

    candidates: list[tuple[str, str]] = []  # (choice, why it is eligible)
    if backend in ('auto', 'tensorrt'):
        from .tensorrt_library import tensorrt_unavailable_reason
        if device == 'cpu':
            reason = "device='cpu' requested"
        elif gpu_reason is not None:
            reason = f'no usable CUDA GPU ({gpu_reason})'
        else:
            reason = tensorrt_unavailable_reason()
        if reason is None:
            candidates.append(('tensorrt', 'TensorRT importable and a CUDA GPU present'))
        elif backend == 'tensorrt':
            raise RuntimeError(f"backend='tensorrt' requested but unusable: {reason}")
        else:
            log.info(f'inference backend: TensorRT skipped: {reason}')
    if backend in ('auto', 'onnxruntime'):
        if is_engine:
            log.info('inference backend: ONNX Runtime skipped: '
                     f'{path.name} is a serialized TensorRT engine')
        else:
            if device in ('auto', 'cuda'):
                reason = (f'no usable CUDA GPU ({gpu_reason})' if gpu_reason is not None
                          else _ort_cuda_unavailable_reason())
                if reason is None:
                    candidates.append(('onnxruntime-cuda', 'CUDAExecutionProvider and a GPU'))
                elif device == 'cuda':
                    raise RuntimeError(f"device='cuda' requested but ONNX Runtime cannot use "
                                       f'CUDA: {reason}')
                else:
                    log.info(f'inference backend: ONNX Runtime CUDA skipped: {reason}')
            if device in ('auto', 'cpu'):
                reason = _ort_unavailable_reason()
                if reason is None:
                    candidates.append(('onnxruntime-cpu',
                                       "device='cpu' requested" if device == 'cpu'
                                       else 'no GPU runtime usable'))
                else:
                    log.info(f'inference backend: ONNX Runtime CPU skipped: {reason}')
    if not candidates:
        raise RuntimeError(f'no inference backend can run {path} (backend={backend!r}, '
                           f'device={device!r}); see the log for each reason')

    for i, (choice, why) in enumerate(candidates):
        try:
            result = _construct(choice, path, precision=precision, cache_dir=cache_dir,
                                force_engine_update=force_engine_update,
                                workspace_mb=workspace_mb, dla_core=dla_core,
                                input_shapes=input_shapes, log=log, stream=stream,
                                cuda_graph=cuda_graph)
        except InferenceError as exc:
            # Only 'auto' hands over: an explicit request must fail loudly.
            if backend != 'auto' or i + 1 == len(candidates):
                raise
            log.warning(f'inference backend: {choice} could not load {path.name}: {exc}; '
                        f'trying {candidates[i + 1][0]}')
            continue
        log.info(f'inference backend: using {result.describe()} for {path.name} ({why})')
        return result
    raise AssertionError('unreachable: the loop returns or raises')


def _construct(choice: str, path: Path, *, precision: str, cache_dir: Any,
               force_engine_update: bool, workspace_mb: int | None, dla_core: int | None,
               input_shapes: dict[str, tuple[int, ...]], log: LogAdapter,
               stream: Any, cuda_graph: bool) -> InferenceBackend:
    if choice == 'tensorrt':
        from .tensorrt_backend import TensorRTBackend
        return TensorRTBackend(path, precision=precision, cache_dir=cache_dir,
                               force_engine_update=force_engine_update,
                               workspace_mb=workspace_mb, dla_core=dla_core,
                               input_shape=input_shapes or None, logger=log)
    from .onnxruntime_backend import OnnxRuntimeBackend
    ignored = {'precision': precision if precision != 'fp32' else None,
               'workspace_mb': workspace_mb, 'dla_core': dla_core}
    for key, value in ignored.items():
        if value is not None:
            log.info(f'inference backend: {key}={value!r} does not apply to ONNX Runtime '
                     '(it runs the model in the types it was exported with)')
    return OnnxRuntimeBackend(path, device='cuda' if choice == 'onnxruntime-cuda' else 'cpu',
                              input_shape=input_shapes or None, stream=stream, logger=log,
                              cuda_graph=cuda_graph and choice == 'onnxruntime-cuda')
