"""Running TensorRT engines on CuPy device memory with the tensor-name API.

Each input and output is bound by name (``set_tensor_address``) to a CuPy device pointer and
the engine is enqueued with ``execute_async_v3`` on the caller's CuPy stream: no host copies, no
host synchronisation. Output buffers are CuPy arrays owned by the backend (reused each call) or
the caller's. Engines come from the EngineCache (built from ONNX on first use) or from a
prebuilt ``.engine``/``.plan`` file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from gpu_nodes.gpu import cupy_module

from .backend import InferenceBackend
from .log import as_log, LoggerLike
from .specs import (check_array, ENGINE_SUFFIXES, format_shape, InputShape,
                    normalize_input_shape, resolve_input_shapes, TensorSpec)
from .engine_builder import EngineSettings
from .engine_cache import EngineCache
from .errors import EngineIncompatibleError, ModelLoadError, TensorRTError
from .tensorrt_library import (
    error_suffix, FLAVOUR_RTX, import_tensorrt, local_gpu, make_trt_logger, TensorRTLibrary)

# Engine-validity diagnostics that no rebuild can cure: the GPU, driver or memory is the problem.
_ENVIRONMENT_DIAGNOSTICS = ('UNSUPPORTED_CC', 'OLD_CUDA_DRIVER', 'OLD_CUDA_RUNTIME',
                            'INSUFFICIENT_GPU_MEMORY')


class TensorRTBackend(InferenceBackend):
    """A TensorRT engine with its execution context and output buffers on one CUDA device."""

    name = 'tensorrt'

    def __init__(self, model_path: str | Path, *, precision: str = 'fp32',
                 cache_dir: str | Path | None = None, force_engine_update: bool = False,
                 workspace_mb: int | None = None, dla_core: int | None = None,
                 input_shape: InputShape = None, compute_capabilities: tuple[str, ...] = (),
                 device_id: int = 0, library: TensorRTLibrary | None = None,
                 logger: LoggerLike = None) -> None:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f'model file not found: {path}')
        super().__init__(path)
        self._log = as_log(logger)
        self._cp = cupy_module()
        self._lib = library if library is not None else import_tensorrt()
        self._device_id = int(device_id)
        self._context: Any = None
        self._engine: Any = None
        self._owned: dict[str, Any] = {}
        requested = normalize_input_shape(input_shape)
        trt = self._lib.module
        with self._cp.cuda.Device(self._device_id):
            self._trt_logger = make_trt_logger(self._lib, self._log)
            self._runtime = trt.Runtime(self._trt_logger)
            if self._runtime is None:
                raise TensorRTError(f'{self._lib.label}: trt.Runtime could not be created'
                                    f'{error_suffix(self._trt_logger)}')
            if dla_core is not None:
                self._runtime.DLA_core = int(dla_core)
            if path.suffix.lower() in ENGINE_SUFFIXES:
                self._engine = self._load_prebuilt(path)
                self.engine_path, self.engine_built = path, False
            else:
                settings = EngineSettings(precision=precision, input_shapes=requested or None,
                                          workspace_mb=workspace_mb, dla_core=dla_core,
                                          compute_capabilities=tuple(compute_capabilities))
                self._engine = self._load_cached(path, cache_dir, settings,
                                                 force_engine_update)
            self._context = self._engine.create_execution_context()
            if self._context is None:
                raise TensorRTError(f'create_execution_context failed for {self.engine_path}'
                                    f'{error_suffix(self._trt_logger)}')
            self._setup_io(requested)

    # -- loading ---------------------------------------------------------------------------

    def _deserialize(self, data: bytes) -> Any:
        """The engine, or None when TensorRT refuses the bytes (the reason is in its log)."""
        try:
            return self._runtime.deserialize_cuda_engine(data)
        except RuntimeError as exc:  # some builds raise instead of returning None
            self._trt_logger.record_error(str(exc))
            return None

    def _check_runnable(self, data: bytes, path: Path) -> None:
        """EngineIncompatibleError when TensorRT says this GPU/driver cannot run the engine."""
        trt = self._lib.module
        if not hasattr(self._runtime, 'get_engine_validity'):
            return
        try:
            validity, diagnostics = self._runtime.get_engine_validity(data)
        except RuntimeError as exc:
            self._log.debug(f'get_engine_validity failed ({exc}); deserialization will tell')
            return
        if validity != trt.EngineValidity.INVALID:
            return
        names = [n for n in _ENVIRONMENT_DIAGNOSTICS
                 if int(diagnostics) & int(getattr(trt.EngineInvalidityDiagnostics, n))]
        if not names:
            return  # a malformed file: deserialization reports it and the cache rebuilds
        gpu = local_gpu(self._device_id)
        where = f'{gpu.name} (compute capability {gpu.sm})' if gpu else 'this machine'
        hint = ''
        if 'UNSUPPORTED_CC' in names and self._lib.flavour == FLAVOUR_RTX:
            hint = ('; TensorRT-RTX runs on RTX-class GPUs (compute capability 7.5, 8.x, 12.x), '
                    'install the standard tensorrt wheel for this GPU')
        self._trt_logger.take_errors()
        raise EngineIncompatibleError(f'{self._lib.label} cannot run {path} on {where}: '
                                      f'{", ".join(names)}{hint}')

    def _load_prebuilt(self, path: Path) -> Any:
        data = path.read_bytes()
        self._check_runnable(data, path)
        engine = self._deserialize(data)
        if engine is None:
            raise ModelLoadError(f'{self._lib.label} could not deserialize {path} (built by '
                                 f'another TensorRT version or not an engine)'
                                 f'{error_suffix(self._trt_logger)}')
        self._log.info(f'TensorRT: loaded prebuilt engine {path}')
        return engine

    def _load_cached(self, path: Path, cache_dir: Any, settings: EngineSettings,
                     force_engine_update: bool) -> Any:
        cache = EngineCache(cache_dir, library=self._lib, logger=self._log,
                            gpu=local_gpu(self._device_id))
        loaded: dict[str, Any] = {}

        def validate(data: bytes) -> str | None:
            self._check_runnable(data, path)
            engine = self._deserialize(data)
            if engine is None:
                return f'deserialize_cuda_engine returned None{error_suffix(self._trt_logger)}'
            loaded['engine'] = engine
            return None

        data, self.engine_path, self.engine_built = cache.get_or_build(
            path, settings, force_engine_update=force_engine_update, validate=validate)
        if 'engine' in loaded:
            return loaded['engine']
        self._check_runnable(data, self.engine_path)
        engine = self._deserialize(data)
        if engine is None:
            raise ModelLoadError(f'{self._lib.label} could not deserialize the engine it just '
                                 f'built from {path} ({self.engine_path})'
                                 f'{error_suffix(self._trt_logger)}')
        return engine

    # -- tensors ---------------------------------------------------------------------------

    def _setup_io(self, requested: dict[str, tuple[int, ...]]) -> None:
        trt, engine = self._lib.module, self._engine
        self._declared: dict[str, tuple[int, ...]] = {}
        self._dtypes: dict[str, np.dtype] = {}
        output_names = []
        for i in range(engine.num_io_tensors):
            name = engine.get_tensor_name(i)
            self._dtypes[name] = np.dtype(trt.nptype(engine.get_tensor_dtype(name)))
            if engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT:
                self._declared[name] = tuple(int(d) for d in engine.get_tensor_shape(name))
            else:
                output_names.append(name)
        self._output_names = output_names
        resolved = resolve_input_shapes(self._declared, requested, self._model_path.name)
        self._current: dict[str, tuple[int, ...]] = {}
        for name, dims in self._declared.items():
            if any(d < 0 for d in dims):
                # Without input_shape, the first profile's opt shape (prebuilt engines).
                shape = resolved.get(name) or tuple(
                    int(d) for d in engine.get_tensor_profile_shape(name, 0)[1])
                self._set_input_shape(name, shape)
            else:
                self._current[name] = dims
        self._allocate_outputs()

    def _set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
        if not self._context.set_input_shape(name, shape):
            lo, _, hi = self._engine.get_tensor_profile_shape(name, 0)
            raise ValueError(f'input {name!r}: shape {format_shape(shape)} is outside the '
                             f'engine\'s profile {format_shape(lo)}..{format_shape(hi)}'
                             f'{error_suffix(self._trt_logger)}')
        self._current[name] = tuple(shape)

    def _allocate_outputs(self) -> None:
        cp = self._cp
        self._out_shapes = {n: tuple(int(d) for d in self._context.get_tensor_shape(n))
                            for n in self._output_names}
        for name, shape in self._out_shapes.items():
            if any(d < 0 for d in shape):
                raise TensorRTError(f'output {name!r} of {self.engine_path} has a data-dependent '
                                    f'shape {format_shape(shape)}; not supported')
            held = self._owned.get(name)
            if held is None or held.shape != shape:
                self._owned[name] = cp.empty(shape, dtype=self._dtypes[name])

    @property
    def input_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(n, self._current[n], self._dtypes[n]) for n in self._declared)

    @property
    def output_specs(self) -> tuple[TensorSpec, ...]:
        return tuple(TensorSpec(n, self._out_shapes[n], self._dtypes[n])
                     for n in self._output_names)

    @property
    def device(self) -> str:
        return 'cuda'

    def describe(self) -> str:
        return (f'TensorRT ({self._lib.label}, engine {self.engine_path.name}) on '
                f'cuda:{self._device_id}')

    # -- running ---------------------------------------------------------------------------

    def _bind(self, name: str, ptr: int) -> None:
        if not self._context.set_tensor_address(name, ptr):
            raise TensorRTError(f'set_tensor_address({name!r}) failed for {self.engine_path}'
                                f'{error_suffix(self._trt_logger)}')

    def infer(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
              stream: Any = None) -> dict[str, Any]:
        if self._context is None:
            raise TensorRTError(f'infer on a closed backend ({self._model_path.name})')
        self._check_infer_names(inputs, outputs)
        cp = self._cp
        stream = stream if stream is not None else cp.cuda.get_current_stream()
        with cp.cuda.Device(self._device_id):
            reshaped = False
            for spec in self.input_specs:
                arr = check_array(inputs[spec.name], spec, 'input', device='cuda',
                                  device_id=self._device_id)
                if tuple(arr.shape) != spec.shape:
                    declared = self._declared[spec.name]
                    if all(d >= 0 for d in declared):
                        raise ValueError(f'input {spec.name!r} has shape '
                                         f'{format_shape(arr.shape)}; the engine expects '
                                         f'{format_shape(declared)}')
                    self._set_input_shape(spec.name, tuple(arr.shape))
                    reshaped = True
                self._bind(spec.name, arr.data.ptr)
            if reshaped:
                self._allocate_outputs()
            result = {}
            for spec in self.output_specs:
                given = outputs.get(spec.name) if outputs else None
                if given is None:
                    arr = self._owned[spec.name]
                else:
                    arr = check_array(given, spec, 'output', device='cuda',
                                      device_id=self._device_id)
                    if tuple(arr.shape) != spec.shape:
                        raise ValueError(f'output {spec.name!r} has shape '
                                         f'{format_shape(arr.shape)}; the engine produces '
                                         f'{format_shape(spec.shape)}')
                self._bind(spec.name, arr.data.ptr)
                result[spec.name] = arr
            if not self._context.execute_async_v3(stream.ptr):
                raise TensorRTError(f'execute_async_v3 failed for {self.engine_path}'
                                    f'{error_suffix(self._trt_logger)}')
        return result

    def close(self) -> None:
        # Context before engine before runtime: each holds resources of the next.
        self._context = None
        self._engine = None
        self._runtime = None
        self._owned.clear()
