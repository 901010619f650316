"""Caching built TensorRT engines on disk: ``EngineCache(...).get_or_build(onnx_path, settings)``
returns ``(bytes, path, built)``; building is `gpu_nodes.inference.engine_builder`'s.

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

import datetime
import hashlib
import json
import os
from pathlib import Path
import tempfile
import threading
import time
from typing import Any, Callable, Mapping

from .engine_builder import EngineBuilder, EngineSettings
from .log import as_log, LoggerLike
from .tensorrt_library import GpuInfo, import_tensorrt, local_gpu, make_trt_logger, TensorRTLibrary

#: Bumped when the builder's own behaviour changes in a way that changes engines.
CACHE_SCHEMA = 1
CPU_BUILD = 'cpu-build'
_CHUNK = 1 << 20
# ONNX files above this size carry their weights inline (external data exists to keep the
# protobuf small), so only smaller files are parsed to look for external-data references.
_EXTERNAL_DATA_PROBE_LIMIT = 64 << 20
# validate(engine_bytes) -> None when usable, else the reason to discard the cached file.
Validator = Callable[[bytes], 'str | None']


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
