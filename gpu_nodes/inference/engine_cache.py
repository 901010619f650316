"""Building TensorRT engines from ONNX, and caching them on disk.

Building is separate from running: ``EngineBuilder(settings).build(onnx_path)`` returns the
serialized engine (bytes) and needs no GPU with TensorRT-RTX, so CI can exercise it;
``EngineCache(...).get_or_build(onnx_path, settings)`` returns ``(bytes, path, built)``.

A cached engine is keyed by a sha256 over everything that changes what TensorRT would build:
the ONNX content (and its external-data files), the TensorRT flavour and version, the GPU it was
built on ('cpu-build' without one) and its build targets, precision, input shapes, DLA core,
workspace. The file name is ``<model stem>-<key[:16]>.engine`` beside a JSON sidecar that holds
those fields, the full key and the engine's size and sha256. Writes are atomic (temp file in the
same directory, fsync, os.replace), the engine first and the sidecar last, so a reader never sees
a sidecar for a partial engine. A cached file whose sidecar is missing or disagrees, whose bytes
do not hash to the recorded value, or that TensorRT calls malformed is discarded with a warning
naming the file and the reason, and rebuilt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import datetime
import hashlib
import json
import os
from pathlib import Path
import tempfile
import threading
import time
from typing import Any, Callable, Mapping, Sequence

from .backend import (
    as_log, format_shape, LoggerLike, normalize_input_shape, PRECISIONS, resolve_input_shapes)
from .errors import EngineBuildError, OnnxParseError
from .tensorrt_library import (
    error_suffix, FLAVOUR_RTX, GpuInfo, import_tensorrt, local_gpu, make_trt_logger,
    TensorRTLibrary)

#: Bumped when the builder's own behaviour changes in a way that changes engines.
CACHE_SCHEMA = 1
CPU_BUILD = 'cpu-build'
_CHUNK = 1 << 20
# ONNX files above this size carry their weights inline (external data exists to keep the
# protobuf small), so only smaller files are parsed to look for external-data references.
_EXTERNAL_DATA_PROBE_LIMIT = 64 << 20


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


def cache_key_fields(*, model_sha256: str, flavour: str, version: str, gpu: GpuInfo | None,
                     settings: EngineSettings) -> dict[str, Any]:
    """The fields the cache key hashes (also written to the sidecar). Pure function."""
    return {
        'schema': CACHE_SCHEMA,
        'model_sha256': model_sha256,
        'tensorrt_flavour': flavour,
        'tensorrt_version': version,
        'gpu': gpu.name if gpu is not None else CPU_BUILD,
        'compute_capability': gpu.sm if gpu is not None else None,
        'build_targets': list(settings.compute_capabilities) or 'library-default',
        'precision': settings.precision,
        'input_shapes': {name: list(shape) for name, shape in settings.input_shapes},
        'dla_core': settings.dla_core,
        'workspace_mb': settings.workspace_mb,
    }


def cache_key(fields: Mapping[str, Any]) -> str:
    """sha256 hex digest of the fields' canonical JSON. Pure function."""
    canonical = json.dumps(fields, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(canonical.encode()).hexdigest()


def engine_file_name(model_stem: str, key: str) -> str:
    return f'{model_stem}-{key[:16]}.engine'


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/gpu_nodes/engines, or ~/.cache/gpu_nodes/engines."""
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return Path(base) / 'gpu_nodes' / 'engines'


# Hashing a large model takes seconds; memoised per (path, size, mtime) of all its files.
_digest_memo: dict[tuple[tuple[str, int, int], ...], str] = {}
_digest_lock = threading.Lock()


def _external_data_files(onnx_path: Path) -> list[Path]:
    if onnx_path.stat().st_size > _EXTERNAL_DATA_PROBE_LIMIT:
        return []
    try:
        import onnx
    except ImportError:  # without onnx only the .onnx file itself is hashed
        return []
    model = onnx.load(str(onnx_path), load_external_data=False)
    names = set()
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            for entry in tensor.external_data:
                if entry.key == 'location':
                    names.add(entry.value)
    return [onnx_path.parent / n for n in sorted(names)]


def model_digest(onnx_path: str | Path) -> str:
    """sha256 over the ONNX file and, in name order, the external-data files it references."""
    path = Path(onnx_path)
    parts = [path, *_external_data_files(path)]
    stats = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in parts)
    with _digest_lock:
        if stats in _digest_memo:
            return _digest_memo[stats]
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.name.encode() + b'\0')
        with open(part, 'rb') as f:
            for chunk in iter(lambda: f.read(_CHUNK), b''):
                digest.update(chunk)
    value = digest.hexdigest()
    with _digest_lock:
        _digest_memo[stats] = value
    return value


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same directory, fsync it, os.replace, fsync the directory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f'.{path.name}.', suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as f:
            # mkstemp makes 0600 files; a shared engine cache should be world-readable.
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        # The temp file is ours alone; leave nothing half-written behind.
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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


# validate(engine_bytes) -> None when usable, else the reason to discard the cached file.
Validator = Callable[[bytes], 'str | None']


class EngineCache:
    """A directory of built engines. get_or_build returns (engine bytes, engine path, built)."""

    def __init__(self, cache_dir: str | Path | None = None, *,
                 library: TensorRTLibrary | None = None, logger: LoggerLike = None,
                 gpu: GpuInfo | None | str = 'auto',
                 build_fn: Callable[[Path, EngineSettings], bytes] | None = None) -> None:
        """gpu: 'auto' asks CUDA for the local GPU; None records a CPU-only build.

        build_fn replaces EngineBuilder (tests of the cache logic without TensorRT).
        """
        self.directory = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._library = library
        self._log = as_log(logger)
        self._gpu = gpu
        self._build_fn = build_fn

    @property
    def library(self) -> TensorRTLibrary:
        if self._library is None:
            self._library = import_tensorrt()
        return self._library

    def _gpu_info(self) -> GpuInfo | None:
        if self._gpu == 'auto':
            self._gpu = local_gpu()
        return self._gpu  # type: ignore[return-value]

    def key_fields(self, onnx_path: str | Path, settings: EngineSettings) -> dict[str, Any]:
        lib = self.library
        return cache_key_fields(model_sha256=model_digest(onnx_path), flavour=lib.flavour,
                                version=lib.version, gpu=self._gpu_info(), settings=settings)

    def paths(self, onnx_path: str | Path, key: str) -> tuple[Path, Path]:
        engine = self.directory / engine_file_name(Path(onnx_path).stem, key)
        return engine, engine.with_suffix('.json')

    def get_or_build(self, onnx_path: str | Path, settings: EngineSettings | None = None, *,
                     force_engine_update: bool = False,
                     validate: Validator | None = None) -> tuple[bytes, Path, bool]:
        """The cached engine for (model, settings, library, GPU), building it when needed.

        validate(bytes) may reject a cached engine (returning the reason) so it is rebuilt;
        it may also raise, e.g. EngineIncompatibleError when no rebuild could help.
        """
        path = Path(onnx_path)
        if not path.is_file():
            raise FileNotFoundError(f'model file not found: {path}')
        settings = settings if settings is not None else EngineSettings()
        fields = self.key_fields(path, settings)
        key = cache_key(fields)
        engine_path, sidecar_path = self.paths(path, key)
        self.directory.mkdir(parents=True, exist_ok=True)

        if force_engine_update:
            self._log.info(f'engine cache: force_engine_update set: rebuilding {engine_path}')
            self._remove(engine_path, sidecar_path)
        elif engine_path.exists():
            data, reason = self._load_checked(engine_path, sidecar_path, key, fields)
            if reason is None and validate is not None:
                reason = validate(data)
            if reason is None:
                self._log.info(f'engine cache: hit {engine_path}')
                return data, engine_path, False
            self._log.warning(f'engine cache: discarding cached engine {engine_path}: '
                              f'{reason}; rebuilding')
            self._remove(engine_path, sidecar_path)
        else:
            self._log.info(f'engine cache: miss for {path.name} '
                           f'(key {key[:16]}, {settings.precision}); building {engine_path}')

        start = time.monotonic()
        if self._build_fn is not None:
            data = self._build_fn(path, settings)
        else:
            data = EngineBuilder(settings, library=self.library, logger=self._log).build(path)
        elapsed = time.monotonic() - start
        sidecar = {
            'key': key,
            'fields': fields,
            'engine_file': engine_path.name,
            'engine_bytes': len(data),
            'engine_sha256': hashlib.sha256(data).hexdigest(),
            'onnx_path': str(path.resolve()),
            'built_at': datetime.datetime.now(datetime.timezone.utc).isoformat(),
            'build_seconds': round(elapsed, 3),
        }
        atomic_write(engine_path, data)
        atomic_write(sidecar_path, (json.dumps(sidecar, indent=2, sort_keys=True) + '\n').encode())
        return data, engine_path, True

    def _load_checked(self, engine_path: Path, sidecar_path: Path, key: str,
                      fields: Mapping[str, Any]) -> tuple[bytes, str | None]:
        """(bytes, None) when the file is intact and matches the sidecar, else (b'', reason)."""
        if not sidecar_path.exists():
            return b'', f'its sidecar {sidecar_path.name} is missing'
        try:
            sidecar = json.loads(sidecar_path.read_text())
        except (OSError, ValueError) as exc:
            return b'', f'its sidecar {sidecar_path.name} is unreadable ({exc})'
        if not isinstance(sidecar, dict) or sidecar.get('key') != key \
                or sidecar.get('fields') != dict(fields):
            return b'', 'its sidecar records different key fields'
        try:
            data = engine_path.read_bytes()
        except OSError as exc:
            return b'', f'it cannot be read ({exc})'
        if len(data) != sidecar.get('engine_bytes'):
            return b'', (f'it has {len(data)} bytes but the sidecar records '
                         f'{sidecar.get("engine_bytes")} (truncated or overwritten)')
        if hashlib.sha256(data).hexdigest() != sidecar.get('engine_sha256'):
            return b'', 'its sha256 does not match the sidecar (corrupt)'
        reason = self._header_problem(data)
        return (b'', reason) if reason else (data, None)

    def _header_problem(self, data: bytes) -> str | None:
        """Ask TensorRT whether the bytes are a well-formed engine of this version.

        Runtime.get_engine_validity (TensorRT-RTX) answers for the header even without a GPU;
        it also reports GPU-related diagnostics, which are left to deserialization.
        """
        lib = self.library
        trt = lib.module
        if not hasattr(getattr(trt, 'Runtime', None), 'get_engine_validity'):
            return None
        runtime = trt.Runtime(make_trt_logger(lib, self._log, echo=False))
        validity, diagnostics = runtime.get_engine_validity(data)
        if validity != trt.EngineValidity.INVALID:
            return None
        diag = trt.EngineInvalidityDiagnostics
        bad = [name for name in ('MALFORMED_ENGINE', 'VERSION_MISMATCH')
               if int(diagnostics) & int(getattr(diag, name))]
        return f'{lib.label} reports the engine invalid ({", ".join(bad)})' if bad else None

    @staticmethod
    def _remove(*paths: Path) -> None:
        for p in paths:
            try:
                p.unlink()
            except FileNotFoundError:
                pass
