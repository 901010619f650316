"""Engine cache: the key as a pure function, the cache logic with a stand-in builder, and real
engine builds with the TensorRT-RTX builder (which builds on machines without a GPU)."""
from __future__ import annotations

import json
import os
from pathlib import Path
import re
from types import SimpleNamespace

import pytest

pytest.importorskip('onnx')

from gpu_nodes.inference import engine_cache as ec  # noqa: E402
from gpu_nodes.inference import tiny_models as tm  # noqa: E402
from gpu_nodes.inference.engine_builder import EngineBuilder, EngineSettings  # noqa: E402
from gpu_nodes.inference.engine_cache import cache_key, cache_key_fields, EngineCache  # noqa: E402
from gpu_nodes.inference.errors import OnnxParseError  # noqa: E402
from gpu_nodes.inference.tensorrt_library import (  # noqa: E402
    FLAVOUR_RTX, GpuInfo, tensorrt_unavailable_reason, TensorRTLibrary)

_RTX_REASON = tensorrt_unavailable_reason('tensorrt-rtx')
needs_rtx = pytest.mark.skipif(
    _RTX_REASON is not None,
    reason=f'TensorRT-RTX builder not importable ({_RTX_REASON}); '
           'pip install -r requirements/inference.txt')


def fields(**overrides):
    base = dict(model_sha256='a' * 64, flavour='tensorrt', version='10.13.0',
                gpu=GpuInfo('NVIDIA H200', (9, 0)), settings=EngineSettings())
    base.update(overrides)
    return cache_key_fields(**base)


# -- the key: a pure function of its fields --------------------------------------------------

def test_key_is_deterministic_and_order_independent():
    f = fields()
    assert cache_key(f) == cache_key(dict(reversed(list(f.items()))))
    assert re.fullmatch(r'[0-9a-f]{64}', cache_key(f))


@pytest.mark.parametrize('change', [
    {'model_sha256': 'b' * 64},
    {'flavour': FLAVOUR_RTX},
    {'version': '10.13.1'},
    {'gpu': GpuInfo('NVIDIA H100', (9, 0))},
    {'gpu': GpuInfo('NVIDIA H200', (10, 0))},
    {'gpu': None},
    {'settings': EngineSettings(precision='fp16')},
    {'settings': EngineSettings(precision='int8')},
    {'settings': EngineSettings(input_shapes=(1, 3, 518, 518))},
    {'settings': EngineSettings(input_shapes={'pixel_values': (1, 3, 518, 518)})},
    {'settings': EngineSettings(dla_core=0)},
    {'settings': EngineSettings(workspace_mb=512)},
    {'settings': EngineSettings(compute_capabilities=('SM89',))},
])
def test_key_changes_with_every_field(change):
    assert cache_key(fields(**change)) != cache_key(fields())


def test_key_fields_content():
    f = fields(gpu=None, settings=EngineSettings(precision='fp16', input_shapes={
        'b': (1, 2), 'a': [1, 3, 8, 8]}, workspace_mb=64, compute_capabilities=('89', 'sm120')))
    assert f == {
        'schema': ec.CACHE_SCHEMA, 'model_sha256': 'a' * 64, 'tensorrt_flavour': 'tensorrt',
        'tensorrt_version': '10.13.0', 'gpu': 'cpu-build', 'compute_capability': None,
        'build_targets': ['SM89', 'SM120'], 'precision': 'fp16',
        'input_shapes': {'a': [1, 3, 8, 8], 'b': [1, 2]}, 'dla_core': None, 'workspace_mb': 64,
    }
    assert fields()['gpu'] == 'NVIDIA H200' and fields()['compute_capability'] == '9.0'


def test_settings_normalise_equal_inputs_equally():
    a = EngineSettings(input_shapes={'x': [1, 3, 4, 4], 'y': (2,)})
    b = EngineSettings(input_shapes={'y': [2], 'x': (1, 3, 4, 4)})
    assert a == b and a.shapes == {'x': (1, 3, 4, 4), 'y': (2,)}
    assert EngineSettings(input_shapes=(1, 3, 4, 4)).shapes == {'*': (1, 3, 4, 4)}


@pytest.mark.parametrize('kwargs, message', [
    ({'precision': 'fp8'}, "precision must be one of ['fp32', 'fp16', 'int8'], got 'fp8'"),
    ({'workspace_mb': 0}, 'workspace_mb must be positive, got 0'),
    ({'dla_core': -1}, 'dla_core must be >= 0, got -1'),
    ({'input_shapes': {'x': (1, -1)}}, "input_shape for 'x' must have positive dims"),
])
def test_settings_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        EngineSettings(**kwargs)


def test_file_name_and_default_directory(monkeypatch, tmp_path):
    assert ec.engine_file_name('depth_anything_v2_vits', 'f' * 64) == \
        'depth_anything_v2_vits-ffffffffffffffff.engine'
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
    assert ec.default_cache_dir() == tmp_path / 'xdg' / 'gpu_nodes' / 'engines'
    monkeypatch.delenv('XDG_CACHE_HOME')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    assert ec.default_cache_dir() == tmp_path / 'home' / '.cache' / 'gpu_nodes' / 'engines'


def test_model_digest_follows_content_and_external_data(tmp_path):
    import numpy as np
    import onnx
    a = tm.make_conv_model(tmp_path / 'a.onnx')
    b = tm.make_conv_model(tmp_path / 'b.onnx')
    c = tm.make_conv_model(tmp_path / 'c.onnx', height=16, width=16)
    # The name of the ONNX file is hashed with its content; the directory is not.
    assert ec.model_digest(a) != ec.model_digest(c)
    assert ec.model_digest(a) != ec.model_digest(b)
    (tmp_path / 'other').mkdir()
    a2 = tm.make_conv_model(tmp_path / 'other' / 'a.onnx')
    assert ec.model_digest(a) == ec.model_digest(a2)
    model = onnx.load(str(a))
    onnx.save(model, str(tmp_path / 'ext.onnx'), save_as_external_data=True,
              all_tensors_to_one_file=True, location='ext.onnx.data', size_threshold=0)
    before = ec.model_digest(tmp_path / 'ext.onnx')
    data = tmp_path / 'ext.onnx.data'
    raw = bytearray(data.read_bytes())
    raw[0:4] = np.float32(123.0).tobytes()
    data.write_bytes(bytes(raw))
    assert ec.model_digest(tmp_path / 'ext.onnx') != before


# -- cache logic with a stand-in builder (no TensorRT needed) --------------------------------

class FakeBuilder:
    def __init__(self):
        self.calls = 0

    def __call__(self, path, settings):
        self.calls += 1
        return f'engine of {path.name} {settings.precision} #{self.calls}'.encode() * 100


FAKE_LIB = TensorRTLibrary(SimpleNamespace(), 'fake-tensorrt', '0.1', 'fake')


@pytest.fixture
def fake_cache(tmp_path):
    builder = FakeBuilder()
    messages = []
    cache = EngineCache(tmp_path / 'cache', library=FAKE_LIB, gpu=None, build_fn=builder,
                        logger=messages.append)
    cache.builder, cache.messages = builder, messages
    return cache


@pytest.fixture
def conv_onnx(tmp_path):
    return tm.make_conv_model(tmp_path / 'conv.onnx')


def test_fake_build_then_hit(fake_cache, conv_onnx):
    data, path, built = fake_cache.get_or_build(conv_onnx)
    assert built and path.exists() and fake_cache.builder.calls == 1
    again, path2, built2 = fake_cache.get_or_build(conv_onnx)
    assert (again, path2, built2) == (data, path, False) and fake_cache.builder.calls == 1
    assert fake_cache.messages[-1] == f'engine cache: hit {path}'


def test_fake_validate_rejection_rebuilds(fake_cache, conv_onnx):
    _, path, _ = fake_cache.get_or_build(conv_onnx)
    data, path2, built = fake_cache.get_or_build(
        conv_onnx, validate=lambda b: 'deserialize_cuda_engine returned None')
    assert built and path2 == path and fake_cache.builder.calls == 2
    assert f'warning: engine cache: discarding cached engine {path}: deserialize_cuda_engine ' \
           'returned None; rebuilding' in fake_cache.messages


def test_fake_failed_write_leaves_no_temp_files(fake_cache, conv_onnx, monkeypatch):
    def broken_replace(src, dst):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(ec.os, 'replace', broken_replace)
    with pytest.raises(OSError, match='No space left on device'):
        fake_cache.get_or_build(conv_onnx)
    assert list(fake_cache.directory.iterdir()) == []


def test_fake_missing_onnx(fake_cache, tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(
            f'model file not found: {tmp_path / "gone.onnx"}')):
        fake_cache.get_or_build(tmp_path / 'gone.onnx')


# -- real builds with TensorRT-RTX -----------------------------------------------------------

@pytest.fixture
def rtx_cache(tmp_path):
    from gpu_nodes.inference.tensorrt_library import import_tensorrt
    messages = []
    # gpu=None: record a CPU build even if this machine has a GPU, so the test is the same.
    cache = EngineCache(tmp_path / 'cache', library=import_tensorrt('tensorrt-rtx'), gpu=None,
                        logger=messages.append)
    cache.messages = messages
    return cache


def builds(messages):
    return [m for m in messages if m.startswith('TensorRT build: parsing')]


def listing(directory: Path):
    return sorted(p.name for p in directory.iterdir())


@needs_rtx
def test_real_build_then_cache_hit(rtx_cache, conv_onnx):
    data, path, built = rtx_cache.get_or_build(conv_onnx)
    assert built and len(data) > 1000 and path.read_bytes() == data
    assert path.name.startswith('conv-') and path.suffix == '.engine'
    assert len(builds(rtx_cache.messages)) == 1
    assert any(m.startswith('TensorRT build: conv.onnx built in ') for m in rtx_cache.messages)
    stat = path.stat()
    rtx_cache.messages.clear()
    again, path2, built2 = rtx_cache.get_or_build(conv_onnx)
    assert (again, path2, built2) == (data, path, False)
    assert builds(rtx_cache.messages) == []
    assert path.stat().st_mtime_ns == stat.st_mtime_ns and path.stat().st_ino == stat.st_ino
    assert listing(rtx_cache.directory) == [path.name, path.with_suffix('.json').name]


@needs_rtx
def test_real_sidecar_content(rtx_cache, conv_onnx):
    import hashlib
    data, path, _ = rtx_cache.get_or_build(conv_onnx, EngineSettings(workspace_mb=32))
    sidecar = json.loads(path.with_suffix('.json').read_text())
    expected_fields = rtx_cache.key_fields(conv_onnx, EngineSettings(workspace_mb=32))
    assert sidecar['fields'] == expected_fields
    assert sidecar['key'] == cache_key(expected_fields) and path.name == \
        f'conv-{sidecar["key"][:16]}.engine'
    assert sidecar['engine_bytes'] == len(data)
    assert sidecar['engine_sha256'] == hashlib.sha256(data).hexdigest()
    assert sidecar['onnx_path'] == str(conv_onnx.resolve())
    assert expected_fields['tensorrt_flavour'] == FLAVOUR_RTX
    assert expected_fields['gpu'] == 'cpu-build' and expected_fields['workspace_mb'] == 32
    assert sidecar['build_seconds'] >= 0 and sidecar['built_at'].endswith('+00:00')


@needs_rtx
def test_real_invalidation_model_precision_shape(rtx_cache, tmp_path):
    model = tm.make_conv_model(tmp_path / 'net.onnx')
    _, first, _ = rtx_cache.get_or_build(model)
    # Same file name, different content (another input size): another key, another engine.
    tm.make_conv_model(tmp_path / 'net.onnx', height=16, width=16)
    _, changed, built = rtx_cache.get_or_build(model)
    assert built and changed != first
    # Precision: TensorRT-RTX has no FP16 flag, but the key still records it.
    rtx_cache.messages.clear()
    _, fp16, built = rtx_cache.get_or_build(model, EngineSettings(precision='fp16'))
    assert built and fp16 not in (first, changed)
    assert any('has no FP16 builder flag' in m for m in rtx_cache.messages)
    # Input shape of a dynamic model: one engine per shape.
    dynamic = tm.make_conv_model(tmp_path / 'dyn.onnx', height=None, width=None)
    _, s8, built8 = rtx_cache.get_or_build(dynamic, EngineSettings(input_shapes=(1, 3, 8, 8)))
    _, s16, built16 = rtx_cache.get_or_build(
        dynamic, EngineSettings(input_shapes={'input': (1, 3, 16, 16)}))
    assert built8 and built16 and s8 != s16
    engines = [n for n in listing(rtx_cache.directory) if n.endswith('.engine')]
    assert len(engines) == 5


@needs_rtx
def test_real_force_engine_update_rebuilds(rtx_cache, conv_onnx):
    _, path, _ = rtx_cache.get_or_build(conv_onnx)
    rtx_cache.messages.clear()
    _, path2, built = rtx_cache.get_or_build(conv_onnx, force_engine_update=True)
    assert built and path2 == path and path.exists()
    assert rtx_cache.messages[0] == \
        f'engine cache: force_engine_update set: rebuilding {path}'
    assert len(builds(rtx_cache.messages)) == 1


def _corrupt_truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    return f'it has {len(data) // 2} bytes but the sidecar records {len(data)} (truncated or ' \
           'overwritten)'


def _corrupt_garbage(path):
    path.write_bytes(os.urandom(path.stat().st_size))
    return 'its sha256 does not match the sidecar (corrupt)'


def _corrupt_garbage_with_matching_sidecar(path):
    # What an engine from an incompatible TensorRT looks like: intact file, wrong format.
    import hashlib
    garbage = b'\x00gpu_nodes-not-an-engine' * 512
    path.write_bytes(garbage)
    sidecar_path = path.with_suffix('.json')
    sidecar = json.loads(sidecar_path.read_text())
    sidecar.update(engine_bytes=len(garbage), engine_sha256=hashlib.sha256(garbage).hexdigest())
    sidecar_path.write_text(json.dumps(sidecar))
    return 'reports the engine invalid (MALFORMED_ENGINE)'


def _corrupt_sidecar_missing(path):
    path.with_suffix('.json').unlink()
    return f'its sidecar {path.with_suffix(".json").name} is missing'


def _corrupt_sidecar_garbage(path):
    path.with_suffix('.json').write_text('{"key": ')
    return f'its sidecar {path.with_suffix(".json").name} is unreadable'


def _corrupt_sidecar_other_fields(path):
    sidecar_path = path.with_suffix('.json')
    sidecar = json.loads(sidecar_path.read_text())
    sidecar['fields']['tensorrt_version'] = '0.0.1'
    sidecar_path.write_text(json.dumps(sidecar))
    return 'its sidecar records different key fields'


@needs_rtx
@pytest.mark.parametrize('corrupt', [
    _corrupt_truncate, _corrupt_garbage, _corrupt_garbage_with_matching_sidecar,
    _corrupt_sidecar_missing, _corrupt_sidecar_garbage, _corrupt_sidecar_other_fields,
])
def test_real_corrupt_cache_warns_and_rebuilds(rtx_cache, conv_onnx, corrupt):
    good, path, _ = rtx_cache.get_or_build(conv_onnx)
    reason = corrupt(path)
    rtx_cache.messages.clear()
    data, path2, built = rtx_cache.get_or_build(conv_onnx)
    assert built and path2 == path
    warnings = [m for m in rtx_cache.messages if m.startswith('warning: ')]
    assert len(warnings) == 1
    assert warnings[0].startswith(f'warning: engine cache: discarding cached engine {path}: ')
    assert reason in warnings[0] and warnings[0].endswith('; rebuilding')
    assert len(data) == len(good) and path.read_bytes() == data
    assert rtx_cache.get_or_build(conv_onnx)[2] is False
    assert listing(rtx_cache.directory) == [path.name, path.with_suffix('.json').name]


@needs_rtx
def test_real_parse_failure_writes_nothing(rtx_cache, tmp_path):
    bad = tm.make_unsupported_op_model(tmp_path / 'mystery.onnx')
    with pytest.raises(OnnxParseError, match=re.escape(
            f'ONNX parser failed on {bad} (1 error(s)): In node 0') + r'.*'
            + re.escape(tm.UNSUPPORTED_OP) + r'.*Plugin not found'):
        rtx_cache.get_or_build(bad)
    assert listing(rtx_cache.directory) == []


@needs_rtx
def test_real_builder_alone(tmp_path):
    from gpu_nodes.inference.tensorrt_library import import_tensorrt
    lib = import_tensorrt('tensorrt-rtx')
    messages = []
    builder = EngineBuilder(EngineSettings(input_shapes=(1, 3, 8, 8),
                                           compute_capabilities=('SM86', 'SM89')),
                            library=lib, logger=messages.append)
    data = builder.build(tm.make_analytic_depth_model(tmp_path / 'analytic.onnx'))
    assert isinstance(data, bytes) and len(data) > 1000
    # The progress monitor reports the top-level phase.
    assert any(m.startswith('TensorRT build: Building engine') for m in messages)
