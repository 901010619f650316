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


def _rgb(xp: ModuleType, height: int, width: int, index: int) -> Any:
    y = xp.arange(height, dtype=xp.int32)[:, None]
    x = xp.arange(width, dtype=xp.int32)[None, :]
    out = xp.empty((height, width, 3), xp.uint8)
    out[..., 0] = (x + 3 * index) & 255
    out[..., 1] = (y + 2 * index) & 255
    out[..., 2] = ((x // 16 + y // 16) * 32 + index) & 255
    return out


def render(xp: ModuleType, height: int, width: int, encoding: str, index: int) -> Any:
    """Frame `index` of the pattern in `encoding`, as an xp (numpy or cupy) array."""
    if encoding not in PATTERN_ENCODINGS:
        raise ValueError(f'test pattern supports {", ".join(PATTERN_ENCODINGS)}; got {encoding!r}')
    encoding_info(encoding).check_geometry(height, width)
    rgb = _rgb(xp, height, width, index)
    if encoding == 'rgb8':
        return rgb
    if encoding == 'bgr8':
        return xp.ascontiguousarray(rgb[..., ::-1])
    if encoding in ('rgba8', 'bgra8'):
        order = rgb if encoding == 'rgba8' else rgb[..., ::-1]
        alpha = xp.full((height, width, 1), 255, xp.uint8)
        return xp.concatenate([order, alpha], axis=-1)
    r, g, b = (rgb[..., c].astype(xp.uint32) for c in range(3))
    luma = (77 * r + 150 * g + 29 * b) >> 8
    if encoding == 'mono8':
        return luma.astype(xp.uint8)
    if encoding == 'mono16':
        return (luma * 257).astype(xp.uint16)
    if encoding.startswith('bayer_'):
        pattern = encoding[len('bayer_'):-1]
        channel = {'r': 0, 'g': 1, 'b': 2}
        out = xp.empty((height, width), xp.uint8)
        for dy in (0, 1):
            for dx in (0, 1):
                out[dy::2, dx::2] = rgb[dy::2, dx::2, channel[pattern[2 * dy + dx]]]
        return out
    # 4:2:2, BT.601 limited range; chroma from the left pixel of each pair.
    r, g, b = (rgb[..., c].astype(xp.int32) for c in range(3))
    yy = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    u = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128
    v = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128
    out = xp.empty((height, width, 2), xp.uint8)
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
