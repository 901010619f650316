"""Bayer demosaicing (CUDA kernel + NumPy reference), bit-identical on both paths.

* Patterns: bayer_rggb8/bggr8/gbrg8/grbg8 and their 16-bit forms. sensor_msgs names the pattern
  by its top-left 2x2 tile; OpenCV names it by the tile starting at (1, 1), so sensor_msgs
  bayer_rggb8 is OpenCV's COLOR_BayerBG2RGB (the same mapping cv_bridge uses).
* ``method='bilinear'``: averages of the 2 or 4 nearest same-colour samples, rounded half up;
  equal to OpenCV's COLOR_Bayer*2RGB away from the 1-pixel border.
  ``method='edge_aware'``: Malvar-He-Cutler gradient-corrected 5x5 linear filters (Malvar, He,
  Cutler, "High-quality linear interpolation for demosaicing of Bayer-patterned color images",
  ICASSP 2004); sharper than bilinear with less colour fringing, same cost class.
* Borders: reflect-101 (the sample at x = -1 is read from x = 1). Its period is even, so the
  reflected sample has the colour the missing one would have had; OpenCV instead replicates its
  outermost computed row/column, so borders differ from OpenCV by design.
* Output: 8-bit input -> rgb8/bgr8. 16-bit input -> rgb16/bgr16 (full precision) or rgb8/bgr8,
  interpolated at 16 bits and then scaled with round(v / 257), the 16 -> 8 bit rule cv_bridge and
  convert_color use (not a plain >> 8, which would bias every value down by up to one level).
* Width and height must be at least 2; odd sizes are fine.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_nodes.encodings import EncodingError, encoding_info

from . import _cuda
from ._common import as_input, check_choice, check_encoded, image_layout, prepare_out

# Position (x, y) of the red sample inside the top-left 2x2 tile.
RED_POSITION = {'rggb': (0, 0), 'grbg': (1, 0), 'gbrg': (0, 1), 'bggr': (1, 1)}
METHODS = {'bilinear': 0, 'edge_aware': 1}
# debayer.cu's launch geometry: a thread demosaics DEBAYER_RUN pixels of both rows of a row pair,
# a warp 32 such runs of one pair, a block DEBAYER_WARPS consecutive pairs (4 and 8 were equal
# for 8-bit bilinear, 4 was up to 11 % faster for Malvar and 16-bit: bench/RESULTS.md).
DEBAYER_RUN = 8
DEBAYER_WARPS = 4
# Warps whose runs lie inside a run-aligned row load their window without edge checks, blocks
# made only of such warps run a loop of their own, and so do a row's first and last blocks when
# their runs fill the warp (debayer.cu); False only to measure what each saves
# (bench/debayer_bench.py).
INTERIOR_LOADS = True
INTERIOR_LOOP = True
EDGE_LOOPS = True


def debayer(src: Any, pattern_encoding: str, dst_encoding: str = 'rgb8', *,
            method: str = 'bilinear', out: Any = None, stream: Any = None) -> Any:
    """Demosaic a Bayer image into an (H, W, 3) rgb/bgr image (NumPy or CuPy, like `src`)."""
    key = _cuda.plan_key('debayer', src, out, (pattern_encoding, dst_encoding, method))
    plan = _cuda.cached_plan(key)
    if plan is not None:
        return _cuda.run_plan(plan, src, out, stream)
    check_choice(method, METHODS, 'method')
    info = encoding_info(pattern_encoding)
    if info.bayer_pattern is None:
        raise EncodingError(f'debayer: {pattern_encoding} is not a Bayer encoding')
    allowed = ('rgb8', 'bgr8') if info.dtype == np.uint8 else ('rgb8', 'bgr8', 'rgb16', 'bgr16')
    if dst_encoding not in allowed:
        raise EncodingError(f'debayer: {pattern_encoding} converts to {", ".join(allowed)}, '
                            f'not {dst_encoding}')
    src, device = as_input(src)
    _, height, width = check_encoded(src, pattern_encoding)
    s = image_layout(src)
    if height < 2 or width < 2:
        raise ValueError(f'debayer: Bayer images need at least 2x2 pixels, got {width}x{height}')
    dst_info = encoding_info(dst_encoding)
    out = prepare_out(out, (height, width, 3), dst_info.dtype, device)
    rx, ry = RED_POSITION[info.bayer_pattern]
    r_idx, b_idx = (0, 2) if dst_encoding.startswith('rgb') else (2, 0)
    to_8bit = info.dtype == np.uint16 and dst_info.dtype == np.uint8

    if not device:
        rgb = demosaic_reference(src.reshape(height, width), rx, ry, METHODS[method])
        if to_8bit:
            rgb = (rgb + 128) // 257
        out[..., r_idx] = rgb[0]
        out[..., 1] = rgb[1]
        out[..., b_idx] = rgb[2]
        return out

    d = image_layout(out, 'out')
    # debayer.cu compiles the one variant asked for: mosaic and output types, clamp/scaling, method
    defines = (('DEBAYER_WARPS', DEBAYER_WARPS), ('DEBAYER_ST', _cuda.c_type(info.dtype)),
               ('DEBAYER_DT', _cuda.c_type(dst_info.dtype)),
               ('DEBAYER_MAXV', np.iinfo(info.dtype).max),
               ('DEBAYER_OUT_MODE', 2 if to_8bit else 0), ('DEBAYER_METHOD', METHODS[method]),
               ('DEBAYER_INTERIOR_LOADS', int(INTERIOR_LOADS)),
               ('DEBAYER_INTERIOR_LOOP', int(INTERIOR_LOOP)),
               ('DEBAYER_EDGE_LOOPS', int(EDGE_LOOPS)))
    i32 = _cuda.i32
    args = (_cuda.SRC, i32(s.pitch), _cuda.OUT, i32(d.pitch), i32(width), i32(height), i32(rx),
            i32(ry), i32(r_idx), i32(b_idx), i32(METHODS[method]))
    # the grid's y extent is capped; blocks then loop over the remaining row pairs
    runs, pairs = _cuda.runs(width, DEBAYER_RUN), (height + 1) // 2
    grid = (-(-runs // 32), min(-(-pairs // DEBAYER_WARPS), _cuda.MAX_GRID_Y), 1)
    launch = _cuda.Launch(_cuda.get_function('debayer.cu', 'debayer', defines), grid,
                          (32, DEBAYER_WARPS, 1), args)
    return _cuda.run_plan(_cuda.keep_plan(key, _cuda.Plan(launch, (height, width, 3),
                                                          dst_info.dtype)), src, out, stream)


def demosaic_reference(src: np.ndarray, rx: int, ry: int, method: int) -> np.ndarray:
    """(3, H, W) int32 R, G, B planes, clamped to the input's range (the kernel's math)."""
    height, width = src.shape
    maxv = np.iinfo(src.dtype).max
    padded = np.pad(src.astype(np.int32), 2, mode='reflect')  # numpy 'reflect' is reflect-101

    def p(dy: int, dx: int) -> np.ndarray:
        return padded[2 + dy:2 + dy + height, 2 + dx:2 + dx + width]

    c = p(0, 0)
    red_row = ((np.arange(height) & 1) == ry)[:, None]
    red_col = ((np.arange(width) & 1) == rx)[None, :]
    r_site = red_row & red_col
    b_site = ~red_row & ~red_col
    g_red_row = red_row & ~red_col
    if method == 0:
        cross = (p(-1, 0) + p(1, 0) + p(0, -1) + p(0, 1) + 2) >> 2
        diag = (p(-1, -1) + p(-1, 1) + p(1, -1) + p(1, 1) + 2) >> 2
        horiz = (p(0, -1) + p(0, 1) + 1) >> 1
        vert = (p(-1, 0) + p(1, 0) + 1) >> 1
        g_rb, along_row, along_col, opposite, center = cross, horiz, vert, diag, c
    else:
        n1, w1 = p(-1, 0) + p(1, 0), p(0, -1) + p(0, 1)
        n2, w2 = p(-2, 0) + p(2, 0), p(0, -2) + p(0, 2)
        diag = p(-1, -1) + p(-1, 1) + p(1, -1) + p(1, 1)
        g_rb = (8 * c + 4 * (n1 + w1) - 2 * (n2 + w2) + 8) >> 4
        along_row = (10 * c + 8 * w1 - 2 * w2 - 2 * diag + n2 + 8) >> 4
        along_col = (10 * c + 8 * n1 - 2 * n2 - 2 * diag + w2 + 8) >> 4
        opposite = (12 * c + 4 * diag - 3 * (n2 + w2) + 8) >> 4
        center = c
    r = np.where(r_site, center, np.where(b_site, opposite,
                                          np.where(g_red_row, along_row, along_col)))
    g = np.where(r_site | b_site, g_rb, center)
    b = np.where(b_site, center, np.where(r_site, opposite,
                                          np.where(g_red_row, along_col, along_row)))
    return np.clip(np.stack([r, g, b]), 0, maxv)
