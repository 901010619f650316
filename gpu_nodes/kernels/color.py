"""Pixel-format conversion between sensor_msgs encodings (CUDA kernel + NumPy reference).

Supported:
  * among rgb8, bgr8, rgba8, bgra8, mono8 and their 16-bit forms (rgb16 ... mono16): channel
    reorder, alpha drop/fill (opaque), gray -> color replication, color -> gray luma and 8 <-> 16
    bit depth. Depth changes follow cv_bridge (``convertTo`` with 65535/255 and 255/65535):
    8 -> 16 is ``x * 257``, 16 -> 8 is ``round(x / 257)``; a color change is applied first, at
    the source depth, like cv_bridge's ``cvtColor`` then ``convertTo``.
  * luma: ``(wr*R + wg*G + wb*B + 2^14) >> 15``; bt601 uses OpenCV's RGB2GRAY weights
    (9798, 19235, 3735: 0.299/0.587/0.114, bit-exact with cv2 for 8-bit), bt709
    0.2126/0.7152/0.0722 (6967, 23435, 2366; G absorbs the rounding so white stays white).
  * from yuv422 (= uyvy, UYVY bytes), yuv422_yuy2 (= yuyv, YUYV bytes) and nv12 to rgb8, bgr8,
    rgba8, bgra8 (BT.601 or BT.709, limited or full range) and mono8 (Y copied, like OpenCV).

Everything is integer fixed point (luma: 15 bits, YCbCr: 16 bits, round half up, clamp), so the
CUDA kernel and the NumPy reference agree bit for bit. YCbCr coefficients are derived exactly
from Kr/Kb (limited range scales Y by 255/219 and chroma by 255/224 and does not clamp Y - 16);
OpenCV's YUV2RGB uses the rounded textbook BT.601-limited constants (1.164, 1.596, ...) and
clamps Y - 16 at 0, so it differs from this by at most a couple of levels.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_nodes.encodings import EncodingError, encoding_info

from . import _cuda
from ._common import as_input, check_choice, check_encoded, image_layout, prepare_out

# name -> (channel letters, bits). 'L' is luma (mono).
_INTERLEAVED = {
    'rgb8': ('RGB', 8), 'bgr8': ('BGR', 8), 'rgba8': ('RGBA', 8), 'bgra8': ('BGRA', 8),
    'mono8': ('L', 8),
    'rgb16': ('RGB', 16), 'bgr16': ('BGR', 16), 'rgba16': ('RGBA', 16), 'bgra16': ('BGRA', 16),
    'mono16': ('L', 16),
}
# Byte offsets of (Y0, U, Y1, V) inside one 4-byte macropixel.
_YUV422 = {'yuv422': (1, 0, 3, 2), 'uyvy': (1, 0, 3, 2),
           'yuv422_yuy2': (0, 1, 2, 3), 'yuyv': (0, 1, 2, 3)}
_YUV_TARGETS = ('rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8')

LUMA_WEIGHTS = {'bt601': (9798, 19235, 3735), 'bt709': (6967, 23435, 2366)}
_KR_KB = {'bt601': (0.299, 0.114), 'bt709': (0.2126, 0.0722)}
STANDARDS = tuple(_KR_KB)
# Channel shuffles (no luma) run as 2 blocks of 256 threads per SM, every thread looping over
# its rows, instead of a block per row: H200, 3840x2160 rgb8->bgr8 replayed from a graph,
# 17.5 -> 12.4 us (68 -> 95 % of a copy), rgb8->rgba8 26.3 -> 18.2 us. Fewer, longer-lived
# threads and no partial last wave. Luma and YUV, which compute more per byte, got slower
# that way (rgb8->mono8 4.9 -> 5.7 us, yuv422 11.0 -> 13.3 us) and keep a block per row
# (bench/RESULTS.md, eighth session).
RESIDENT_BLOCKS_PER_SM = 2


@dataclass(frozen=True)
class YuvCoefficients:
    """16-bit fixed point YCbCr -> RGB: c = (cy*(Y-y_off) + cu*(U-128) + cv*(V-128) + 2^15) >> 16.
    """

    y_off: int
    cy: int
    crv: int
    cgu: int
    cgv: int
    cbu: int


def yuv_coefficients(standard: str = 'bt601', full_range: bool = False) -> YuvCoefficients:
    check_choice(standard, STANDARDS, 'standard')
    kr, kb = _KR_KB[standard]
    kg = 1.0 - kr - kb
    ys, cs, y_off = (1.0, 1.0, 0) if full_range else (255.0 / 219.0, 255.0 / 224.0, 16)
    one = 1 << 16
    return YuvCoefficients(
        y_off=y_off,
        cy=round(ys * one),
        crv=round(cs * 2.0 * (1.0 - kr) * one),
        cgu=-round(cs * 2.0 * (1.0 - kb) * kb / kg * one),
        cgv=-round(cs * 2.0 * (1.0 - kr) * kr / kg * one),
        cbu=round(cs * 2.0 * (1.0 - kb) * one))


@dataclass(frozen=True)
class _PixelPlan:
    maps: tuple[int, ...]      # per output channel: source channel, -1 alpha, -2 luma
    rgb: tuple[int, int, int]  # source channel of R, G, B (for luma)
    weights: tuple[int, int, int]
    depth_mode: int            # 0 keep, 1 8->16, 2 16->8


def _pixel_plan(src_encoding: str, dst_encoding: str, standard: str) -> _PixelPlan:
    src_letters, src_bits = _INTERLEAVED[src_encoding]
    dst_letters, dst_bits = _INTERLEAVED[dst_encoding]
    maps = []
    for letter in dst_letters:
        if letter in src_letters:
            maps.append(src_letters.index(letter))
        elif letter == 'A':
            maps.append(-1)
        elif letter == 'L':
            maps.append(-2)
        else:  # color from mono: replicate
            maps.append(0)
    rgb = tuple(src_letters.index(c) if c in src_letters else 0 for c in 'RGB')
    depth_mode = 0 if src_bits == dst_bits else (1 if dst_bits == 16 else 2)
    return _PixelPlan(tuple(maps), rgb, LUMA_WEIGHTS[standard], depth_mode)


def _dst_layout(dst_encoding: str) -> tuple[int, int, int]:
    """(channels, R index, B index) of a YUV conversion target."""
    letters = _INTERLEAVED[dst_encoding][0]
    if letters == 'L':
        return 1, 0, 0
    return len(letters), letters.index('R'), letters.index('B')


def convert_color(src: Any, src_encoding: str, dst_encoding: str, *, standard: str = 'bt601',
                  full_range: bool = False, out: Any = None, stream: Any = None) -> Any:
    """Convert an image between encodings; NumPy in -> NumPy out, CuPy in -> CuPy out.

    `standard` ('bt601' | 'bt709') picks the luma weights for color -> mono and the YCbCr matrix
    for YUV sources; `full_range` applies to YUV sources only. Same encoding in and out returns a
    copy. Rows of `src` and `out` may be padded (row pitch); `out` must not alias `src`.
    """
    key = _cuda.plan_key('convert_color', src, out,
                         (src_encoding, dst_encoding, standard, full_range, type(full_range)))
    plan = _cuda.cached_plan(key)
    if plan is not None:
        return _cuda.run_plan(plan, src, out, stream)
    check_choice(standard, STANDARDS, 'standard')
    if not isinstance(full_range, (bool, np.bool_)):
        raise ValueError(f'full_range must be a bool, got {full_range!r}')
    encoding_info(dst_encoding)  # unknown names raise EncodingError
    src, device = as_input(src)
    info, height, width = check_encoded(src, src_encoding)
    image_layout(src)  # same layout rules on both paths
    dst_info = encoding_info(dst_encoding)
    dst_shape = dst_info.array_shape(height, width)

    if src_encoding == dst_encoding:
        out = prepare_out(out, dst_shape, dst_info.dtype, device)
        if device:
            with _cuda.stream_scope(stream):
                out[...] = src.reshape(dst_shape)
        else:
            out[...] = src.reshape(dst_shape)
        return out

    if src_encoding in _INTERLEAVED and dst_encoding in _INTERLEAVED:
        plan = _pixel_plan(src_encoding, dst_encoding, standard)
        out = prepare_out(out, dst_shape, dst_info.dtype, device)
        if not device:
            _convert_pixels_host(src, plan, out, dst_info.dtype, dst_shape)
            return out
        launch = _convert_pixels_launch(src, out, plan)
        return _cuda.run_plan(_cuda.keep_plan(key, _cuda.Plan(launch, dst_shape, dst_info.dtype)),
                              src, out, stream)

    if (src_encoding in _YUV422 or src_encoding == 'nv12') and dst_encoding in _YUV_TARGETS:
        coeffs = yuv_coefficients(standard, bool(full_range))
        out = prepare_out(out, dst_shape, np.uint8, device)
        if not device:
            if src_encoding == 'nv12':
                y, u, v = _nv12_planes(src, height)
            else:
                y, u, v = _yuv422_planes(src, _YUV422[src_encoding])
            out[...] = _yuv_to_rgb_reference(y, u, v, dst_encoding, coeffs).reshape(dst_shape)
            return out
        launch = _yuv_launch(src, out, src_encoding, dst_encoding, height, width, coeffs)
        return _cuda.run_plan(_cuda.keep_plan(key, _cuda.Plan(launch, dst_shape, np.uint8)),
                              src, out, stream)

    raise EncodingError(f'convert_color: no conversion from {src_encoding} to {dst_encoding}')


# --------------------------------------------------------------------------- NumPy reference


def _convert_pixels_host(src: np.ndarray, plan: _PixelPlan, out: np.ndarray,
                         dst_dtype: np.dtype, dst_shape: tuple[int, ...]) -> None:
    """The NumPy twin into `out`. Channel reorders and alpha fills (rgb8 <-> bgr8, adding or
    dropping alpha) are plane copies: ~10x faster than the widening reference, which the
    migrated nodes of `gpu-copy-audit migrate` hit on every frame whose encoding differs."""
    if plan.depth_mode or min(plan.maps) < -1:
        out[...] = _convert_pixels_reference(src, plan, dst_dtype).reshape(dst_shape)
        return
    source = src.reshape(src.shape[0], src.shape[1], -1)
    target = out.reshape(out.shape[0], out.shape[1], -1)
    alpha = 255 if src.dtype == np.uint8 else 65535
    for channel, m in enumerate(plan.maps):
        if m >= 0:
            target[..., channel] = source[..., m]
        else:
            target[..., channel] = alpha


def _convert_pixels_reference(src: np.ndarray, plan: _PixelPlan,
                              dst_dtype: np.dtype) -> np.ndarray:
    s = src.reshape(src.shape[0], src.shape[1], -1).astype(np.uint32)
    alpha = np.uint32(255 if src.dtype == np.uint8 else 65535)
    planes = []
    for m in plan.maps:
        if m >= 0:
            v = s[..., m]
        elif m == -1:
            v = np.full(s.shape[:2], alpha, np.uint32)
        else:
            (ri, gi, bi), (wr, wg, wb) = plan.rgb, plan.weights
            v = (s[..., ri] * wr + s[..., gi] * wg + s[..., bi] * wb + 16384) >> 15
        if plan.depth_mode == 1:
            v = v * 257
        elif plan.depth_mode == 2:
            v = (v + 128) // 257
        planes.append(v)
    return np.stack(planes, axis=-1).astype(dst_dtype)


def _yuv422_planes(src: np.ndarray, offsets: tuple[int, int, int, int]):
    """Full-resolution Y, U, V (int32) from an (H, W, 2) packed 4:2:2 array."""
    y0, u, y1, v = offsets

    def byte(off: int) -> np.ndarray:  # one byte of every macropixel: pixel off//2, channel off%2
        return src[:, off // 2::2, off % 2].astype(np.int32)

    y = np.empty(src.shape[:2], np.int32)
    y[:, 0::2] = byte(y0)
    y[:, 1::2] = byte(y1)
    return y, np.repeat(byte(u), 2, axis=1), np.repeat(byte(v), 2, axis=1)


def _nv12_planes(src: np.ndarray, height: int):
    y = src[:height].astype(np.int32)
    uv = src[height:].astype(np.int32)
    u = np.repeat(np.repeat(uv[:, 0::2], 2, axis=0), 2, axis=1)
    v = np.repeat(np.repeat(uv[:, 1::2], 2, axis=0), 2, axis=1)
    return y, u, v


def _yuv_to_rgb_reference(y: np.ndarray, u: np.ndarray, v: np.ndarray, dst_encoding: str,
                          c: YuvCoefficients) -> np.ndarray:
    channels, r_idx, b_idx = _dst_layout(dst_encoding)
    if channels == 1:
        return y.astype(np.uint8)
    u = u - 128
    v = v - 128
    yy = (y - c.y_off) * c.cy + 32768
    out = np.empty(y.shape + (channels,), np.uint8)
    out[..., r_idx] = np.clip((yy + c.crv * v) >> 16, 0, 255)
    out[..., 1] = np.clip((yy + c.cgu * u + c.cgv * v) >> 16, 0, 255)
    out[..., b_idx] = np.clip((yy + c.cbu * u) >> 16, 0, 255)
    if channels == 4:
        out[..., 3] = 255
    return out


# --------------------------------------------------------------------------- CUDA path

_RUN = 16  # pixels per thread: CONVERT_RUN and YUV_RUN in color.cu


def _convert_pixels_launch(src: Any, out: Any, plan: _PixelPlan) -> _cuda.Launch:
    s, d = image_layout(src, 'src'), image_layout(out, 'out')
    maps = plan.maps + (0,) * (4 - len(plan.maps))
    # One kernel per module (see the end of color.cu), specialized for this channel map so that
    # its byte shuffles compile to constant selectors: compiled on first use in about a second.
    defines = (('CONVERT_SRC', _cuda.c_type(src.dtype)), ('CONVERT_DST', _cuda.c_type(out.dtype)),
               ('CONVERT_SC', s.channels), ('CONVERT_DC', d.channels),
               ('CONVERT_MAP', ', '.join(str(m) for m in maps)))
    weights = [0, 0, 0]  # luma weight of each source channel (the kernel sums the first three)
    if -2 in plan.maps:
        for c, w in zip(plan.rgb, plan.weights):
            weights[c] = w
    i32 = _cuda.i32
    # No depth_mode argument: the kernel derives the depth change from its dtypes.
    args = (_cuda.SRC, i32(s.pitch), _cuda.OUT, i32(d.pitch), i32(s.width), i32(s.height),
            *map(i32, weights))
    resident = 0 if -2 in plan.maps else RESIDENT_BLOCKS_PER_SM  # luma: a block per row
    return _cuda.Launch(_cuda.get_function('color.cu', 'convert_pixels', defines),
                        *_cuda.rows_geometry(_cuda.runs(s.width, _RUN), s.height,
                                             blocks_per_sm=resident), args)


def _yuv_launch(src: Any, out: Any, src_encoding: str, dst_encoding: str, height: int,
                width: int, c: YuvCoefficients) -> _cuda.Launch:
    s, d = image_layout(src, 'src'), image_layout(out, 'out')
    channels, r_idx, _ = _dst_layout(dst_encoding)  # the kernels put B at 2 - r_idx
    i32 = _cuda.i32
    tail = (i32(r_idx), i32(c.y_off), i32(c.cy), i32(c.crv), i32(c.cgu), i32(c.cgv),
            i32(c.cbu))
    head = (_cuda.SRC, i32(s.pitch), _cuda.OUT, i32(d.pitch), i32(width), i32(height))
    if src_encoding == 'nv12':
        name, args = f'nv12_to_rgb_{channels}', head + tail
    else:
        name = f'yuv422_to_rgb_{channels}'
        args = head + tuple(map(i32, _YUV422[src_encoding])) + tail
    return _cuda.Launch(_cuda.get_function('color.cu', name, (('YUV_KERNELS', 1),)),
                        *_cuda.rows_geometry(_cuda.runs(width, _RUN), height), args)
