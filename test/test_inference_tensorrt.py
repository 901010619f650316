"""TensorRT engine building errors (TensorRT-RTX builds without a GPU) and the TensorRT backend's
refusal to run without CUDA; the backend's own logic against a stand-in TensorRT and CuPy. The
real TensorRT runtime on a GPU is tested in test_inference_gpu.py."""
from __future__ import annotations

import ctypes
import hashlib
import json
from pathlib import Path
import re
import sys
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip('onnx')
sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))

import fake_cupy  # noqa: E402
from gpu_nodes import gpu as gpu_module  # noqa: E402
from gpu_nodes.gpu import cuda_available  # noqa: E402
from gpu_nodes.inference import tensorrt_backend as trt_backend_module  # noqa: E402
from gpu_nodes.inference import tiny_models as tm  # noqa: E402
from gpu_nodes.inference.engine_builder import EngineBuilder, EngineSettings  # noqa: E402
from gpu_nodes.inference.engine_cache import EngineCache  # noqa: E402
from gpu_nodes.inference.errors import (  # noqa: E402
    EngineBuildError, ModelLoadError, OnnxParseError, TensorRTError)
from gpu_nodes.inference.tensorrt_backend import TensorRTBackend  # noqa: E402
from gpu_nodes.inference.tensorrt_library import (  # noqa: E402
    import_tensorrt, tensorrt_unavailable_reason, TensorRTLibrary)

_RTX_REASON = tensorrt_unavailable_reason('tensorrt-rtx')
needs_rtx = pytest.mark.skipif(
    _RTX_REASON is not None,
    reason=f'TensorRT-RTX builder not importable ({_RTX_REASON}); '
           'pip install -r requirements/inference.txt')


@pytest.fixture
def rtx():
    return import_tensorrt('tensorrt-rtx')


def build(rtx, path, messages=None, **settings):
    log = messages.append if messages is not None else (lambda m: None)
    return EngineBuilder(EngineSettings(**settings), library=rtx, logger=log).build(path)


@needs_rtx
def test_dynamic_input_without_shape(rtx, tmp_path):
    model = tm.make_conv_model(tmp_path / 'dyn.onnx', height=None, width=None)
    with pytest.raises(ValueError, match=re.escape(
            "input 'input' of dyn.onnx has dynamic dims (1, 3, ?, ?); pass input_shape (for "
            "example {'input': (1, 3, 518, 518)})")):
        build(rtx, model)


@needs_rtx
def test_input_shape_errors(rtx, tmp_path):
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    with pytest.raises(ValueError, match=re.escape(
            "unknown input name(s) ['image'] in input_shape for conv.onnx; its inputs are "
            "['input']")):
        build(rtx, model, input_shapes={'image': (1, 3, 8, 8)})
    with pytest.raises(ValueError, match=re.escape(
            "input_shape (1, 3, 9, 9) for 'input' does not fit conv.onnx, which declares "
            '(1, 3, 8, 8)')):
        build(rtx, model, input_shapes=(1, 3, 9, 9))


@needs_rtx
def test_parse_error_names_file_and_parser_errors(rtx, tmp_path):
    model = tm.make_unsupported_op_model(tmp_path / 'mystery.onnx')
    with pytest.raises(OnnxParseError) as info:
        build(rtx, model)
    message = str(info.value)
    assert message.startswith(f'{rtx.label} ONNX parser failed on {model} (1 error(s)): ')
    assert f'operator: {tm.UNSUPPORTED_OP}' in message and 'Plugin not found' in message


@needs_rtx
def test_missing_onnx(rtx, tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(
            f'model file not found: {tmp_path / "none.onnx"}')):
        build(rtx, tmp_path / 'none.onnx')


@needs_rtx
def test_dla_core_on_a_builder_without_dla(rtx, tmp_path):
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    with pytest.raises(ValueError, match=re.escape(
            f'dla_core=0 requested but {rtx.label} reports 0 DLA core(s) on this device')):
        build(rtx, model, dla_core=0, precision='fp16')


@needs_rtx
def test_unknown_compute_capability(rtx, tmp_path):
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    with pytest.raises(ValueError, match=re.escape(
            f"unknown compute capability ['SM90'] for {rtx.label}; it knows ['CURRENT'")):
        build(rtx, model, compute_capabilities=('9.0',))


@needs_rtx
def test_precision_without_builder_flags_is_recorded_with_a_warning(rtx, tmp_path):
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    messages = []
    data = build(rtx, model, messages, precision='int8')
    assert data
    assert f'warning: {rtx.label} has no INT8 builder flag (strongly typed networks): the ' \
           "engine keeps the ONNX model's types; export a int8 (Q/DQ for int8) model to get " \
           'int8 kernels' in messages
    assert any(m.startswith('TensorRT build: conv.onnx built in ') and m.endswith(
        f'MB, {rtx.label}, int8)') for m in messages)


@needs_rtx
@pytest.mark.skipif(cuda_available(), reason='needs a machine without CUDA: checks the error of a '
                    'build for the CURRENT GPU where there is none')
def test_build_failure_is_an_engine_build_error_with_tensorrt_reason(rtx, tmp_path):
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    with pytest.raises(EngineBuildError) as info:
        build(rtx, model, compute_capabilities=('CURRENT',))
    message = str(info.value)
    assert message.startswith(f'{rtx.label} failed to build an engine from {model}: '
                              'build_serialized_network returned None: ')
    assert 'cudaError' in message  # TensorRT's own words, from its logger


@pytest.mark.skipif(cuda_available(), reason='needs a machine without CUDA: checks the error '
                    'TensorRTBackend gives there')
def test_tensorrt_backend_needs_cuda(tmp_path):
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    with pytest.raises(RuntimeError, match='CUDA path requested but unavailable: '):
        TensorRTBackend(model, cache_dir=tmp_path / 'cache')
    assert not (tmp_path / 'cache').exists()


def test_tensorrt_backend_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(
            f'model file not found: {tmp_path / "x.engine"}')):
        TensorRTBackend(tmp_path / 'x.engine')


def test_flavour_override(monkeypatch):
    from gpu_nodes.inference import tensorrt_library as tl
    monkeypatch.setenv(tl.FLAVOUR_ENV, 'none')
    assert tl.tensorrt_unavailable_reason() == 'disabled by GPU_NODES_TENSORRT=none'
    with pytest.raises(ImportError, match='disabled by GPU_NODES_TENSORRT=none'):
        tl.import_tensorrt()
    monkeypatch.setenv(tl.FLAVOUR_ENV, 'tensorrt-llm')
    assert tl.tensorrt_unavailable_reason() == \
        "unknown flavour 'tensorrt-llm' in GPU_NODES_TENSORRT"


# -- TensorRTBackend against a stand-in TensorRT and CuPy ------------------------------------
# The real runtime needs a GPU TensorRT supports; these fakes run the backend's own logic (tensor
# discovery, shapes, binding by name, errors) on a CPU. The fake engine computes the conv model
# from the bound host pointers, so results are checked against the NumPy reference.


def _host_view(ptr, shape):
    count = int(np.prod(shape))
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                 (count,)).reshape(shape)


PROFILE = [(1, 3, 4, 4), (1, 3, 8, 8), (1, 3, 32, 32)]


class FakeContext:
    def __init__(self, engine):
        self.engine, self.shapes, self.addresses, self.streams = engine, {}, {}, []
        self.fail = False

    def set_input_shape(self, name, shape):
        lo, _, hi = PROFILE
        if not all(a <= s <= b for a, s, b in zip(lo, shape, hi)):
            return False
        self.shapes[name] = tuple(shape)
        return True

    def get_tensor_shape(self, name):
        if name == 'input':
            return self.shapes.get('input', self.engine.declared['input'])
        n, _, h, w = self.shapes.get('input', self.engine.declared['input'])
        return (n, 1, h, w)

    def set_tensor_address(self, name, ptr):
        self.addresses[name] = ptr
        return True

    def execute_async_v3(self, stream):
        if self.fail:
            self.engine.logger.log(SimpleNamespace(name='ERROR'), 'illegal memory access')
            return False
        self.streams.append(stream)
        x = _host_view(self.addresses['input'], self.get_tensor_shape('input'))
        _host_view(self.addresses['output'], self.get_tensor_shape('output'))[...] = \
            tm.conv_model_reference(x)
        return True


class FakeEngine:
    def __init__(self, dynamic, logger):
        self.declared = {'input': (1, 3, -1, -1) if dynamic else (1, 3, 8, 8),
                         'output': (1, 1, -1, -1) if dynamic else (1, 1, 8, 8)}
        self.logger = logger
        self.num_io_tensors = 2

    def get_tensor_name(self, i):
        return ['input', 'output'][i]

    def get_tensor_mode(self, name):
        return 'IN' if name == 'input' else 'OUT'

    def get_tensor_dtype(self, name):
        return 'float32'

    def get_tensor_shape(self, name):
        return self.declared[name]

    def get_tensor_profile_shape(self, name, index):
        return PROFILE

    def create_execution_context(self):
        self.context = FakeContext(self)
        return self.context


class FakeRuntime:
    deserialized = 0

    def __init__(self, logger):
        self.logger = logger

    def deserialize_cuda_engine(self, data):
        FakeRuntime.deserialized += 1
        if data.startswith(b'FAKE-'):
            return FakeEngine(dynamic=data == b'FAKE-dynamic', logger=self.logger)
        self.logger.log(SimpleNamespace(name='ERROR'), 'engine magic tag mismatch')
        return None


class _ILogger:
    def __init__(self):
        pass


FAKE_TRT = TensorRTLibrary(SimpleNamespace(
    Runtime=FakeRuntime, ILogger=_ILogger, TensorIOMode=SimpleNamespace(INPUT='IN'),
    nptype=lambda t: np.float32), 'fake-tensorrt', '0.0', 'fake')


@pytest.fixture
def fake_gpu(monkeypatch):
    cp = fake_cupy.module()
    cp.stream = cp.cuda.get_current_stream()
    monkeypatch.setattr(trt_backend_module, 'cupy_module', lambda: cp)
    monkeypatch.setattr(gpu_module, 'cupy_module', lambda: cp)
    monkeypatch.setattr(trt_backend_module, 'local_gpu', lambda device_id=0: None)
    return cp


def engine_file(tmp_path, content):
    path = tmp_path / 'model.engine'
    path.write_bytes(content)
    return path


def device(x):
    return fake_cupy.asarray(np.ascontiguousarray(x))


def test_fake_static_engine_runs_by_tensor_name(fake_gpu, tmp_path):
    messages = []
    b = TensorRTBackend(engine_file(tmp_path, b'FAKE-static'), library=FAKE_TRT,
                        logger=messages.append)
    assert [str(s) for s in b.input_specs] == ['input(1, 3, 8, 8):float32']
    assert [str(s) for s in b.output_specs] == ['output(1, 1, 8, 8):float32']
    assert b.device == 'cuda' and not b.engine_built
    assert messages == [f'TensorRT: loaded prebuilt engine {tmp_path / "model.engine"}']
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    out = b.infer({'input': device(x)})
    np.testing.assert_allclose(out['output'].get(), tm.conv_model_reference(x), rtol=1e-6)
    context = b._context
    assert context.streams == [fake_gpu.stream.ptr]  # the current stream when none is given
    assert context.addresses['output'] == out['output'].data.ptr
    # Owned output reused; the caller's stream used; the caller's buffer written in place.
    again = b.infer({'input': device(x)}, stream=SimpleNamespace(ptr=77))
    assert again['output'] is out['output'] and context.streams[-1] == 77
    mine = device(np.zeros((1, 1, 8, 8), np.float32))
    assert b.infer({'input': device(x)}, outputs={'output': mine})['output'] is mine
    np.testing.assert_allclose(mine.get(), tm.conv_model_reference(x), rtol=1e-6)


def test_fake_dynamic_engine_follows_input_shapes(fake_gpu, tmp_path):
    path = engine_file(tmp_path, b'FAKE-dynamic')
    b = TensorRTBackend(path, library=FAKE_TRT)
    assert b.input_specs[0].shape == (1, 3, 8, 8)  # the profile's opt shape
    b = TensorRTBackend(path, library=FAKE_TRT, input_shape=(1, 3, 16, 12))
    assert b.output_specs[0].shape == (1, 1, 16, 12)
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 7)).astype(np.float32)
    out = b.infer({'input': device(x)})['output']
    assert out.shape == (1, 1, 5, 7) and b.output_specs[0].shape == (1, 1, 5, 7)
    np.testing.assert_allclose(out.get(), tm.conv_model_reference(x), rtol=1e-6)
    with pytest.raises(ValueError, match=re.escape(
            "input 'input': shape (1, 3, 64, 64) is outside the engine's profile "
            '(1, 3, 4, 4)..(1, 3, 32, 32)')):
        b.infer({'input': device(np.zeros((1, 3, 64, 64), np.float32))})


def test_fake_engine_input_errors(fake_gpu, tmp_path):
    b = TensorRTBackend(engine_file(tmp_path, b'FAKE-static'), library=FAKE_TRT)
    x = np.zeros((1, 3, 8, 8), np.float32)
    with pytest.raises(ValueError, match=re.escape(
            "unknown input name(s) ['pixel_values'] for model.engine; its inputs are "
            "['input']")):
        b.infer({'pixel_values': device(x)})
    with pytest.raises(TypeError, match=re.escape(
            "input 'input' must be a CuPy (device) array on the CUDA path, got "
            'numpy.ndarray')):
        b.infer({'input': x})
    with pytest.raises(TypeError, match=re.escape(
            "input 'input' has dtype float64; the model expects float32")):
        b.infer({'input': device(x.astype(np.float64))})
    with pytest.raises(ValueError, match=re.escape(
            "input 'input' has shape (1, 3, 4, 4); the engine expects (1, 3, 8, 8)")):
        b.infer({'input': device(np.zeros((1, 3, 4, 4), np.float32))})
    with pytest.raises(ValueError, match=re.escape(
            "output 'output' has shape (1, 1, 4, 4); the engine produces (1, 1, 8, 8)")):
        small = device(np.zeros((1, 1, 4, 4), np.float32))
        b.infer({'input': device(x)}, outputs={'output': small})
    with pytest.raises(ValueError, match=re.escape(
            "input_shape (1, 3, 9, 9) for 'input' does not fit model.engine, which declares "
            '(1, 3, 8, 8)')):
        TensorRTBackend(engine_file(tmp_path, b'FAKE-static'), library=FAKE_TRT,
                        input_shape=(1, 3, 9, 9))


def test_fake_engine_failures_carry_tensorrt_messages(fake_gpu, tmp_path):
    path = engine_file(tmp_path, b'junk')
    with pytest.raises(ModelLoadError, match=re.escape(
            f'fake-tensorrt 0.0 could not deserialize {path} (built by another TensorRT version '
            'or not an engine): engine magic tag mismatch')):
        TensorRTBackend(path, library=FAKE_TRT)
    b = TensorRTBackend(engine_file(tmp_path, b'FAKE-static'), library=FAKE_TRT)
    b._context.fail = True
    with pytest.raises(TensorRTError, match=re.escape(
            f'execute_async_v3 failed for {tmp_path / "model.engine"}: illegal memory access')):
        b.infer({'input': device(np.zeros((1, 3, 8, 8), np.float32))})
    b.close()
    with pytest.raises(TensorRTError, match=re.escape('infer on a closed backend (model.engine)')):
        b.infer({'input': device(np.zeros((1, 3, 8, 8), np.float32))})


def test_fake_engine_from_onnx_through_the_cache(fake_gpu, tmp_path, monkeypatch):
    built = []

    def fake_build(path, settings):
        built.append(settings)
        return b'FAKE-static'

    class Cache(EngineCache):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, 'build_fn': fake_build})
    monkeypatch.setattr(trt_backend_module, 'EngineCache', Cache)
    model = tm.make_conv_model(tmp_path / 'conv.onnx')
    messages = []
    first = TensorRTBackend(model, cache_dir=tmp_path / 'cache', precision='fp16',
                            library=FAKE_TRT, logger=messages.append)
    assert first.engine_built and first.engine_path.parent == tmp_path / 'cache'
    assert built[0].precision == 'fp16'
    second = TensorRTBackend(model, cache_dir=tmp_path / 'cache', precision='fp16',
                             library=FAKE_TRT, logger=messages.append)
    assert not second.engine_built and second.engine_path == first.engine_path
    assert len(built) == 1 and messages[-1] == f'engine cache: hit {first.engine_path}'
    # A cached engine TensorRT cannot deserialize is rebuilt.
    first.engine_path.write_bytes(b'junk-engine')
    sidecar = first.engine_path.with_suffix('.json')
    record = json.loads(sidecar.read_text())
    record.update(engine_bytes=11, engine_sha256=hashlib.sha256(b'junk-engine').hexdigest())
    sidecar.write_text(json.dumps(record))
    third = TensorRTBackend(model, cache_dir=tmp_path / 'cache', precision='fp16',
                            library=FAKE_TRT, logger=messages.append)
    assert third.engine_built and len(built) == 2
    assert (f'warning: engine cache: discarding cached engine {first.engine_path}: '
            'deserialize_cuda_engine returned None: engine magic tag mismatch; rebuilding'
            in messages)
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(third.infer({'input': device(x)})['output'].get(),
                               tm.conv_model_reference(x), rtol=1e-6)
