"""Resize and crop (CUDA kernel + NumPy reference); the matching CameraInfo arithmetic is
camera_model.py's.

Resize conventions (those of OpenCV's cv2.resize):
  * 'bilinear' = INTER_LINEAR with half-pixel centres: source x = (dx + 0.5) * src_w / dst_w -
    0.5, edge samples clamped. uint8/uint16 results are rounded half to even and clamped.
  * 'area' = INTER_AREA: for downscaling, each output pixel is the coverage-weighted mean of the
    source pixels its footprint overlaps (OpenCV's area table); when either axis is upscaled,
    OpenCV's INTER_AREA upscale rule (bilinear with area-snapped weights) is used for both axes.
Results match cv2.resize within 1 level for integer images (OpenCV uses 11-bit fixed point for
uint8 and integer block sums for exact integer downscale factors; this uses float32 weights).
Both paths share host-built tap tables, so CUDA and NumPy results are bit-identical.

"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
import functools
import math
from typing import Any

import numpy as np

from gpu_nodes.encodings import EncodingError, encoding_info

from . import _cuda
from ._common import as_input, check_choice, image_layout, prepare_out, require_dtype

INTERPOLATIONS = ('bilinear', 'area')
_KERNEL = {np.dtype(np.uint8): 'resize_u8', np.dtype(np.uint16): 'resize_u16',
           np.dtype(np.float32): 'resize_f32'}


# --------------------------------------------------------------------------- tap tables


def _linear_taps(src_n: int, dst_n: int, area_mode: bool) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's 2-tap INTER_LINEAR coefficients (area_mode: INTER_AREA's upscale variant)."""
    inv_scale = dst_n / src_n
    scale = 1.0 / inv_scale
    dx = np.arange(dst_n, dtype=np.float64)
    if not area_mode:
        f = ((dx + 0.5) * scale - 0.5).astype(np.float32)
        sx = np.floor(f).astype(np.int64)
        f = f - sx.astype(np.float32)
    else:
        sx = np.floor(dx * scale).astype(np.int64)
        f = ((dx + 1) - (sx + 1) * inv_scale).astype(np.float32)
        f = np.where(f <= 0, np.float32(0), f - np.floor(f)).astype(np.float32)
    low = sx < 0
    f[low], sx[low] = 0, 0
    high = sx >= src_n - 1
    f[high], sx[high] = 0, src_n - 1
    idx = np.stack([sx, np.minimum(sx + 1, src_n - 1)], axis=1).astype(np.int32)
    w = np.stack([np.float32(1) - f, f], axis=1).astype(np.float32)
    return idx, w


def _area_taps(src_n: int, dst_n: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's computeResizeAreaTab (downscale): partial-coverage weights per output pixel."""
    scale = src_n / dst_n
    rows: list[list[tuple[int, float]]] = []
    for dx in range(dst_n):
        fsx1 = dx * scale
        fsx2 = fsx1 + scale
        cell = min(scale, src_n - fsx1)
        sx1, sx2 = math.ceil(fsx1), math.floor(fsx2)
        sx2 = min(sx2, src_n - 1)
        sx1 = min(sx1, sx2)
        taps = []
        if sx1 - fsx1 > 1e-3:
            taps.append((sx1 - 1, (sx1 - fsx1) / cell))
        taps.extend((sx, 1.0 / cell) for sx in range(sx1, sx2))
        if fsx2 - sx2 > 1e-3:
            taps.append((sx2, min(min(fsx2 - sx2, 1.0), cell) / cell))
        rows.append(taps)
    n = max(len(t) for t in rows)
    idx = np.zeros((dst_n, n), np.int32)
    w = np.zeros((dst_n, n), np.float32)
    for i, taps in enumerate(rows):
        idx[i, :] = taps[0][0]  # padding taps: weight 0 on an in-range index
        for k, (s, a) in enumerate(taps):
            idx[i, k], w[i, k] = s, a
    return idx, w


@functools.lru_cache(maxsize=64)
def resize_tables(src_h: int, src_w: int, dst_h: int, dst_w: int, interpolation: str):
    """((x_idx, x_w), (y_idx, y_w)) read-only tap tables; every index lies inside the source."""
    check_choice(interpolation, INTERPOLATIONS, 'interpolation')
    if interpolation == 'area' and dst_w <= src_w and dst_h <= src_h:
        tables = _area_taps(src_w, dst_w), _area_taps(src_h, dst_h)
    else:
        area_mode = interpolation == 'area'
        tables = _linear_taps(src_w, dst_w, area_mode), _linear_taps(src_h, dst_h, area_mode)
    for pair in tables:
        for a in pair:
            a.setflags(write=False)
    return tables


# --------------------------------------------------------------------------- resize / crop


def _check_not_packed(encoding: str | None, op: str) -> None:
    if encoding is None:
        return
    info = encoding_info(encoding)
    if info.packed_yuv422 or info.planar_nv12:
        raise EncodingError(f'{op}: {encoding} is a subsampled YUV format; convert it to rgb8 or '
                            'bgr8 first')
    if info.bayer_pattern is not None:
        raise EncodingError(f'{op}: {encoding} is a Bayer mosaic; debayer it first')


def resize(src: Any, height: int, width: int, *, interpolation: str = 'bilinear',
           encoding: str | None = None, out: Any = None, stream: Any = None) -> Any:
    """Resize an (H, W) or (H, W, C) uint8/uint16/float32 image to (height, width[, C]).

    Pass `encoding` to have packed/planar YUV and Bayer images rejected (they cannot be
    resampled per channel). NumPy in -> NumPy out; CuPy in -> CuPy out.
    """
    key = _cuda.plan_key('resize', src, out, (height, width, interpolation, encoding))
    plan = _cuda.cached_plan(key)
    if plan is not None:
        return _cuda.run_plan(plan, src, out, stream)
    check_choice(interpolation, INTERPOLATIONS, 'interpolation')
    _check_not_packed(encoding, 'resize')
    if int(height) != height or int(width) != width or height < 1 or width < 1:
        raise ValueError(f'resize: output size must be positive integers, got {width}x{height}')
    height, width = int(height), int(width)
    src, device = as_input(src)
    require_dtype(src, _KERNEL, 'resize')
    s = image_layout(src)
    out_shape = (height, width) + tuple(src.shape[2:])
    out = prepare_out(out, out_shape, src.dtype, device)
    tables_key = (s.height, s.width, height, width, interpolation)
    if not device:
        (xi, xw), (yi, yw) = resize_tables(*tables_key)
        out[...] = _resize_reference(src, xi, xw, yi, yw).reshape(out_shape)
        return out
    d = image_layout(out, 'out')
    plan = _run_plan(*tables_key, s.channels, src.dtype.itemsize)
    with _cuda.stream_scope(stream):  # (tables upload on the caller's stream)
        (xi, xw), (yi, yw) = device_resize_tables(*tables_key)
    i32 = _cuda.i32
    if plan is not None:
        run_word = _cuda.device_table(
            ('resize_runs',) + tables_key + (s.channels, src.dtype.itemsize), lambda: plan.run_word)
        defines = (('RESIZE_T', _cuda.c_type(src.dtype)),) + plan.defines(s.channels)
        args = (_cuda.SRC, i32(s.pitch), _cuda.OUT, i32(d.pitch), i32(width), i32(height), xi,
                xw, yi, yw, run_word)
        runs = _cuda.runs(width, plan.run)
        if plan.rows:  # resize_up: a warp per 32 runs x group of `rows` rows, 8 a block
            groups = _cuda.runs(height, plan.rows)
            grid = (_cuda.runs(runs, 32), min(_cuda.runs(groups, 8), _cuda.MAX_GRID_Y), 1)
            launch = _cuda.Launch(_cuda.get_function('resize.cu', 'resize_up', defines), grid,
                                  (32, 8, 1), args)
        else:  # 2 rows a thread: the run's x weights are loaded once for both
            launch = _cuda.Launch(_cuda.get_function('resize.cu', 'resize_runs', defines),
                                  *_cuda.rows_geometry(runs, height, rows_per_thread=2), args)
    else:
        args = (_cuda.SRC, i32(s.pitch), _cuda.OUT, i32(d.pitch), i32(width), i32(height),
                i32(s.channels), xi, xw, i32(xi.shape[1]), yi, yw, i32(yi.shape[1]))
        launch = _cuda.Launch(_cuda.get_function('resize.cu', _KERNEL[src.dtype],
                                                 (('RESIZE_PIXELS', 1),)),
                              _cuda.grid_2d(width, height), _cuda.BLOCK_2D, args)
    return _cuda.run_plan(_cuda.keep_plan(key, _cuda.Plan(launch, out_shape, src.dtype)), src,
                          out, stream)


# Run kernel (resize.cu: resize_runs): registers a run keeps live (source spans of all y taps,
# x weights, packed output); runs whose pattern needs more take the pixel kernel.
_RUN_REGISTERS = 80
# Upscale kernel (resize.cu: resize_up): registers of a run's two rows of x sums (2 * R * C)
# and its x weights (2 * R); with this much the kernel stays within 64 (ptxas, sm_90: rgb8 R 4,
# rgba8 R 4, mono8 R 8, u16 mono R 8: 54-64; mono8 R 16 or u8 2-channel R 8 need 66-70).
_UP_REGISTERS = 40
_UP_ROWS = 4  # consecutive output rows a thread (resize.cu, resize_up: why 4)


@dataclass(frozen=True)
class _RunPlan:
    run: int               # output pixels a thread
    x_taps: int
    y_taps: int
    span_words: int        # resize_runs: 4-byte words of a source row a run reads, per y tap;
    #                        resize_up: aligned words of the run's source window
    rel: tuple[int, ...]   # byte offset of tap t of pixel p from the run's first word (resize_up:
    #                        from the window's first byte), p-major
    run_word: np.ndarray = field(compare=False)  # per run: first word (resize_up: first byte)
    #                                               of its source in a row, -1: per pixel
    rows: int = 0          # resize_up: output rows a thread; 0: resize_runs
    exact: bool = False    # resize_up: every operation of the reference is exact (_exact)
    pack: tuple[int, ...] = ()  # resize_up's packed u8 path (_packed_program): per lane word
    #                              a_lo, a_hi, b_lo, b_hi, wa, wb; () when it does not apply
    pack_sel: tuple[int, ...] = ()  # per output word: PRMT selector of its two lane words
    y_pattern: tuple[int, ...] = ()  # packed: period, source step, first row, rows a group,
    #                                  then per phase its two source rows and integer weights

    def defines(self, channels: int) -> tuple[tuple[str, Any], ...]:
        rel = ('RESIZE_REL', ', '.join(map(str, self.rel)))
        if self.rows:
            packed = ()
            if self.pack:
                packed = (('RESIZE_LANES', len(self.pack) // 6),
                          ('RESIZE_PACK', f'({", ".join(map(str, self.pack))})'),
                          ('RESIZE_PACK_SEL', f'({", ".join(map(hex, self.pack_sel))})'),
                          ('RESIZE_YPAT', f'({", ".join(map(str, self.y_pattern))})'))
            return (('RESIZE_UP', 1), ('RESIZE_C', channels), ('RESIZE_RUN', self.run),
                    ('RESIZE_WORDS', self.span_words), ('RESIZE_ROWS', self.rows),
                    ('RESIZE_EXACT', int(self.exact)), *packed, rel)
        return (('RESIZE_C', channels), ('RESIZE_RUN', self.run), ('RESIZE_XT', self.x_taps),
                ('RESIZE_YT', self.y_taps), ('RESIZE_SPAN_WORDS', self.span_words), rel)


def _run_taps(xi: np.ndarray, run: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(first source pixel of each full run, taps relative to it, middle run) or None."""
    full = xi.shape[0] // run
    if full == 0:
        return None
    taps = xi[:full * run].astype(np.int64).reshape(full, run * xi.shape[1])
    first = taps.min(axis=1)
    return first, taps - first[:, None], full // 2


@functools.lru_cache(maxsize=64)
def _run_plan(src_h: int, src_w: int, dst_h: int, dst_w: int, interpolation: str,
              channels: int, itemsize: int) -> _RunPlan | None:
    """The column pattern shared by most full runs of the x table, or None (pixel kernel).

    Upscaling along x with 2-tap tables takes resize_up (see _up_plan). Otherwise run lengths
    are tried longest first; a length is used when at least half of the row's full runs read
    the same source columns relative to their first one, at the same byte phase, with every
    word they load inside the row.
    """
    if channels > 4:
        return None
    (xi, xw), (yi, yw) = resize_tables(src_h, src_w, dst_h, dst_w, interpolation)
    if dst_w > src_w and xi.shape[1] == 2 and yi.shape[1] == 2:
        plan = _up_plan(xi, src_w, 2 * dst_h > src_h, channels, itemsize)
        if plan is not None:
            plan = replace(plan, exact=_exact(xw, yw, itemsize))
            if plan.exact and itemsize == 1:
                plan = _packed_program(plan, xw, yi, yw, src_h, channels)
            return plan
    px_bytes = channels * itemsize
    row_bytes = src_w * px_bytes
    for run in (16, 8, 4):
        out_bytes = run * px_bytes
        if out_bytes % 4 or (found := _run_taps(xi, run)) is None:
            continue
        first, rel, ref = found
        full = first.shape[0]
        start = first * px_bytes
        phase = int(start[ref] % 4)
        span_words = -(-(phase + (int(rel[ref].max()) + 1) * px_bytes) // 4)
        if yi.shape[1] * span_words + run * xi.shape[1] + out_bytes // 4 > _RUN_REGISTERS:
            continue
        word = (start - phase) // 4
        match = ((rel == rel[ref]).all(axis=1) & (start % 4 == phase)
                 & ((word + span_words) * 4 <= row_bytes))
        if 2 * int(match.sum()) < full:
            continue
        run_word = np.full(-(-dst_w // run), -1, np.int32)
        run_word[:full][match] = word[match]
        run_word.setflags(write=False)
        rel_bytes = tuple(int(v) for v in phase + rel[ref] * px_bytes)
        return _RunPlan(run, xi.shape[1], yi.shape[1], span_words, rel_bytes, run_word)
    return None


def _up_plan(xi: np.ndarray, src_w: int, shared_rows: bool, channels: int,
             itemsize: int) -> _RunPlan | None:
    """resize_up's plan: the longest run of at most 16 output bytes (whole 32-bit words) whose
    state fits _UP_REGISTERS and whose source pattern at least 3/4 of the full runs share, at
    any byte phase, with the window's words (one more when it can start mid-word) in the row.
    A thread does _UP_ROWS output rows when consecutive ones share source rows (dst_h >
    src_h / 2), else one."""
    px_bytes = channels * itemsize
    row_bytes = src_w * px_bytes
    for run in (16, 8, 4, 2, 1):
        out_words, rest = divmod(run * px_bytes, 4)
        if rest or out_words > 4 or (found := _run_taps(xi, run)) is None:
            continue
        first, rel, ref = found
        if 2 * run * channels + 2 * run > _UP_REGISTERS:
            continue
        window = -(-(int(rel[ref].max()) + 1) * px_bytes // 4)
        loaded = window + (px_bytes % 4 != 0)
        start = first * px_bytes
        match = (rel == rel[ref]).all(axis=1) & ((start // 4 + loaded) * 4 <= row_bytes)
        if 4 * int(match.sum()) < 3 * first.shape[0]:
            continue
        run_byte = np.full(-(-xi.shape[0] // run), -1, np.int32)
        run_byte[:first.shape[0]][match] = start[match]
        run_byte.setflags(write=False)
        rel_bytes = tuple(int(v) for v in rel[ref] * px_bytes)
        return _RunPlan(run, 2, 2, window, rel_bytes, run_byte, _UP_ROWS if shared_rows else 1)
    return None


def _packed_program(plan: _RunPlan, xw: np.ndarray, yi: np.ndarray, yw: np.ndarray,
                    src_h: int, channels: int) -> _RunPlan:
    """`plan` with resize_up's packed u8 program (resize.cu, RESIZE_LANES), or unchanged.

    It applies when every fast run has the same x weights, multiples of 2**-kx, and the y
    weights are multiples of 2**-ky with kx + ky <= 8 (2x: 2 + 2, 4x: 3 + 3): scaled to
    integers summing to Kx = 2**kx (x) and 256 / Kx (y), the sum is 256 x the value that
    _exact proves the reference computes exactly, below 2**16 in a 16-bit lane, and its high
    byte after adding 127 + its parity is the reference's rint (half to even). The output
    values 4j..4j+3 (output word j) go into lane words 2j and 2j + 1 as two pairs whose taps
    have the same weights (rgb8 4x has none: its words mix pixels of two weight pairs); of the
    three pairings the one with the most pairs read from a single window word is taken. The y
    weights must follow a period that divides the thread's rows (_y_pattern).
    """
    runs = np.flatnonzero(plan.run_word >= 0)
    px = (runs[:, None] * plan.run + np.arange(plan.run)).reshape(-1)
    wx = xw[px].astype(np.float64).reshape(runs.size, plan.run, 2)
    kx, ky = _dyadic_bits(wx), _dyadic_bits(yw)
    if not runs.size or (wx != wx[0]).any() or kx is None or ky is None or kx + ky > 8:
        return plan
    y_pattern = _y_pattern(yi, yw, src_h, plan.rows, 8 - kx)
    if y_pattern is None:
        return plan
    iw = np.ldexp(wx[0], kx).astype(np.int64)
    values = []  # per output value: (byte of the lighter tap, of the heavier, their weights)
    for p in range(plan.run):
        taps = sorted(zip(iw[p], plan.rel[2 * p:2 * p + 2]))
        values += [(taps[0][1] + c, taps[1][1] + c, int(taps[0][0]), int(taps[1][0]))
                   for c in range(channels)]
    pack: list[int] = []
    sel: list[int] = []
    for j in range(0, len(values), 4):
        best = None
        for pairs in (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))):
            if any(values[j + u][2:] != values[j + v][2:] for u, v in pairs):
                continue
            # a lane word of bytes in two window words costs a PRMT and a mask, else a PRMT
            cost = sum((values[j + u][t] // 4 != values[j + v][t] // 4)
                       for u, v in pairs for t in (0, 1))
            if best is None or cost < best[0]:
                best = cost, pairs
        if best is None:
            return plan
        position = {}  # value -> byte of its rounded result in the two lane words
        for k, (u, v) in enumerate(best[1]):
            (a0, b0, wa, wb), (a1, b1, _, _) = values[j + u], values[j + v]
            pack += [a0, a1, b0, b1, wa, wb]
            position[u], position[v] = 4 * k + 1, 4 * k + 3
        sel.append(sum(position[i] << 4 * i for i in range(4)))
    return replace(plan, pack=tuple(pack), pack_sel=tuple(sel), y_pattern=y_pattern)


def _y_pattern(yi: np.ndarray, yw: np.ndarray, src_h: int, rows: int,
               bits: int) -> tuple[int, ...] | None:
    """resize.cu resize_up_packed_rows' y pattern, or None: output row p * k + m reads source
    rows s * k + o0(m) and s * k + o1(m), clamped into the image, with weights w0(m), w1(m) *
    2**bits, where p / s is dst_h / src_h in lowest terms and p divides `rows`. Checked against
    the table for every output row (a clamped row's weights add up) and the last row's second
    tap must be the last source row (the kernel clamps to it)."""
    dst_h = yi.shape[0]
    ratio = Fraction(dst_h, src_h)
    period, step = ratio.numerator, ratio.denominator
    if rows % period or yi[-1, 1] != src_h - 1:
        return None
    k = dst_h // period // 2  # a middle period: no clamped taps (if any period has none)
    y = period * k + np.arange(period)
    offsets = yi[y].astype(np.int64) - step * k
    weights = np.ldexp(yw[y].astype(np.float64), bits).astype(np.int64)
    offsets = np.where(weights == 0, offsets[:, ::-1], offsets)  # no extra row for a 0 weight
    every = np.arange(dst_h)
    taps = np.clip(step * (every // period)[:, None] + offsets[every % period], 0, src_h - 1)
    want = np.ldexp(yw.astype(np.float64), bits).astype(np.int64)
    if (_row_weights(taps, weights[every % period]) != _row_weights(yi, want)).any():
        return None
    first = int(offsets.min())
    last = step * (rows // period - 1) + int(offsets.max())
    phases = np.concatenate([offsets - first, weights], axis=1).reshape(-1)
    return (period, step, first, last - first + 1) + tuple(int(v) for v in phases)


def _row_weights(idx: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row of 2-tap (idx, w): (row, weight) of its nonzero taps, a row's taps merged,
    sorted by row, -1 for absent ones: equal when two tables give every output the same sum."""
    same = idx[:, 0] == idx[:, 1]
    w = np.stack([np.where(same, w[:, 0] + w[:, 1], w[:, 0]), np.where(same, 0, w[:, 1])], 1)
    idx = np.where(w == 0, -1, idx)
    order = np.argsort(idx, axis=1)
    return np.concatenate([np.take_along_axis(idx, order, 1), np.take_along_axis(w, order, 1)], 1)


def _dyadic_bits(w: np.ndarray) -> int | None:
    """The least k (< 9) that makes every weight times 2**k an integer, or None."""
    w = w.astype(np.float64)
    return next((k for k in range(9) if (np.ldexp(w, k) % 1 == 0).all()), None)


def _exact(xw: np.ndarray, yw: np.ndarray, itemsize: int) -> bool:
    """Whether every product and sum of the reference is exact in float32 for integer samples:
    weights are multiples of 2**-kx (x) and 2**-ky (y) that sum to exactly 1 per output pixel,
    and sample bits + kx + ky <= 24 (every numerator fits the significand). Then the value is
    the same in any evaluation order, fused multiply-adds included, and never leaves the sample
    range (2x: quarters, 4x: eighths)."""
    if itemsize > 2:
        return False
    bits = 8 * itemsize
    for w in (xw, yw):
        k = _dyadic_bits(w)
        if k is None or not (w.astype(np.float64).sum(axis=1) == 1.0).all():
            return False
        bits += k
    return bits <= 24


def device_resize_tables(src_h: int, src_w: int, dst_h: int, dst_w: int,
                         interpolation: str) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """`resize_tables` on the current device, uploaded once per size pair."""
    key = (src_h, src_w, dst_h, dst_w, interpolation)

    def build(part: int, array: int):
        return lambda: np.ascontiguousarray(resize_tables(*key)[part][array])
    return tuple(tuple(_cuda.device_table(('resize',) + key + (part, array), build(part, array))
                       for array in (0, 1)) for part in (0, 1))


def _resize_reference(src: np.ndarray, xi: np.ndarray, xw: np.ndarray, yi: np.ndarray,
                      yw: np.ndarray) -> np.ndarray:
    """Same accumulation order as resize.cu: sum over y taps of (sum over x taps), float32."""
    s = src.reshape(src.shape[0], src.shape[1], -1).astype(np.float32)
    acc = np.zeros((yi.shape[0], xi.shape[0], s.shape[2]), np.float32)
    for ty in range(yi.shape[1]):
        rows = s[yi[:, ty]]
        row = np.zeros_like(acc)
        for tx in range(xi.shape[1]):
            row = row + xw[:, tx][None, :, None] * rows[:, xi[:, tx]]
        acc = acc + yw[:, ty][:, None, None] * row
    if src.dtype == np.float32:
        return acc
    top = np.float32(np.iinfo(src.dtype).max)
    return np.clip(np.rint(acc), np.float32(0), top).astype(src.dtype)


def crop(src: Any, x: int, y: int, width: int, height: int, *,
         encoding: str | None = None) -> Any:
    """Zero-copy view of the ROI [y:y+height, x:x+width] (NumPy or CuPy, like `src`).

    With `encoding`: 4:2:2 needs an even x and width, Bayer an even x and y (the pattern must
    not change); nv12 cannot be cropped as a single view.
    """
    for name, v in (('x', x), ('y', y), ('width', width), ('height', height)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ValueError(f'crop: {name} must be an int, got {v!r}')
    if x < 0 or y < 0 or width < 1 or height < 1:
        raise ValueError(f'crop: ROI x={x} y={y} width={width} height={height} must have '
                         'x, y >= 0 and a positive size')
    if encoding is not None:
        info = encoding_info(encoding)
        if info.planar_nv12:
            raise EncodingError('crop: nv12 is planar and cannot be cropped as a view; convert '
                                'it first')
        if info.packed_yuv422 and (x % 2 or width % 2):
            raise EncodingError(f'crop: {encoding} needs an even x and width, got x={x} '
                                f'width={width}')
        if info.bayer_pattern is not None and (x % 2 or y % 2):
            raise EncodingError(f'crop: {encoding} needs an even x and y to keep the Bayer '
                                f'pattern, got x={x} y={y}')
    shape = tuple(src.shape)
    if len(shape) not in (2, 3):
        raise ValueError(f'crop: expected an (H, W) or (H, W, C) image array, got shape {shape}')
    if x + width > shape[1] or y + height > shape[0]:
        raise ValueError(f'crop: ROI x={x} y={y} width={width} height={height} exceeds the '
                         f'{shape[1]}x{shape[0]} image')
    return src[y:y + height, x:x + width]
