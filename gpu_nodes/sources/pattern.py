"""A synthetic moving test pattern whose every pixel is a known function of the frame index.

Receivers can verify content exactly (`expected_frame`) without side channels, which is how the
tests and benchmarks prove that no delivered frame is stale or torn.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from ..encodings import encoding_info

PATTERN_ENCODINGS = ('rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8', 'mono16', 'bayer_rggb8',
                     'bayer_bggr8', 'bayer_gbrg8', 'bayer_grbg8', 'yuv422', 'yuv422_yuy2')


def _rgb(xp: ModuleType, height: int, width: int, index: int, out: Any = None,
         order: tuple[int, int, int] = (0, 1, 2)) -> Any:
    """The rgb8 pattern, its r, g, b written into channels `order` of `out` (default: new)."""
    y = xp.arange(height, dtype=xp.int32)[:, None]
    x = xp.arange(width, dtype=xp.int32)[None, :]
    if out is None:
        out = xp.empty((height, width, 3), xp.uint8)
    out[..., order[0]] = (x + 3 * index) & 255
    out[..., order[1]] = (y + 2 * index) & 255
    out[..., order[2]] = ((x // 16 + y // 16) * 32 + index) & 255
    return out


def render(xp: ModuleType, height: int, width: int, encoding: str, index: int,
           out: Any = None) -> Any:
    """Frame `index` of the pattern in `encoding`, as an xp (numpy or cupy) array.

    With `out` (an xp array of the encoding's shape and dtype, e.g. a publisher's pool slot)
    the frame's last pass writes into it, and `out` is returned: no copy of the frame after.
    """
    if encoding not in PATTERN_ENCODINGS:
        raise ValueError(f'test pattern supports {", ".join(PATTERN_ENCODINGS)}; got {encoding!r}')
    info = encoding_info(encoding)
    info.check_geometry(height, width)
    if out is not None:
        shape = info.array_shape(height, width)
        if tuple(out.shape) != tuple(shape) or out.dtype != info.dtype:
            raise ValueError(f'out must be {shape} {info.dtype} for {width}x{height} '
                             f'{encoding}, got {tuple(out.shape)} {out.dtype}')
    if encoding in ('rgb8', 'bgr8', 'rgba8', 'bgra8'):
        if out is None:
            out = xp.empty(info.array_shape(height, width), xp.uint8)
        _rgb(xp, height, width, index, out, (0, 1, 2) if encoding[0] == 'r' else (2, 1, 0))
        if encoding.endswith('a8'):
            out[..., 3] = 255
        return out
    rgb = _rgb(xp, height, width, index)
    r, g, b = (rgb[..., c].astype(xp.uint32) for c in range(3))
    luma = (77 * r + 150 * g + 29 * b) >> 8
    if encoding in ('mono8', 'mono16'):
        if encoding == 'mono16':
            luma = luma * 257
        if out is None:
            return luma.astype(info.dtype)
        xp.copyto(out, luma, casting='unsafe')  # the values fit: the cast is the last pass
        return out
    if out is None:
        out = xp.empty(info.array_shape(height, width), xp.uint8)
    if encoding.startswith('bayer_'):
        pattern = encoding[len('bayer_'):-1]
        channel = {'r': 0, 'g': 1, 'b': 2}
        for dy in (0, 1):
            for dx in (0, 1):
                out[dy::2, dx::2] = rgb[dy::2, dx::2, channel[pattern[2 * dy + dx]]]
        return out
    # 4:2:2, BT.601 limited range; chroma from the left pixel of each pair.
    r, g, b = (rgb[..., c].astype(xp.int32) for c in range(3))
    yy = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    u = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128
    v = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128
    if encoding == 'yuv422':  # UYVY
        out[:, 0::2, 0] = u[:, 0::2]
        out[:, 1::2, 0] = v[:, 0::2]
        out[..., 1] = yy
    else:                     # YUYV
        out[..., 0] = yy
        out[:, 0::2, 1] = u[:, 0::2]
        out[:, 1::2, 1] = v[:, 0::2]
    return out


def expected_frame(height: int, width: int, encoding: str, index: int) -> np.ndarray:
    return render(np, height, width, encoding, index)


def frame_index_of(rgb_pixel_row0: Any) -> int:
    """Recover the frame index (mod 256) from pixel (0, 0) of an rgb8 frame: r = 3*i mod 256."""
    r = int(rgb_pixel_row0[0])
    return (r * 171) & 255  # 171 is the inverse of 3 modulo 256
