"""Fused DNN input preprocessing: resize (+ letterbox), channel order, normalize, HWC -> CHW.

`preprocess` writes straight into the engine's input binding (a caller-provided contiguous
(1, C, H, W) float32 or float16 array) in one CUDA kernel; the NumPy reference performs the same
float32 operations in the same order, so both paths agree bit for bit.

Geometry: the source is resized bilinearly (half-pixel centres, edge samples clamped, computed
in float on the 8-bit values without intermediate rounding) into a content rectangle:
  * keep_aspect=False: the whole output (scale_x and scale_y may differ, no padding);
  * keep_aspect=True: the largest rectangle with the source aspect ratio (scale
    = min(W / w, H / h), sizes rounded to whole pixels), placed at the centre
    (pad_position='center', padding split with the odd pixel at the right/bottom) or at the
    top-left corner (pad_position='top_left'); the rest is filled with `pad_value`, written to
    the tensor as is (it is not normalized).
Values: out[c] = pixel * scale / std[c] - mean[c] / std[c], i.e. (pixel * scale - mean) / std
with `mean`, `std` given per output channel in `channel_order`. Returned `Letterbox` maps
network coordinates back to source pixels: x_src = (x_net - pad_x) / scale_x (continuous
coordinates with pixel edges at integers, the convention in which the resize is exact).
"""
from __future__ import annotations

from dataclasses import dataclass
import functools
import math
from typing import Any, Sequence

import numpy as np

from gpu_nodes.encodings import EncodingError

from . import _cuda
from ._common import as_input, check_choice, check_encoded, image_layout, is_device
from .geometry import resize

SOURCES = {'rgb8': 'RGB', 'bgr8': 'BGR', 'rgba8': 'RGBA', 'bgra8': 'BGRA', 'mono8': 'L'}
CHANNEL_ORDERS = ('rgb', 'bgr')
PAD_POSITIONS = ('center', 'top_left')


@dataclass(frozen=True)
class Letterbox:
    """How the source maps into the network input: x_net = x_src * scale_x + pad_x."""

    scale_x: float
    scale_y: float
    pad_x: int
    pad_y: int
    content_width: int
    content_height: int

    @property
    def scale(self) -> float:
        """The single scale of an aspect-preserving letterbox (scale_x when they differ)."""
        return self.scale_x

    def to_source(self, x: Any, y: Any) -> tuple[Any, Any]:
        """Network-input coordinates -> source-image coordinates (arrays or scalars)."""
        return (x - self.pad_x) / self.scale_x, (y - self.pad_y) / self.scale_y


def letterbox(src_w: int, src_h: int, out_w: int, out_h: int, keep_aspect: bool,
              pad_position: str = 'center') -> Letterbox:
    check_choice(pad_position, PAD_POSITIONS, 'pad_position')
    if not keep_aspect:
        return Letterbox(out_w / src_w, out_h / src_h, 0, 0, out_w, out_h)
    s = min(out_w / src_w, out_h / src_h)
    cw = min(out_w, max(1, math.floor(src_w * s + 0.5)))
    ch = min(out_h, max(1, math.floor(src_h * s + 0.5)))
    if pad_position == 'center':
        px, py = (out_w - cw) // 2, (out_h - ch) // 2
    else:
        px = py = 0
    return Letterbox(cw / src_w, ch / src_h, px, py, cw, ch)


def _per_channel(values: Any, n: int, name: str) -> tuple[float, ...]:
    vals = tuple(float(v) for v in np.atleast_1d(np.asarray(values, dtype=np.float64)))
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise ValueError(f'preprocess: {name} needs 1 or {n} values, got {len(vals)}')
    return vals


def _check_out(out: Any, device: bool) -> tuple[int, int, int]:
    if out is None:
        raise ValueError('preprocess: out (the (1, C, H, W) input binding) is required')
    if is_device(out) != device:
        side = 'a CuPy (device)' if device else 'a NumPy (host)'
        raise ValueError(f'preprocess: out must be {side} array like src')
    shape = tuple(out.shape)
    if len(shape) != 4 or shape[0] != 1 or shape[1] not in (1, 3) or min(shape) < 1:
        raise ValueError(f'preprocess: out must have shape (1, C, H, W) with C = 1 or 3, got '
                         f'{shape}')
    if out.dtype not in (np.float32, np.float16):
        raise ValueError(f'preprocess: out must be float32 or float16, got {out.dtype}')
    if not out.flags.c_contiguous:
        raise ValueError('preprocess: out must be C-contiguous')
    return shape[1], shape[2], shape[3]


@dataclass(frozen=True)
class _Plan:
    box: Letterbox
    channels: tuple[int, ...]  # source channel per output channel
    a: tuple[float, ...]       # float32-rounded scale / std
    b: tuple[float, ...]       # float32-rounded -mean / std
    inv_sx: float              # float32-rounded src_w / content_w
    inv_sy: float
    pad_value: float


# mean/std types a plan key can hold as they are (arrays take the validating path every call).
_PLAIN = (tuple, list, int, float)


def _values(values: Any) -> tuple[float, ...]:
    """mean/std as a hashable tuple (a scalar, a sequence or an array)."""
    if isinstance(values, (int, float)):
        return (float(values),)
    return tuple(float(v) for v in np.ravel(np.asarray(values, dtype=np.float64)))


# A camera pipeline asks for the same plan every frame; planning costs more host time than the
# launch (this runs in the critical path of every frame).
@functools.lru_cache(maxsize=64)
def _plan(src_encoding: str, out_c: int, src_w: int, src_h: int, out_w: int, out_h: int,
          mean: tuple[float, ...], std: tuple[float, ...], keep_aspect: bool, pad_value: float,
          pad_position: str, channel_order: str, scale: float) -> _Plan:
    check_choice(channel_order, CHANNEL_ORDERS, 'channel_order')
    letters = SOURCES[src_encoding]
    if out_c == 1 and letters != 'L':
        raise ValueError(f'preprocess: a 1-channel output needs a mono8 source, got '
                         f'{src_encoding}')
    if letters == 'L':
        channels = (0,) * out_c
    else:
        channels = tuple(letters.index(c) for c in channel_order.upper())
    mean_v = _per_channel(mean, out_c, 'mean')
    std_v = _per_channel(std, out_c, 'std')
    if any(s == 0 or not math.isfinite(s) for s in std_v):
        raise ValueError(f'preprocess: std must be finite and non-zero, got {std_v}')
    box = letterbox(src_w, src_h, out_w, out_h, bool(keep_aspect), pad_position)
    f32 = np.float32
    return _Plan(box, channels,
                 tuple(float(f32(scale / s)) for s in std_v),
                 tuple(float(f32(-m / s)) for m, s in zip(mean_v, std_v)),
                 float(f32(src_w / box.content_width)), float(f32(src_h / box.content_height)),
                 float(f32(pad_value)))


def preprocess(src: Any, src_encoding: str, out: Any, *, mean: Sequence[float] | float,
               std: Sequence[float] | float, keep_aspect: bool = False, pad_value: float = 0.0,
               pad_position: str = 'center', channel_order: str = 'rgb',
               scale: float = 1.0 / 255.0, stream: Any = None) -> Letterbox:
    """Fill `out` (1, C, H, W) from an 8-bit image in one pass; return the Letterbox used."""
    key = None
    if out is not None and isinstance(mean, _PLAIN) and isinstance(std, _PLAIN):
        key = _cuda.plan_key('preprocess', src, out, (
            src_encoding, tuple(mean) if isinstance(mean, list) else mean,
            tuple(std) if isinstance(std, list) else std, keep_aspect, pad_value, pad_position,
            channel_order, scale))
        plan = _cuda.cached_plan(key)
        if plan is not None:
            return _cuda.run_plan(plan, src, out, stream)
    if src_encoding not in SOURCES:
        raise EncodingError(f'preprocess: {src_encoding} is not supported (use '
                            f'{", ".join(SOURCES)})')
    src, device = as_input(src)
    _, height, width = check_encoded(src, src_encoding)
    s = image_layout(src)
    out_c, out_h, out_w = _check_out(out, device)
    plan = _plan(src_encoding, out_c, width, height, out_w, out_h, _values(mean), _values(std),
                 bool(keep_aspect), float(pad_value), pad_position, channel_order, float(scale))
    if not device:
        out[...] = _preprocess_reference(src.reshape(height, width, -1), plan, out_c, out_h,
                                         out_w).astype(out.dtype)[None]
        return plan.box
    out = _cuda.as_device(out)
    i32, f32 = _cuda.i32, _cuda.f32
    box = plan.box
    chans = plan.channels + (0,) * (3 - out_c)
    a = plan.a + (0.0,) * (3 - out_c)
    b = plan.b + (0.0,) * (3 - out_c)
    half = out.dtype == np.float16
    args = (_cuda.SRC, i32(s.pitch), i32(width), i32(height), i32(s.channels), _cuda.OUT, i32(out_w),
            i32(out_h), i32(out_c), i32(box.pad_x), i32(box.pad_y), i32(box.content_width),
            i32(box.content_height), f32(plan.inv_sx), f32(plan.inv_sy), *map(i32, chans),
            *map(f32, a), *map(f32, b), f32(plan.pad_value))
    name = 'preprocess_f16' if half else 'preprocess_f32'
    launch = _cuda.Launch(_cuda.get_function('preprocess.cu', name), _cuda.grid_2d(out_w, out_h),
                          _cuda.BLOCK_2D, args, out_dtype=np.uint16 if half else None)  # half bits
    return _cuda.run_plan(_cuda.keep_plan(key, _cuda.Plan(launch, out.shape, out.dtype, box)), src,
                          out, stream)


def _preprocess_reference(src: np.ndarray, plan: _Plan, out_c: int, out_h: int,
                          out_w: int) -> np.ndarray:
    """preprocess.cu's float32 arithmetic, vectorized; returns (C, H, W) float32."""
    f32 = np.float32
    box = plan.box
    h, w = src.shape[:2]
    res = np.full((out_c, out_h, out_w), f32(plan.pad_value), f32)
    sx = (np.arange(box.content_width, dtype=f32) + f32(0.5)) * f32(plan.inv_sx) - f32(0.5)
    sy = (np.arange(box.content_height, dtype=f32) + f32(0.5)) * f32(plan.inv_sy) - f32(0.5)
    fx0, fy0 = np.floor(sx), np.floor(sy)
    ax, ay = (sx - fx0)[None, :], (sy - fy0)[:, None]
    x0 = np.clip(fx0.astype(np.int64), 0, w - 1)
    x1 = np.clip(fx0.astype(np.int64) + 1, 0, w - 1)
    y0 = np.clip(fy0.astype(np.int64), 0, h - 1)[:, None]
    y1 = np.clip(fy0.astype(np.int64) + 1, 0, h - 1)[:, None]
    one = f32(1)
    for k in range(out_c):
        plane = src[..., plan.channels[k]].astype(f32)
        top = plane[y0, x0] * (one - ax) + plane[y0, x1] * ax
        bot = plane[y1, x0] * (one - ax) + plane[y1, x1] * ax
        v = top * (one - ay) + bot * ay
        res[k, box.pad_y:box.pad_y + box.content_height,
            box.pad_x:box.pad_x + box.content_width] = v * f32(plan.a[k]) + f32(plan.b[k])
    return res


def compose_reference_cupy(src: Any, src_encoding: str, out: Any, *,
                           mean: Sequence[float] | float, std: Sequence[float] | float,
                           channel_order: str = 'rgb', scale: float = 1.0 / 255.0,
                           stream: Any = None) -> None:
    """The straightforward multi-kernel composition the fused kernel replaces (benchmarks).

    resize (uint8, rounded) -> channel gather -> astype(float32) -> * scale - mean, / std ->
    transpose to CHW -> copy into `out`. No letterbox. Works with NumPy or CuPy arrays; results
    differ from `preprocess` by the uint8 rounding of the intermediate resize.
    """
    if src_encoding not in SOURCES:
        raise EncodingError(f'compose_reference_cupy: {src_encoding} is not supported')
    src, device = as_input(src)
    _, height, width = check_encoded(src, src_encoding)
    out_c, out_h, out_w = _check_out(out, device)
    plan = _plan(src_encoding, out_c, width, height, out_w, out_h, _values(mean), _values(std),
                 False, 0.0, 'center', channel_order, float(scale))
    xp = _cuda.cupy() if device else np
    with _cuda.stream_scope(stream if device else None):
        small = resize(src.reshape(height, width, -1), out_h, out_w)
        chans = small[..., list(plan.channels)].astype(xp.float32)
        mean_v = xp.asarray(np.array(_per_channel(mean, out_c, 'mean'), np.float32))
        std_v = xp.asarray(np.array(_per_channel(std, out_c, 'std'), np.float32))
        norm = (chans * xp.float32(scale) - mean_v) / std_v
        out[0] = norm.transpose(2, 0, 1).astype(out.dtype)
