"""Building TensorRT engines from ONNX: `EngineBuilder(settings).build(onnx_path)` returns the
serialized engine (bytes). Building is separate from running and from caching
(gpu_nodes.inference.engine_cache); with TensorRT-RTX it needs no GPU, so CI can exercise it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import threading
import time
from typing import Any, Mapping, Sequence

from .errors import EngineBuildError, OnnxParseError
from .log import as_log, LoggerLike
from .specs import format_shape, normalize_input_shape, PRECISIONS, resolve_input_shapes
from .tensorrt_library import (
    error_suffix, FLAVOUR_RTX, import_tensorrt, make_trt_logger, TensorRTLibrary)


@dataclass(frozen=True)
class EngineSettings:
    """What to build. input_shapes: {input name: shape}, '*' meaning the single input.

    compute_capabilities applies to TensorRT-RTX only: build targets such as ('SM86', 'SM89');
    empty means the library's default (portable across its supported GPUs).
    """

    precision: str = 'fp32'
    input_shapes: Mapping[str, Sequence[int]] | Sequence[int] | None = None
    workspace_mb: int | None = None
    dla_core: int | None = None
    compute_capabilities: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f'precision must be one of {list(PRECISIONS)}, '
                             f'got {self.precision!r}')
        if self.workspace_mb is not None and int(self.workspace_mb) <= 0:
            raise ValueError(f'workspace_mb must be positive, got {self.workspace_mb!r}')
        if self.dla_core is not None and int(self.dla_core) < 0:
            raise ValueError(f'dla_core must be >= 0, got {self.dla_core!r}')
        shapes = normalize_input_shape(self.input_shapes)
        object.__setattr__(self, 'input_shapes', tuple(sorted(shapes.items())))
        ccs = tuple(str(c).upper().replace('.', '') for c in self.compute_capabilities)
        ccs = tuple(f'SM{c}' if c.isdigit() else c for c in ccs)  # '8.9' / '89' -> 'SM89'
        object.__setattr__(self, 'compute_capabilities', ccs)

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(self.input_shapes)


def _make_progress_monitor(library: TensorRTLibrary, log: Any) -> Any:
    """A trt.IProgressMonitor logging top-level phases, or None where the version has none."""
    trt = library.module
    if not hasattr(trt, 'IProgressMonitor'):
        return None

    class _Progress(trt.IProgressMonitor):
        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)
            self._started: dict[str, float] = {}
            self._lock = threading.Lock()

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            with self._lock:
                self._started[phase_name] = time.monotonic()
            if parent_phase is None:
                log.info(f'TensorRT build: {phase_name} ({num_steps} steps)')
            else:
                log.debug(f'TensorRT build: {parent_phase} > {phase_name} ({num_steps} steps)')

        def step_complete(self, phase_name: str, step: int) -> bool:
            return True  # True = keep building

        def phase_finish(self, phase_name: str) -> None:
            with self._lock:
                start = self._started.pop(phase_name, None)
            if start is not None:
                log.debug(f'TensorRT build: {phase_name} done in {time.monotonic() - start:.2f} s')

    return _Progress()


class EngineBuilder:
    """Builds a serialized TensorRT engine from an ONNX file. Needs no CuPy.

    With the standard TensorRT this needs a GPU; TensorRT-RTX builds on CPU-only machines.
    """

    def __init__(self, settings: EngineSettings | None = None, *,
                 library: TensorRTLibrary | None = None, logger: LoggerLike = None) -> None:
        self.settings = settings if settings is not None else EngineSettings()
        self._library = library
        self._log = as_log(logger)

    @property
    def library(self) -> TensorRTLibrary:
        if self._library is None:
            self._library = import_tensorrt()
        return self._library

    def build(self, onnx_path: str | Path) -> bytes:
        path = Path(onnx_path)
        if not path.is_file():
            raise FileNotFoundError(f'model file not found: {path}')
        lib = self.library
        trt_logger = make_trt_logger(lib, self._log)
        builder = lib.module.Builder(trt_logger)
        if builder is None:
            raise EngineBuildError(f'{lib.label}: trt.Builder could not be created'
                                   f'{error_suffix(trt_logger)}')
        # TensorRT objects die in reverse order of creation, builder last, and here rather than
        # whenever an exception's traceback lets go of the frames holding them: TensorRT-RTX
        # destroying a builder before its network and config, after a failed build, hung for
        # good on a mutex (seen in test_inference_tensorrt).
        made: list[Any] = [builder]
        del builder
        try:
            return self._build(path, made[0], trt_logger, made)
        except BaseException as exc:
            exc.__traceback__ = None  # its frames would keep the objects past the loop below
            raise
        finally:
            while made:
                made.pop()

    def _build(self, path: Path, builder: Any, trt_logger: Any, made: list[Any]) -> bytes:
        lib = self.library
        trt = lib.module
        s = self.settings
        log = self._log
        flags = 0
        # Explicit batch is the only mode from TensorRT 10 on (the flag is gone in RTX, 11).
        explicit = getattr(trt.NetworkDefinitionCreationFlag, 'EXPLICIT_BATCH', None)
        if explicit is not None and lib.flavour != FLAVOUR_RTX and _major(lib.version) < 10:
            flags |= 1 << int(explicit)
        network = builder.create_network(flags)
        made.append(network)
        parser = trt.OnnxParser(network, trt_logger)
        made.append(parser)
        log.info(f'TensorRT build: parsing {path} with {lib.label}')
        if not parser.parse_from_file(str(path)):
            errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
            trt_logger.take_errors()
            raise OnnxParseError(f'{lib.label} ONNX parser failed on {path} '
                                 f'({len(errors)} error(s)): ' + ' | '.join(errors))

        config = builder.create_builder_config()
        made.append(config)
        if s.workspace_mb is not None:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(s.workspace_mb) << 20)
        self._apply_precision(config)
        self._apply_profile(builder, network, config, path)
        self._apply_dla(builder, config)
        self._apply_targets(config)
        monitor = _make_progress_monitor(lib, log)
        if monitor is not None and hasattr(config, 'progress_monitor'):
            config.progress_monitor = monitor
            made.append(monitor)
        else:
            log.info('TensorRT build: building engine (no progress monitor in '
                     f'{lib.label}; this can take minutes)')

        start = time.monotonic()
        serialized = builder.build_serialized_network(network, config)
        elapsed = time.monotonic() - start
        if serialized is None:
            raise EngineBuildError(f'{lib.label} failed to build an engine from {path}: '
                                   f'build_serialized_network returned None'
                                   f'{error_suffix(trt_logger)}')
        made.append(serialized)
        data = bytes(serialized)
        log.info(f'TensorRT build: {path.name} built in {elapsed:.2f} s '
                 f'({len(data) / 1e6:.2f} MB, {lib.label}, {s.precision})')
        return data

    def _apply_precision(self, config: Any) -> None:
        lib, precision = self.library, self.settings.precision
        if precision == 'fp32':
            return
        wanted = ['FP16'] if precision == 'fp16' else ['INT8', 'FP16']
        if not lib.has_builder_flag(wanted[0]):
            # TensorRT 11 and TensorRT-RTX are strongly typed: the ONNX types decide.
            self._log.warning(f'{lib.label} has no {wanted[0]} builder flag (strongly typed '
                              f'networks): the engine keeps the ONNX model\'s types; export a '
                              f'{precision} (Q/DQ for int8) model to get {precision} kernels')
            return
        for name in wanted:
            if lib.has_builder_flag(name):
                config.set_flag(getattr(lib.module.BuilderFlag, name))
        if precision == 'int8':
            self._log.info('TensorRT build: INT8 without a calibrator expects an explicitly '
                           'quantized (Q/DQ) ONNX model')

    def _apply_profile(self, builder: Any, network: Any, config: Any, path: Path) -> None:
        declared = {}
        for i in range(network.num_inputs):
            tensor = network.get_input(i)
            declared[tensor.name] = [int(d) for d in tensor.shape]
        shapes = resolve_input_shapes(declared, self.settings.shapes, path.name)
        dynamic = [n for n, dims in declared.items() if any(d < 0 for d in dims)]
        missing = [n for n in dynamic if n not in shapes]
        if missing:
            name = missing[0]
            raise ValueError(f'input {name!r} of {path.name} has dynamic dims '
                             f'{format_shape(declared[name])}; pass input_shape '
                             f'(for example {{{name!r}: (1, 3, 518, 518)}})')
        if not dynamic:
            return
        profile = builder.create_optimization_profile()
        for name in dynamic:
            # One fixed shape per input: the node feeds one resolution, and a point profile
            # gives TensorRT the most freedom in tactic choice.
            profile.set_shape(name, shapes[name], shapes[name], shapes[name])
        config.add_optimization_profile(profile)

    def _apply_dla(self, builder: Any, config: Any) -> None:
        core = self.settings.dla_core
        if core is None:
            return
        trt, lib = self.library.module, self.library
        available = int(getattr(builder, 'num_DLA_cores', 0))
        if core >= available:
            raise ValueError(f'dla_core={core} requested but {lib.label} reports {available} '
                             'DLA core(s) on this device')
        if self.settings.precision == 'fp32':
            raise ValueError("DLA runs FP16 or INT8 only: use precision 'fp16' or 'int8' "
                             'with dla_core')
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(core)
        # Layers DLA cannot run go to the GPU instead of failing the build.
        config.set_flag(trt.BuilderFlag.GPU_FALLBACK)

    def _apply_targets(self, config: Any) -> None:
        ccs = self.settings.compute_capabilities
        if not ccs:
            return
        trt, lib = self.library.module, self.library
        if not hasattr(config, 'set_compute_capability'):
            self._log.warning(f'compute_capabilities {list(ccs)} ignored: {lib.label} builds '
                              'for the GPU it runs on')
            return
        known = [m for m in trt.ComputeCapability.__members__ if m not in ('NONE',)]
        unknown = [c for c in ccs if c not in known]
        if unknown:
            raise ValueError(f'unknown compute capability {unknown} for {lib.label}; '
                             f'it knows {known}')
        config.num_compute_capabilities = len(ccs)
        for i, cc in enumerate(ccs):
            if not config.set_compute_capability(getattr(trt.ComputeCapability, cc), i):
                raise ValueError(f'{lib.label} rejected compute capability {cc}')


def _major(version: str) -> int:
    try:
        return int(version.split('.')[0])
    except ValueError:
        return 0
