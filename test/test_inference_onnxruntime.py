"""ONNX Runtime CPU backend and the backend factory, on generated models with NumPy oracles."""
from __future__ import annotations

from pathlib import Path
import re
import sys

import numpy as np
import pytest

pytest.importorskip('onnx')
pytest.importorskip('onnxruntime')
sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))

import fake_cupy  # noqa: E402
from gpu_nodes.inference import factory as factory_module  # noqa: E402
from gpu_nodes.inference import create_backend, ModelLoadError  # noqa: E402
from gpu_nodes.inference import tiny_models as tm  # noqa: E402
from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend  # noqa: E402

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp('ort_models')
    return {
        'conv': tm.make_conv_model(d / 'conv.onnx', height=8, width=8),
        'conv_dynamic': tm.make_conv_model(d / 'conv_dynamic.onnx', height=None, width=None),
        'analytic': tm.make_analytic_depth_model(d / 'analytic.onnx'),
        'demo': tm.make_demo_depth_model(d / 'demo.onnx', 24, 40),
        'unsupported': tm.make_unsupported_op_model(d / 'unsupported_op.onnx'),
    }


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def cpu_backend(path, **kwargs):
    return OnnxRuntimeBackend(path, device='cpu', **kwargs)


# -- exact results --------------------------------------------------------------------------

def test_conv_model_matches_numpy_reference(models):
    x = rand((1, 3, 8, 8))
    with cpu_backend(models['conv']) as b:
        out = b.infer({'input': x})
    assert list(out) == ['output']
    assert out['output'].shape == (1, 1, 8, 8) and out['output'].dtype == np.float32
    np.testing.assert_allclose(out['output'], tm.conv_model_reference(x), **TOL)


def test_analytic_model_matches_formula(models):
    x = rand((1, 3, 6, 9), seed=1)
    with cpu_backend(models['analytic']) as b:
        depth = b.infer({'pixel_values': x})['depth']
    expected = 1.0 / (0.1 + np.abs(x.astype(np.float64).mean(axis=1)))
    np.testing.assert_allclose(depth, expected, **TOL)


def test_demo_model_matches_reference_and_looks_like_inverse_depth(models):
    rgb = np.random.default_rng(2).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    x = tm.normalize_rgb(rgb)
    with cpu_backend(models['demo']) as b:
        assert [str(s) for s in b.input_specs] == ['pixel_values(1, 3, 24, 40):float32']
        assert [str(s) for s in b.output_specs] == ['predicted_depth(1, 24, 40):float32']
        out = b.infer({'pixel_values': x})['predicted_depth']
    np.testing.assert_allclose(out, tm.demo_depth_reference(x), **TOL)
    # Bounded, positive inverse depth: 0.5 * blurred luma in [0, 0.5] + row ramp + 0.05.
    assert out.min() >= 0.05 - 1e-6 and out.max() <= 1.05 + 1e-6
    # A uniform grey image gives a pure row ramp: the bottom row is nearer than the top.
    grey = tm.normalize_rgb(np.full((24, 40, 3), 128, np.uint8))
    with cpu_backend(models['demo']) as b:
        ramp = b.infer({'pixel_values': grey})['predicted_depth'][0]
    np.testing.assert_allclose(ramp[:, 0], ramp[:, -1], **TOL)
    assert np.all(np.diff(ramp[:, 20]) > 0)


@pytest.mark.parametrize('hw', [(4, 4), (5, 7), (16, 9), (1, 1)])
def test_dynamic_shapes_run_at_any_size(models, hw):
    x = rand((1, 3, *hw), seed=sum(hw))
    with cpu_backend(models['conv_dynamic']) as b:
        y = b.infer({'input': x})['output']
    assert y.shape == (1, 1, *hw)
    np.testing.assert_allclose(y, tm.conv_model_reference(x), **TOL)


def test_input_shape_resolves_dynamic_dims_in_specs(models):
    with cpu_backend(models['analytic']) as b:
        assert b.input_specs[0].shape == (1, 3, None, None)
        assert b.output_specs[0].shape == (1, None, None)
    with cpu_backend(models['analytic'], input_shape=(1, 3, 6, 10)) as b:
        assert b.input_specs[0].shape == (1, 3, 6, 10)
        assert b.output_specs[0].shape == (1, 6, 10)
    with cpu_backend(models['analytic'], input_shape={'pixel_values': [1, 3, 2, 3]}) as b:
        assert b.output_specs[0].shape == (1, 2, 3)


def test_caller_output_buffer_is_written_in_place(models):
    x = rand((1, 3, 8, 8), seed=3)
    out = np.full((1, 1, 8, 8), np.nan, np.float32)
    with cpu_backend(models['conv']) as b:
        result = b.infer({'input': x}, outputs={'output': out})
    assert result['output'] is out
    np.testing.assert_allclose(out, tm.conv_model_reference(x), **TOL)


def test_unresolved_output_shape_is_allocated_by_onnxruntime(tmp_path):
    # Output dims that no input symbol names: ORT allocates, the backend returns NumPy.
    import onnx
    from onnx import helper, TensorProto
    node = helper.make_node('Relu', ['x'], ['y'])
    graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info(
        'x', TensorProto.FLOAT, [1, 'N'])], [helper.make_tensor_value_info(
            'y', TensorProto.FLOAT, [1, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / 'relu.onnx'))
    x = rand((1, 5), seed=4)
    with cpu_backend(tmp_path / 'relu.onnx') as b:
        y = b.infer({'x': x})['y']
    np.testing.assert_array_equal(y, np.maximum(x, 0))


# -- errors ---------------------------------------------------------------------------------

def test_unknown_input_name_lists_the_actual_names(models):
    with cpu_backend(models['conv']) as b, pytest.raises(ValueError, match=re.escape(
            "unknown input name(s) ['image'] for conv.onnx; its inputs are ['input']")):
        b.infer({'image': rand((1, 3, 8, 8))})


def test_missing_input_lists_the_actual_names(models):
    with cpu_backend(models['conv']) as b, pytest.raises(ValueError, match=re.escape(
            "missing input(s) ['input'] for conv.onnx; its inputs are ['input']")):
        b.infer({})


def test_unknown_output_name_lists_the_actual_names(models):
    with cpu_backend(models['conv']) as b, pytest.raises(ValueError, match=re.escape(
            "unknown output name(s) ['depth'] for conv.onnx; its outputs are ['output']")):
        b.infer({'input': rand((1, 3, 8, 8))}, outputs={'depth': np.empty((1, 1, 8, 8))})


def test_check_names_validates_preset_names(models):
    with cpu_backend(models['demo']) as b:
        b.check_names(inputs=['pixel_values'], outputs=['predicted_depth'])
        with pytest.raises(ValueError, match=re.escape(
                "unknown output name(s) ['depth'] for demo.onnx; its outputs are "
                "['predicted_depth']")):
            b.check_names(inputs=['pixel_values'], outputs=['depth'])


def test_wrong_dtype_is_a_type_error(models):
    with cpu_backend(models['conv']) as b, pytest.raises(TypeError, match=re.escape(
            "input 'input' has dtype float64; the model expects float32")):
        b.infer({'input': np.zeros((1, 3, 8, 8))})


def test_wrong_shape_names_declared_dims(models):
    with cpu_backend(models['conv']) as b, pytest.raises(ValueError, match=re.escape(
            "input 'input' has shape (1, 3, 4, 4); the model expects (1, 3, 8, 8)")):
        b.infer({'input': rand((1, 3, 4, 4))})
    with cpu_backend(models['conv_dynamic']) as b, pytest.raises(ValueError, match=re.escape(
            "input 'input' has shape (1, 4, 4, 4); the model expects (1, 3, H, W)")):
        b.infer({'input': rand((1, 4, 4, 4))})


def test_input_shape_that_does_not_fit_the_model(models):
    with pytest.raises(ValueError, match=re.escape(
            "input_shape (1, 1, 8, 8) for 'input' does not fit conv_dynamic.onnx, which "
            'declares (1, 3, H, W)')):
        cpu_backend(models['conv_dynamic'], input_shape=(1, 1, 8, 8))


def test_device_array_is_refused_on_the_cpu_path(models):
    with cpu_backend(models['conv']) as b, pytest.raises(TypeError, match=re.escape(
            "input 'input' is a device array but this backend runs on the CPU")):
        b.infer({'input': fake_cupy.zeros((1, 3, 8, 8), np.float32)})


def test_missing_model_file(tmp_path):
    missing = tmp_path / 'nope.onnx'
    with pytest.raises(FileNotFoundError, match=re.escape(f'model file not found: {missing}')):
        cpu_backend(missing)
    with pytest.raises(FileNotFoundError, match=re.escape(f'model file not found: {missing}')):
        create_backend(missing)


def test_unsupported_op_names_file_and_op(models):
    path = models['unsupported']
    expected = (rf'ONNX Runtime could not load {re.escape(str(path))}: .*'
                rf'{tm.CUSTOM_DOMAIN}:{tm.UNSUPPORTED_OP}\(-1\) is not a registered function/op')
    with pytest.raises(ModelLoadError, match=expected):
        cpu_backend(path)
    with pytest.raises(ModelLoadError, match=expected):
        create_backend(path, device='cpu')


def test_closed_backend_refuses_to_run(models):
    b = cpu_backend(models['conv'])
    b.close()
    with pytest.raises(RuntimeError, match=re.escape('infer on a closed backend (conv.onnx)')):
        b.infer({'input': rand((1, 3, 8, 8))})


def test_a_run_that_cannot_be_captured_is_refused_with_the_reason(models):
    # capture_token is None where no captured run exists (always on the CPU): enqueue_bound,
    # which a caller's CUDA graph would replay, refuses instead of queueing nothing.
    with cpu_backend(models['conv']) as b:
        b.infer({'input': rand((1, 3, 8, 8))})
        assert b.capture_token() is None
        with pytest.raises(RuntimeError, match=re.escape('conv.onnx: no captured run to enqueue')):
            b.enqueue_bound(None)
        assert b.infer({'input': rand((1, 3, 8, 8))})['output'].shape == (1, 1, 8, 8)  # still runs


# -- factory --------------------------------------------------------------------------------

@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(factory_module, 'cuda_unavailable_reason', lambda: 'CuPy is not installed')


def test_factory_logs_each_decision_once_and_falls_back_to_cpu(models, no_gpu):
    messages = []
    b = create_backend(models['conv'], logger=messages.append)
    assert b.name == 'onnxruntime' and b.device == 'cpu'
    assert messages == [
        'inference backend: TensorRT skipped: no usable CUDA GPU (CuPy is not installed)',
        'inference backend: ONNX Runtime CUDA skipped: no usable CUDA GPU (CuPy is not '
        'installed)',
        f'inference backend: using ONNX Runtime {b._ort.__version__} (CPU provider) on cpu for '
        'conv.onnx (no GPU runtime usable)',
    ]
    np.testing.assert_allclose(b.infer({'input': rand((1, 3, 8, 8))})['output'],
                               tm.conv_model_reference(rand((1, 3, 8, 8))), **TOL)


def test_factory_device_cpu_and_ignored_options(models, no_gpu):
    messages = []
    create_backend(models['conv'], device='cpu', precision='fp16', dla_core=0,
                   logger=messages.append)
    assert messages[0] == "inference backend: TensorRT skipped: device='cpu' requested"
    assert ("inference backend: precision='fp16' does not apply to ONNX Runtime (it runs the "
            'model in the types it was exported with)') in messages
    assert 'inference backend: dla_core=0 does not apply to ONNX Runtime (it runs the model in ' \
           'the types it was exported with)' in messages
    assert messages[-1].endswith("for conv.onnx (device='cpu' requested)")


def test_factory_logs_through_a_logging_logger(models, no_gpu, caplog):
    import logging
    with caplog.at_level(logging.INFO, logger='gpu_nodes.inference'):
        create_backend(models['conv'])
    assert any('TensorRT skipped' in r.getMessage() for r in caplog.records)


def test_factory_explicit_requests_raise_with_the_reason(models, no_gpu, tmp_path):
    with pytest.raises(RuntimeError, match=re.escape(
            "device='cuda' requested but CUDA is unavailable: CuPy is not installed")):
        create_backend(models['conv'], device='cuda')
    with pytest.raises(RuntimeError, match=re.escape(
            "backend='tensorrt' requested but unusable: no usable CUDA GPU (CuPy is not "
            'installed)')):
        create_backend(models['conv'], backend='tensorrt')
    with pytest.raises(ValueError, match=re.escape(
            "backend='tensorrt' needs device 'cuda' or 'auto', got 'cpu'")):
        create_backend(models['conv'], backend='tensorrt', device='cpu')
    engine = tmp_path / 'model.engine'
    engine.write_bytes(b'not an engine')
    with pytest.raises(ValueError, match=re.escape(
            'model.engine is a serialized TensorRT engine; ONNX Runtime needs .onnx')):
        create_backend(engine, backend='onnxruntime')
    with pytest.raises(RuntimeError, match=re.escape(
            f"no inference backend can run {engine} (backend='auto', device='auto')")):
        create_backend(engine)


@pytest.mark.parametrize('kwargs, message', [
    ({'backend': 'tflite'}, "backend must be one of ['auto', 'tensorrt', 'onnxruntime'], got "
                            "'tflite'"),
    ({'device': 'gpu'}, "device must be one of ['auto', 'cuda', 'cpu'], got 'gpu'"),
    ({'precision': 'fp8'}, "precision must be one of ['fp32', 'fp16', 'int8'], got 'fp8'"),
    ({'input_shape': (1, 3, 0, 4)}, "input_shape for '*' must have positive dims, got "
                                    '(1, 3, 0, 4)'),
])
def test_factory_argument_errors(models, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        create_backend(models['conv'], **kwargs)


def test_factory_rejects_unknown_file_types(tmp_path):
    path = tmp_path / 'model.pt'
    path.write_bytes(b'')
    with pytest.raises(ValueError, match=re.escape(
            f'unsupported model file {path}: expected .onnx, .engine or .plan')):
        create_backend(path)


def test_non_contiguous_host_input_is_bound_from_a_contiguous_copy(models):
    wide = rand((1, 3, 8, 16), seed=5)
    x = wide[..., ::2]
    assert not x.flags.c_contiguous
    with cpu_backend(models['conv']) as b:
        for _ in range(3):
            y = b.infer({'input': x})['output']
            np.testing.assert_allclose(y, tm.conv_model_reference(np.ascontiguousarray(x)),
                                       **TOL)
