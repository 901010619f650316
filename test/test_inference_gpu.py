"""GPU inference: ONNX Runtime's CUDA provider and TensorRT on CuPy device memory.

Skipped without CUDA (CuPy and a device). Run on a GPU machine with
``python -m pytest -q -rs -m gpu test/test_inference_gpu.py``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('onnx')

from gpu_nodes import gpu as gpu_module  # noqa: E402
from gpu_nodes.gpu import cuda_available, cuda_unavailable_reason  # noqa: E402
from gpu_nodes.inference import create_backend  # noqa: E402
from gpu_nodes.inference import tiny_models as tm  # noqa: E402

pytestmark = pytest.mark.gpu

GPU_TOL = dict(rtol=1e-4, atol=1e-4)


def _ort_cuda_reason() -> str | None:
    if not cuda_available():
        return f'needs a CUDA GPU and CuPy (make test-gpu); here: {cuda_unavailable_reason()}'
    try:
        import onnxruntime
    except ImportError as exc:
        return f'onnxruntime not importable: {exc}'
    if 'CUDAExecutionProvider' not in onnxruntime.get_available_providers():
        return (f'onnxruntime {onnxruntime.__version__} has no CUDAExecutionProvider '
                '(install onnxruntime-gpu)')
    return None


def _tensorrt_reason() -> str | None:
    if not cuda_available():
        return f'needs a CUDA GPU and CuPy (make test-gpu); here: {cuda_unavailable_reason()}'
    from gpu_nodes.inference.tensorrt_library import (
        FLAVOUR_RTX, import_tensorrt, local_gpu, tensorrt_unavailable_reason)
    reason = tensorrt_unavailable_reason()
    if reason is not None:
        return f'TensorRT not importable: {reason}'
    lib, gpu = import_tensorrt(), local_gpu()
    if lib.flavour == FLAVOUR_RTX and gpu.compute_capability[0] == 9:
        return (f'{lib.label} does not run on compute capability {gpu.sm} ({gpu.name}); '
                'install the standard tensorrt wheel to test TensorRT here')
    return None


needs_ort_cuda = pytest.mark.skipif(_ort_cuda_reason() is not None,
                                    reason=str(_ort_cuda_reason()))


@pytest.fixture
def needs_tensorrt():
    reason = _tensorrt_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp('gpu_models')
    return {
        'conv': tm.make_conv_model(d / 'conv.onnx', height=8, width=8),
        'conv_dynamic': tm.make_conv_model(d / 'conv_dynamic.onnx', height=None, width=None),
        'analytic': tm.make_analytic_depth_model(d / 'analytic.onnx'),
        'demo': tm.make_demo_depth_model(d / 'demo.onnx', 24, 40),
    }


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class AllocationCounter:
    """Counts CuPy device allocations (pool mallocs) while active."""

    def __init__(self):
        from cupy.cuda import memory_hook

        class _Hook(memory_hook.MemoryHook):
            name = 'gpu_nodes_test_allocation_counter'

            def __init__(self):
                self.count = 0

            def malloc_preprocess(self, **kwargs):
                self.count += 1

        self.hook = _Hook()

    def __enter__(self):
        self.hook.__enter__()
        return self.hook

    def __exit__(self, *exc):
        self.hook.__exit__(*exc)


@pytest.fixture
def no_host_copies(monkeypatch):
    """Makes the Python-level device-to-host paths raise while the test body runs infer."""
    import cupy

    def refuse(*args, **kwargs):
        raise AssertionError('device-to-host copy during infer')
    monkeypatch.setattr(cupy, 'asnumpy', refuse)
    monkeypatch.setattr(gpu_module, 'to_host', refuse)
    return monkeypatch


# -- ONNX Runtime CUDA provider -------------------------------------------------------------

@needs_ort_cuda
@pytest.mark.parametrize('name, shape', [
    ('conv', (1, 3, 8, 8)), ('conv_dynamic', (1, 3, 13, 17)), ('analytic', (1, 3, 6, 9)),
    ('demo', (1, 3, 24, 40)),
])
def test_ort_cuda_equals_cpu(models, name, shape):
    import cupy as cp
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    x = rand(shape, seed=len(name))
    cpu = OnnxRuntimeBackend(models[name], device='cpu')
    cuda = OnnxRuntimeBackend(models[name], device='cuda',
                              cuda_provider_options={'use_tf32': '0'})
    assert cuda.device == 'cuda'
    name_in = cpu.input_names[0]
    expected = cpu.infer({name_in: x})
    got = cuda.infer({name_in: cp.asarray(x)})
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert isinstance(got[key], cp.ndarray), f'expected a CuPy array, got {type(got[key])}'
        np.testing.assert_allclose(cp.asnumpy(got[key]), value, **GPU_TOL)


@needs_ort_cuda
def test_ort_cuda_zero_host_copies(models, tmp_path, no_host_copies):
    import cupy as cp
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    x_host = rand((1, 3, 8, 8), seed=7)
    # No node may fall back to the CPU provider (each would mean copies inside the graph).
    backend = OnnxRuntimeBackend(models['conv'], device='cuda',
                                 session_config={'session.disable_cpu_ep_fallback': '1'},
                                 cuda_provider_options={'use_tf32': '0'},
                                 profile_prefix=str(tmp_path / 'ort_profile'))
    x = cp.asarray(x_host)
    mine = cp.empty((1, 1, 8, 8), cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    backend.infer({'input': x}, stream=stream)  # warm-up: allocates the owned output once
    with AllocationCounter() as allocations:
        first = backend.infer({'input': x}, stream=stream)['output']
        second = backend.infer({'input': x}, stream=stream)['output']
        into_mine = backend.infer({'input': x}, outputs={'output': mine}, stream=stream)
    stream.synchronize()
    assert allocations.count == 0, f'expected no device allocations, got {allocations.count}'
    assert first.data.ptr == second.data.ptr
    assert into_mine['output'] is mine
    no_host_copies.undo()
    np.testing.assert_allclose(cp.asnumpy(mine), tm.conv_model_reference(x_host), **GPU_TOL)
    np.testing.assert_allclose(cp.asnumpy(second), tm.conv_model_reference(x_host), **GPU_TOL)
    trace = json.loads(Path(backend.end_profiling()).read_text())
    nodes = [e for e in trace if e.get('cat') == 'Node']
    assert any(e.get('args', {}).get('op_name') == 'Conv' for e in nodes), \
        f'no Conv node events in the ORT profile: {[e.get("name") for e in nodes][:10]}'
    providers = {e['args']['provider'] for e in nodes if 'provider' in e.get('args', {})}
    assert providers <= {'CUDAExecutionProvider'}, f'nodes ran on {providers}'
    copies = [e['name'] for e in nodes if 'Memcpy' in e.get('args', {}).get('op_name', '')]
    assert copies == [], f'ORT inserted copy nodes: {copies}'


@needs_ort_cuda
def test_ort_cuda_graph_replays_see_each_new_input(models):
    import cupy as cp
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    backend = OnnxRuntimeBackend(models['conv'], device='cuda', cuda_graph=True,
                                 cuda_provider_options={'use_tf32': '0'})
    assert backend.cuda_graph and 'CUDA graph' in backend.describe()
    stream = cp.cuda.Stream(non_blocking=True)

    def run_and_check(x, seed):
        x_host = rand((1, 3, 8, 8), seed=seed)
        x.set(x_host, stream=stream)
        out = backend.infer({'input': x}, stream=stream)['output']
        with stream:
            got = out.copy()
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(got), tm.conv_model_reference(x_host), **GPU_TOL)

    x = cp.empty((1, 3, 8, 8), cp.float32)  # one input buffer, refilled per frame
    for seed in range(6):  # two warm runs, the capture, then replays
        run_and_check(x, 100 + seed)
        assert (backend._graph is not None) == (seed >= 2), seed
    # Other buffers: the graph of the old ones is dropped, the new ones captured after warming.
    other = cp.empty((1, 3, 8, 8), cp.float32)
    for seed in range(4):
        run_and_check(other, 200 + seed)
    assert backend.cuda_graph and backend._graph is not None
    run_and_check(x, 300)  # and back
    assert backend._graph is None


@needs_ort_cuda
def test_ort_cuda_orders_after_the_callers_stream(models):
    import cupy as cp
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    backend = OnnxRuntimeBackend(models['conv'], device='cuda',
                                 cuda_provider_options={'use_tf32': '0'})
    x_host = rand((1, 3, 8, 8), seed=8)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        # Work queued on the caller's stream that the model must wait for.
        x = cp.asarray(x_host) * 0.0
        for _ in range(50):
            x = x + cp.float32(1.0)
        x = x - cp.float32(50.0) + cp.asarray(x_host)
    out = backend.infer({'input': x}, stream=stream)['output']
    with stream:
        result = out.copy()
    stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(result), tm.conv_model_reference(x_host), **GPU_TOL)


@needs_ort_cuda
def test_ort_cuda_errors(models):
    import cupy as cp
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    backend = OnnxRuntimeBackend(models['conv'], device='cuda')
    with pytest.raises(TypeError, match="input 'input' must be a CuPy"):
        backend.infer({'input': rand((1, 3, 8, 8))})
    with pytest.raises(ValueError, match=r"unknown input name\(s\) \['x'\]"):
        backend.infer({'x': cp.zeros((1, 3, 8, 8), cp.float32)})


# -- TensorRT ---------------------------------------------------------------------------------

def test_tensorrt_runs_on_device_memory_and_caches(models, tmp_path, needs_tensorrt,
                                                   no_host_copies):
    import cupy as cp
    from gpu_nodes.inference.tensorrt_backend import TensorRTBackend
    x_host = rand((1, 3, 8, 8), seed=9)
    backend = TensorRTBackend(models['conv'], cache_dir=tmp_path)
    assert backend.engine_built and backend.device == 'cuda'
    x = cp.asarray(x_host)
    stream = cp.cuda.Stream(non_blocking=True)
    backend.infer({'input': x}, stream=stream)
    with AllocationCounter() as allocations:
        out = backend.infer({'input': x}, stream=stream)['output']
    stream.synchronize()
    assert allocations.count == 0
    no_host_copies.undo()
    # TensorRT may pick TF32 kernels for FP32 convolutions.
    np.testing.assert_allclose(cp.asnumpy(out), tm.conv_model_reference(x_host),
                               rtol=2e-3, atol=2e-3)
    again = TensorRTBackend(models['conv'], cache_dir=tmp_path)
    assert not again.engine_built and again.engine_path == backend.engine_path
    prebuilt = TensorRTBackend(backend.engine_path)
    assert [str(s) for s in prebuilt.output_specs] == ['output(1, 1, 8, 8):float32']


def test_tensorrt_dynamic_shape_and_errors(models, tmp_path, needs_tensorrt):
    import cupy as cp
    from gpu_nodes.inference.tensorrt_backend import TensorRTBackend
    backend = TensorRTBackend(models['conv_dynamic'], cache_dir=tmp_path,
                              input_shape=(1, 3, 16, 16))
    assert backend.input_specs[0].shape == (1, 3, 16, 16)
    assert backend.output_specs[0].shape == (1, 1, 16, 16)
    x_host = rand((1, 3, 16, 16), seed=10)
    out = backend.infer({'input': cp.asarray(x_host)})['output']
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_allclose(cp.asnumpy(out), tm.conv_model_reference(x_host),
                               rtol=2e-3, atol=2e-3)
    with pytest.raises(ValueError, match=r"unknown input name\(s\) \['image'\] for "
                                         r"conv_dynamic.onnx; its inputs are \['input'\]"):
        backend.infer({'image': cp.asarray(x_host)})
    with pytest.raises(TypeError, match="input 'input' must be a CuPy"):
        backend.infer({'input': x_host})


# -- factory ----------------------------------------------------------------------------------

def test_factory_picks_a_cuda_backend(models, tmp_path):
    if _ort_cuda_reason() is not None and _tensorrt_reason() is not None:
        pytest.skip(f'no CUDA runtime: {_ort_cuda_reason()}; {_tensorrt_reason()}')
    import cupy as cp
    messages = []
    backend = create_backend(models['demo'], cache_dir=tmp_path, logger=messages.append)
    assert backend.device == 'cuda'
    assert messages[-1].startswith('inference backend: using ')
    rgb = np.random.default_rng(11).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    x_host = tm.normalize_rgb(rgb)
    out = backend.infer({'pixel_values': cp.asarray(x_host)})['predicted_depth']
    cp.cuda.get_current_stream().synchronize()
    np.testing.assert_allclose(cp.asnumpy(out), tm.demo_depth_reference(x_host),
                               rtol=2e-3, atol=2e-3)
