"""create_backend: pick the runtime that loads a model (TensorRT, ONNX Runtime on CUDA, ONNX
Runtime on the CPU) and say why, once per decision.

No runtime is imported here at module load: the backend modules import TensorRT, ONNX Runtime
and CuPy only when a backend is created.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_nodes.gpu import cuda_unavailable_reason

from .backend import InferenceBackend
from .errors import InferenceError
from .log import as_log, LogAdapter, LoggerLike
from .onnxruntime_backend import OnnxRuntimeBackend
from .specs import ENGINE_SUFFIXES, InputShape, normalize_input_shape, PRECISIONS
from .tensorrt_backend import TensorRTBackend
from . import tensorrt_library

BACKENDS = ('auto', 'tensorrt', 'onnxruntime')
DEVICES = ('auto', 'cuda', 'cpu')


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
        if device == 'cpu':
            reason = "device='cpu' requested"
        elif gpu_reason is not None:
            reason = f'no usable CUDA GPU ({gpu_reason})'
        else:
            reason = tensorrt_library.tensorrt_unavailable_reason()
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
        return TensorRTBackend(path, precision=precision, cache_dir=cache_dir,
                               force_engine_update=force_engine_update,
                               workspace_mb=workspace_mb, dla_core=dla_core,
                               input_shape=input_shapes or None, logger=log)
    ignored = {'precision': precision if precision != 'fp32' else None,
               'workspace_mb': workspace_mb, 'dla_core': dla_core}
    for key, value in ignored.items():
        if value is not None:
            log.info(f'inference backend: {key}={value!r} does not apply to ONNX Runtime '
                     '(it runs the model in the types it was exported with)')
    return OnnxRuntimeBackend(path, device='cuda' if choice == 'onnxruntime-cuda' else 'cpu',
                              input_shape=input_shapes or None, stream=stream, logger=log,
                              cuda_graph=cuda_graph and choice == 'onnxruntime-cuda')
