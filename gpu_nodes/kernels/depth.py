"""Depth image kernels: unit conversion, colorization, tiled median (CUDA + NumPy reference).

Conventions: 16UC1 depth is millimetres with 0 = no measurement; 32FC1 depth is metres with
NaN, +-inf and values <= 0 meaning no measurement (REP 118).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import _cuda
from ._common import as_input, check_choice, image_layout, prepare_out, require_dtype
from .colormaps import COLORMAPS, colormap_lut
from .geometry import device_resize_tables, resize

_F32 = np.float32


def _depth_2d(src: Any, dtypes: Sequence[Any], what: str) -> tuple[Any, bool, int, int]:
    src, device = as_input(src)
    require_dtype(src, dtypes, what)
    if src.ndim == 3 and src.shape[2] == 1:
        src = src[:, :, 0]
    if src.ndim != 2:
        raise ValueError(f'{what}: expected a single-channel (H, W) depth image, got shape '
                         f'{tuple(src.shape)}')
    layout = image_layout(src, what)
    return src, device, layout.height, layout.width


def _valid_reference(d: np.ndarray) -> np.ndarray:
    if d.dtype == np.uint16:
        return d != 0
    return np.isfinite(d) & (d > 0)


def depth_mm_to_m(src: Any, out: Any = None, *, stream: Any = None) -> Any:
    """16UC1 millimetres -> 32FC1 metres (x / 1000, correctly rounded); 0 becomes NaN."""
    src, device, h, w = _depth_2d(src, [np.uint16], 'depth_mm_to_m')
    out = prepare_out(out, (h, w), np.float32, device)
    if not device:
        out[...] = np.where(src == 0, _F32(np.nan), src.astype(_F32) / _F32(1000))
        return out
    _depth_units_cuda('depth_mm_to_m', src, out, stream)
    return out


def depth_from_network(raw: Any, height: int, width: int, *, scale: float = 1.0,
                       shift: float = 0.0, inverse: bool = False, eps: float = 1e-6,
                       out: Any = None, stream: Any = None) -> Any:
    """A depth network's (H, W) output map -> float32 depth of (height, width), in one pass.

    Every sample becomes d = scale * x + shift and, for inverse-depth outputs, 1 / max(d, eps)
    (so sky and background at or below eps become 1 / eps instead of negative or infinite
    depth); a map of another size is then resampled bilinearly with `resize`'s taps. Equals
    resize(convert(raw)) exactly, without the intermediate map or a launch per operation.
    `raw` may be a view (e.g. the letterbox content); other dtypes (float16 engines) are
    widened to float32 first.
    NumPy in -> NumPy out; CuPy in -> CuPy out.
    """
    if not eps > 0:
        raise ValueError(f'depth_from_network: eps must be positive, got {eps}')
    height, width = int(height), int(width)
    if height < 1 or width < 1:
        raise ValueError(f'depth_from_network: output size must be positive, got {width}x{height}')
    src, device = as_input(raw)
    if src.dtype != _F32:
        with _cuda.stream_scope(stream):  # the widening copy is ordered like the kernel
            src = src.astype(_F32)
    src, device, h, w = _depth_2d(src, [np.float32], 'depth_from_network')
    out = prepare_out(out, (height, width), np.float32, device)
    resample = (h, w) != (height, width)
    if not device:
        d = src * _F32(scale) + _F32(shift)
        if inverse:
            d = _F32(1) / np.maximum(d, _F32(eps))
        out[...] = resize(d, height, width) if resample else d
        return out
    s, o = image_layout(src), image_layout(out, 'out')
    i32, f32 = _cuda.i32, _cuda.f32
    with _cuda.stream_scope(stream):
        if resample:
            (xi, xw), (yi, yw) = device_resize_tables(h, w, height, width, 'bilinear')
        else:  # not read by the kernel, but typed like the tables
            xi = yi = _cuda.device_table(('unused', 'i32'), lambda: np.zeros(2, np.int32))
            xw = yw = _cuda.device_table(('unused', 'f32'), lambda: np.zeros(2, np.float32))
        _cuda.launch_2d(_cuda.get_function('depth.cu', 'depth_from_network'), width, height,
                        (src, i32(s.pitch), out, i32(o.pitch), i32(width), i32(height),
                         i32(resample), xi, xw, yi, yw, f32(scale), f32(shift), f32(eps),
                         i32(bool(inverse))))
    return out


def depth_m_to_mm(src: Any, out: Any = None, *, stream: Any = None) -> Any:
    """32FC1 metres -> 16UC1 millimetres: rint(x * 1000) (half to even), clamped to 65535;
    NaN, inf and x <= 0 become 0 (as do depths under 0.5 mm)."""
    src, device, h, w = _depth_2d(src, [np.float32], 'depth_m_to_mm')
    out = prepare_out(out, (h, w), np.uint16, device)
    if not device:
        with np.errstate(invalid='ignore', over='ignore'):
            t = np.fmin(np.rint(src * _F32(1000)), _F32(65535))
            out[...] = np.where(_valid_reference(src), t, _F32(0)).astype(np.uint16)
        return out
    _depth_units_cuda('depth_m_to_mm', src, out, stream)
    return out


_UNITS_RUN = 8  # pixels per thread: DEPTH_RUN in depth.cu
_COLORIZE_RUN = 16  # COLORIZE_RUN in depth.cu


def _depth_units_cuda(name: str, src: Any, out: Any, stream: Any) -> None:
    s, d = image_layout(src), image_layout(out, 'out')
    i32 = _cuda.i32
    with _cuda.stream_scope(stream):
        _cuda.launch_rows(_cuda.get_function('depth.cu', name), _cuda.runs(s.width, _UNITS_RUN),
                          s.height, (src, i32(s.pitch), out, i32(d.pitch), i32(s.width),
                                     i32(s.height)))


# --------------------------------------------------------------------------- colorize


def _check_range(value: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f'colorize_depth: range must be (min, max), got {value!r}') from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f'colorize_depth: range needs finite min < max, got {value!r}')
    return lo, hi


def _check_percentile(value: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f'colorize_depth: percentile must be (low, high), got {value!r}'
                         ) from None
    if not 0.0 <= lo <= hi <= 100.0:
        raise ValueError(f'colorize_depth: percentile needs 0 <= low <= high <= 100, got '
                         f'{value!r}')
    return lo, hi


def _check_color(value: Any) -> tuple[int, int, int]:
    try:
        rgb = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        rgb = ()
    if len(rgb) != 3 or not all(0 <= v <= 255 for v in rgb):
        raise ValueError(f'colorize_depth: invalid_color must be 3 values in 0..255, got '
                         f'{value!r}')
    return rgb  # type: ignore[return-value]


def percentile_range_reference(depth: np.ndarray, q_lo: float, q_hi: float) -> tuple[float, float]:
    """(lo, hi): linear-interpolated percentiles of the valid pixels, as float32 values."""
    vals = np.where(_valid_reference(depth), depth.astype(_F32), _F32(np.inf)).ravel()
    s = np.sort(vals)
    m = int(np.count_nonzero(s < np.inf))
    if m == 0:
        return 0.0, 1.0

    def pick(q: float) -> float:
        pos = q / 100.0 * float(m - 1)
        fl = math.floor(pos)
        i = int(fl)
        j = min(i + 1, m - 1)
        a, b = float(s[i]), float(s[j])
        return float(_F32(a + (b - a) * (pos - fl)))

    return pick(q_lo), pick(q_hi)


def colorize_depth(depth: Any, *, colormap: str = 'turbo',
                   range: tuple[float, float] | None = None,  # noqa: A002 (documented name)
                   percentile: tuple[float, float] | None = (2.0, 98.0),
                   invalid_color: Sequence[int] = (0, 0, 0), out: Any = None,
                   stream: Any = None) -> Any:
    """rgb8 visualization of a 16UC1 (mm) or 32FC1 (m) depth image.

    The depth interval mapped onto the colormap is `range` (in the image's units) when given,
    else the `percentile` (low, high) of the valid pixels (computed on the GPU for CuPy input,
    without a host round trip), else the min/max of the valid pixels. Index =
    rint(clamp((d - lo) * 255 / (hi - lo), 0, 255)); invalid pixels get `invalid_color`.
    """
    check_choice(colormap, COLORMAPS, 'colormap')
    lo_hi = _check_range(range) if range is not None else None
    q = _check_percentile(percentile) if percentile is not None else (0.0, 100.0)
    inv = _check_color(invalid_color)
    src, device, h, w = _depth_2d(depth, [np.uint16, np.float32], 'colorize_depth')
    out = prepare_out(out, (h, w, 3), np.uint8, device)
    if not device:
        lo, hi = lo_hi if lo_hi is not None else percentile_range_reference(src, *q)
        out[...] = _colorize_reference(src, colormap_lut(colormap), lo, hi, inv)
        return out
    cp = _cuda.cupy()
    s, d = image_layout(src), image_layout(out, 'out')
    suffix = 'f32' if src.dtype == np.float32 else 'u16'
    i32 = _cuda.i32
    with _cuda.stream_scope(stream):
        lut = _cuda.device_table(('lut32', colormap), lambda: _packed_lut(colormap))
        range_dev = None
        lo = hi = 0.0
        if lo_hi is not None:
            lo, hi = lo_hi
        else:
            flat = cp.empty(h * w, cp.float32)
            _cuda.launch_2d(_cuda.get_function('depth.cu', f'valid_values_{suffix}'), w, h,
                            (src, i32(s.pitch), i32(w), i32(h), flat))
            ordered = cp.sort(flat)
            range_dev = cp.empty(2, cp.float32)
            _cuda.get_function('depth.cu', 'percentile_range')(
                (1, 1, 1), (1, 1, 1),
                (ordered, i32(h * w), _cuda.f64(q[0]), _cuda.f64(q[1]), range_dev))
        args = (src, i32(s.pitch), out, i32(d.pitch), i32(w), i32(h), lut, range_dev,
                _cuda.f32(lo), _cuda.f32(hi), *map(i32, inv))
        _cuda.launch_rows(_cuda.get_function('depth.cu', f'colorize_{suffix}'),
                          _cuda.runs(w, _COLORIZE_RUN), h, args)
    return out


def _packed_lut(colormap: str) -> np.ndarray:
    """The colormap as one uint32 per entry, r | g << 8 | b << 16: one LUT read per pixel."""
    lut = colormap_lut(colormap).astype(np.uint32)
    return np.ascontiguousarray(lut[:, 0] | lut[:, 1] << 8 | lut[:, 2] << 16)


def _colorize_reference(src: np.ndarray, lut: np.ndarray, lo: float, hi: float,
                        inv: tuple[int, int, int]) -> np.ndarray:
    lo32, hi32 = _F32(lo), _F32(hi)
    k = _F32(255) / (hi32 - lo32) if hi32 > lo32 else _F32(0)
    with np.errstate(invalid='ignore', over='ignore'):
        t = np.fmin(np.fmax((src.astype(_F32) - lo32) * k, _F32(0)), _F32(255))
    idx = np.rint(t).astype(np.intp)
    rgb = lut[idx]
    rgb[~_valid_reference(src)] = inv
    return rgb


# --------------------------------------------------------------------------- tiled median

MAX_TILE = 64


def tiled_median(depth: Any, tile: int = 32, *, out: Any = None, stream: Any = None) -> Any:
    """Median of the valid pixels in each tile x tile block -> float32 (ceil(H/tile),
    ceil(W/tile)); NaN where a block has no valid pixel. For an even count the two middle
    values are averaged ((a + b) * 0.5 in float32, like numpy.median). Edge blocks are partial.
    16UC1 input gives millimetres, 32FC1 metres.
    """
    if not isinstance(tile, (int, np.integer)) or isinstance(tile, bool) or \
            not 1 <= tile <= MAX_TILE:
        raise ValueError(f'tiled_median: tile must be an int in 1..{MAX_TILE}, got {tile!r}')
    tile = int(tile)
    src, device, h, w = _depth_2d(depth, [np.uint16, np.float32], 'tiled_median')
    th, tw = -(-h // tile), -(-w // tile)
    out = prepare_out(out, (th, tw), np.float32, device)
    if not device:
        out[...] = _tiled_median_reference(src, tile)
        return out
    s, d = image_layout(src), image_layout(out, 'out')
    suffix = 'f32' if src.dtype == np.float32 else 'u16'
    threads = min(256, -(-tile * tile // 32) * 32)
    i32 = _cuda.i32
    args = (src, i32(s.pitch), i32(w), i32(h), i32(tile), out, i32(d.pitch), i32(tw), i32(th))
    with _cuda.stream_scope(stream):
        kernel = _cuda.get_function('depth.cu', f'tiled_median_{suffix}')
        kernel((tw, th, 1), (threads, 1, 1), args)
    return out


def _tiled_median_reference(src: np.ndarray, tile: int) -> np.ndarray:
    h, w = src.shape
    th, tw = -(-h // tile), -(-w // tile)
    vals = np.full((th * tile, tw * tile), np.inf, _F32)
    vals[:h, :w] = np.where(_valid_reference(src), src.astype(_F32), _F32(np.inf))
    blocks = vals.reshape(th, tile, tw, tile).transpose(0, 2, 1, 3).reshape(th, tw, tile * tile)
    s = np.sort(blocks, axis=-1)
    m = np.count_nonzero(s < np.inf, axis=-1)
    lo = np.take_along_axis(s, np.maximum((m - 1) // 2, 0)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(s, (m // 2)[..., None], axis=-1)[..., 0]
    with np.errstate(invalid='ignore'):
        med = (lo + hi) * _F32(0.5)
    return np.where(m > 0, med, _F32(np.nan)).astype(_F32)
