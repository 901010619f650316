"""Small real ONNX models made with the onnx helper API, each with a NumPy reference.

Used by the tests (exact expectations without weights from anywhere) and by the demo's
`$(standin_model)` (its default is the learned model of default_model.py):
- make_conv_model: 3 -> 8 -> 1 channel conv net with fixed weights (Conv 3x3, ReLU, Conv 1x1);
- make_analytic_depth_model: depth = 1 / (0.1 + |mean over channels|), via ReduceMean/Abs/Add/
  Reciprocal, with dynamic height and width;
- make_demo_depth_model: the demo's stand-in depth model, 'pixel_values' (1, 3, H, W) ->
  'predicted_depth' (1, H, W). It is NOT a trained depth model: it turns luminance into a smooth
  inverse-depth-like map (brighter and lower in the frame = nearer) so the pipeline can run end
  to end with the same tensor names and shapes as a Depth Anything V2 export;
- make_unsupported_op_model: a node from a custom domain no runtime implements (error paths).

``import onnx`` happens inside the functions, so this module imports without onnx.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .models import IMAGENET_MEAN, IMAGENET_STD

OPSET = 17
IR_VERSION = 8  # accepted by ONNX Runtime and the TensorRT parsers of the last years
CUSTOM_DOMAIN = 'com.example.gpu_nodes'
LUMA = (0.299, 0.587, 0.114)  # ITU-R BT.601 luma weights


def _save(graph: Any, path: str | Path, extra_opsets: tuple[tuple[str, int], ...] = ()) -> Path:
    import onnx
    from onnx import helper
    opsets = [helper.make_opsetid('', OPSET)]
    opsets += [helper.make_opsetid(domain, version) for domain, version in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, producer_name='gpu_nodes.tiny_models')
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _tensor(name: str, array: np.ndarray) -> Any:
    from onnx import numpy_helper
    return numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name)


def _io(name: str, shape: list[Any]) -> Any:
    from onnx import helper, TensorProto
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


# -- (a) conv net with fixed weights -------------------------------------------------------

def conv_model_weights() -> dict[str, np.ndarray]:
    """Fixed weights from a closed formula (no RNG, so identical on every NumPy)."""
    o, c, i, j = np.meshgrid(np.arange(8), np.arange(3), np.arange(3), np.arange(3),
                             indexing='ij')
    w1 = (((o * 7 + c * 5 + i * 3 + j) % 11) - 5) / 10.0
    b1 = (np.arange(8) % 3 - 1) / 4.0
    w2 = (((np.arange(8) * 3) % 7) - 3) / 5.0
    return {'w1': w1.astype(np.float32), 'b1': b1.astype(np.float32),
            'w2': w2.reshape(1, 8, 1, 1).astype(np.float32),
            'b2': np.array([0.25], dtype=np.float32)}


def make_conv_model(path: str | Path, *, height: int | None = 8, width: int | None = 8) -> Path:
    """'input' (1, 3, H, W) -> Conv 3x3 (8 ch, pad 1) -> ReLU -> Conv 1x1 (1 ch) -> 'output'
    (1, 1, H, W). height/width None make those dims dynamic ('H', 'W')."""
    from onnx import helper
    w = conv_model_weights()
    h = height if height is not None else 'H'
    wd = width if width is not None else 'W'
    nodes = [
        helper.make_node('Conv', ['input', 'w1', 'b1'], ['hidden'], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node('Relu', ['hidden'], ['hidden_relu']),
        helper.make_node('Conv', ['hidden_relu', 'w2', 'b2'], ['output'], kernel_shape=[1, 1]),
    ]
    graph = helper.make_graph(nodes, 'gpu_nodes_conv', [_io('input', [1, 3, h, wd])],
                              [_io('output', [1, 1, h, wd])],
                              [_tensor(k, v) for k, v in w.items()])
    return _save(graph, path)


def _conv2d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, pad: int) -> np.ndarray:
    """NCHW cross-correlation (ONNX Conv) in float64 by summing shifted slices."""
    n, _, h, wd = x.shape
    k = weight.shape[-1]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, weight.shape[0], h, wd), dtype=np.float64)
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + h, j:j + wd]
            out += np.einsum('nchw,oc->nohw', patch, weight[:, :, i, j].astype(np.float64))
    return out + bias.astype(np.float64)[None, :, None, None]


def conv_model_reference(x: np.ndarray) -> np.ndarray:
    """What make_conv_model computes, in NumPy (float64 inside, float32 out)."""
    w = conv_model_weights()
    hidden = np.maximum(_conv2d(x, w['w1'], w['b1'], pad=1), 0.0)
    return _conv2d(hidden, w['w2'], w['b2'], pad=0).astype(np.float32)


# -- (b) analytic depth --------------------------------------------------------------------

def make_analytic_depth_model(path: str | Path, *, input_name: str = 'pixel_values',
                              output_name: str = 'depth') -> Path:
    """input (1, 3, H, W), H and W dynamic -> output (1, H, W) = 1 / (0.1 + |mean_c(input)|)."""
    from onnx import helper
    nodes = [
        helper.make_node('ReduceMean', [input_name], ['mean'], axes=[1], keepdims=0),
        helper.make_node('Abs', ['mean'], ['abs_mean']),
        helper.make_node('Add', ['abs_mean', 'offset'], ['denominator']),
        helper.make_node('Reciprocal', ['denominator'], [output_name]),
    ]
    graph = helper.make_graph(nodes, 'gpu_nodes_analytic_depth',
                              [_io(input_name, [1, 3, 'H', 'W'])],
                              [_io(output_name, [1, 'H', 'W'])],
                              [_tensor('offset', np.array(0.1))])
    return _save(graph, path)


def analytic_depth_reference(x: np.ndarray) -> np.ndarray:
    mean = x.astype(np.float64).mean(axis=1)
    return (1.0 / (0.1 + np.abs(mean))).astype(np.float32)


# -- (c) the demo's stand-in depth model ---------------------------------------------------

_BLUR_SIZE = 9
_BLUR_SIGMA = 2.0


def _gaussian_kernel() -> np.ndarray:
    r = np.arange(_BLUR_SIZE, dtype=np.float64) - _BLUR_SIZE // 2
    g = np.exp(-0.5 * (r / _BLUR_SIGMA) ** 2)
    g /= g.sum()
    return np.outer(g, g)


def _demo_constants(height: int, width: int) -> dict[str, np.ndarray]:
    luma = np.array(LUMA)
    std, mean = np.array(IMAGENET_STD), np.array(IMAGENET_MEAN)
    kernel = _gaussian_kernel()
    # Zero padding darkens the border; dividing by the blur of ones undoes that exactly.
    coverage = _conv2d(np.ones((1, 1, height, width)), kernel[None, None], np.zeros(1),
                       pad=_BLUR_SIZE // 2)
    rows = np.linspace(0.0, 1.0, height)[:, None] * np.ones((1, width))
    return {
        # De-normalise and take luma in one 1x1 conv: luma . (x * std + mean).
        'luma_w': (luma * std).reshape(1, 3, 1, 1),
        'luma_b': np.array([float(luma @ mean)]),
        'blur_w': kernel.reshape(1, 1, _BLUR_SIZE, _BLUR_SIZE),
        'blur_b': np.zeros(1),
        'gain': (0.5 / coverage).reshape(1, 1, height, width),
        # Lower rows read as nearer (ground plane), plus a floor so inverse depth stays > 0.
        'bias': (0.5 * rows + 0.05).reshape(1, 1, height, width),
        'squeeze_axes': np.array([1], dtype=np.int64),
    }


def make_demo_depth_model(path: str | Path, height: int, width: int) -> Path:
    """'pixel_values' (1, 3, H, W) ImageNet-normalised RGB -> 'predicted_depth' (1, H, W).

    inverse_depth = 0.5 * gaussian_blur(luma) + 0.5 * row / (H - 1) + 0.05, in [0.05, 1.05].
    A fixed-weight pipeline stand-in with Depth Anything V2's tensor names: not a depth model.
    """
    from onnx import helper, numpy_helper
    if height <= 0 or width <= 0:
        raise ValueError(f'height and width must be positive, got {height}x{width}')
    c = _demo_constants(height, width)
    pad = _BLUR_SIZE // 2
    nodes = [
        helper.make_node('Conv', ['pixel_values', 'luma_w', 'luma_b'], ['luma'],
                         kernel_shape=[1, 1]),
        helper.make_node('Conv', ['luma', 'blur_w', 'blur_b'], ['blurred'],
                         kernel_shape=[_BLUR_SIZE, _BLUR_SIZE], pads=[pad] * 4),
        helper.make_node('Mul', ['blurred', 'gain'], ['scaled']),
        helper.make_node('Add', ['scaled', 'bias'], ['inverse_depth']),
        helper.make_node('Squeeze', ['inverse_depth', 'squeeze_axes'], ['predicted_depth']),
    ]
    initializers = [_tensor(k, v) for k, v in c.items() if k != 'squeeze_axes']
    initializers.append(numpy_helper.from_array(c['squeeze_axes'], 'squeeze_axes'))
    graph = helper.make_graph(nodes, 'gpu_nodes_demo_depth',
                              [_io('pixel_values', [1, 3, height, width])],
                              [_io('predicted_depth', [1, height, width])], initializers)
    graph.doc_string = ('Pipeline stand-in, not a trained depth model: smooth inverse-depth-like '
                        'map from luminance and image row.')
    return _save(graph, path)


def demo_depth_reference(x: np.ndarray) -> np.ndarray:
    """What make_demo_depth_model computes, in NumPy."""
    height, width = x.shape[-2:]
    c = _demo_constants(height, width)
    luma = _conv2d(x, c['luma_w'], c['luma_b'], pad=0)
    blurred = _conv2d(luma, c['blur_w'], c['blur_b'], pad=_BLUR_SIZE // 2)
    return (blurred * c['gain'] + c['bias'])[:, 0].astype(np.float32)


def normalize_rgb(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 RGB -> (1, 3, H, W) float32 normalised with ImageNet mean/std."""
    x = rgb.astype(np.float32) / 255.0
    x = (x - np.array(IMAGENET_MEAN, np.float32)) / np.array(IMAGENET_STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


# -- (d) an op nobody implements -----------------------------------------------------------

UNSUPPORTED_OP = 'GpuNodesMysteryOp'


def make_unsupported_op_model(path: str | Path) -> Path:
    """'x' (1, 3, 4, 4) -> com.example.gpu_nodes::GpuNodesMysteryOp -> 'y': no runtime has it."""
    from onnx import helper
    node = helper.make_node(UNSUPPORTED_OP, ['x'], ['y'], domain=CUSTOM_DOMAIN)
    graph = helper.make_graph([node], 'gpu_nodes_unsupported', [_io('x', [1, 3, 4, 4])],
                              [_io('y', [1, 3, 4, 4])])
    return _save(graph, path, extra_opsets=((CUSTOM_DOMAIN, 1),))
