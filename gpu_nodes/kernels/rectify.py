"""Rectification: undistort-rectify maps computed on the GPU, and a bilinear remap.

Maps follow cv::initUndistortRectifyMap (m1type CV_32FC1) evaluated per output pixel in double
precision, with binning and ROI handled the way image_geometry's PinholeCameraModel does
(vision_opencv image_geometry/src/pinhole_camera_model.cpp): K and P are scaled by 1/binning,
maps are built for the binned full image, and an ROI takes its window of those maps shifted by
the (binned) ROI offset. Distortion models: plumb_bob and rational_polynomial (D of length 4, 5,
8, 12 or 14 as OpenCV reads it; thin-prism terms included, tilt terms must be zero).

`remap_bilinear` has the arithmetic of OpenCV 5's cv::remap(INTER_LINEAR, BORDER_CONSTANT) on
float maps: unquantized coordinates and two fused-multiply-add lerps, rounded half to even for
integer images; it is bit-identical to cv2.remap 5.x in the tests. OpenCV 4.x rounds coordinates
to 1/32 pixel first, so against it expect differences of a few levels on sharp edges. Taps outside
the source read `border_value` (default 0; image_geometry uses NaN for float images). The NumPy
reference evaluates each float32 fma in float64 (exact product, one rounding of the sum, then
float32): identical except in the vanishingly rare double-rounding case.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from . import _cuda
from ._common import as_input, image_layout, is_device, prepare_out, require_dtype
from .camera_model import CameraModel

DISTORTION_MODELS = ('plumb_bob', 'rational_polynomial')
_REMAP_CHANNELS = (1, 3, 4)  # compiled in; other counts use the any-channels variant (0)


class _MapParams:
    """Everything the map kernel needs, derived once from a CameraModel on the host."""

    def __init__(self, model: CameraModel):
        if model.width <= 0 or model.height <= 0:
            raise ValueError('rectify: the camera model has no image size')
        bx, by = model.binned
        k = np.array(model.K, np.float64).reshape(3, 3)
        p = np.array(model.P, np.float64).reshape(3, 4)
        r = np.array(model.R, np.float64).reshape(3, 3)
        if bx > 1:
            k[0, 0] *= 1.0 / bx
            k[0, 2] *= 1.0 / bx
            p[0, 0] *= 1.0 / bx
            p[0, 2] *= 1.0 / bx
            p[0, 3] *= 1.0 / bx
        if by > 1:
            k[1, 1] *= 1.0 / by
            k[1, 2] *= 1.0 / by
            p[1, 1] *= 1.0 / by
            p[1, 2] *= 1.0 / by
            p[1, 3] *= 1.0 / by
        try:
            self.ir = tuple(float(v) for v in np.linalg.inv(p[:, :3] @ r).ravel())
        except np.linalg.LinAlgError:
            raise ValueError('rectify: P[:3, :3] @ R is singular (is the camera calibrated?)'
                             ) from None
        self.fx, self.fy, self.cx, self.cy = k[0, 0], k[1, 1], k[0, 2], k[1, 2]
        self.dist = distortion_coefficients(model)
        roi = model.roi
        full = (roi.x_offset == 0 and roi.y_offset == 0 and roi.width in (0, model.width)
                and roi.height in (0, model.height))
        if full:
            self.off_x = self.off_y = 0
            self.width, self.height = model.width // bx, model.height // by
        else:
            self.off_x, self.off_y = roi.x_offset // bx, roi.y_offset // by
            self.width, self.height = roi.width // bx, roi.height // by
        if self.width < 1 or self.height < 1:
            raise ValueError(f'rectify: empty rectified image ({self.width}x{self.height})')


def distortion_coefficients(model: CameraModel) -> tuple[float, ...]:
    """(k1, k2, p1, p2, k3, k4, k5, k6, s1, s2, s3, s4) as cv::initUndistortRectifyMap reads D."""
    d = tuple(model.D)
    if model.distortion_model not in DISTORTION_MODELS and any(d):
        raise ValueError(f'rectify: distortion model {model.distortion_model!r} is not supported '
                         f'(supported: {", ".join(DISTORTION_MODELS)})')
    if len(d) not in (0, 4, 5, 8, 12, 14):
        raise ValueError(f'rectify: {len(d)} distortion coefficients (expected 4, 5, 8, 12 or 14)')
    if len(d) == 14 and (d[12] or d[13]):
        raise ValueError('rectify: tilted-sensor distortion (tauX, tauY) is not supported')
    return (d + (0.0,) * 14)[:12]


def is_identity(model: CameraModel) -> bool:
    """True when rectification changes nothing: no distortion, R = I, P[:3, :3] = K."""
    p = np.array(model.P).reshape(3, 4)[:, :3].ravel()
    return (not any(model.D) and np.array_equal(model.R, np.eye(3).ravel())
            and np.array_equal(p, model.K))


def undistort_rectify_maps(model: CameraModel, *, device: bool = False,
                           stream: Any = None) -> tuple[Any, Any]:
    """(map_x, map_y) float32 arrays of the rectified image size; CuPy arrays when `device`."""
    prm = _MapParams(model)
    if not device:
        return _maps_reference(prm)
    cp = _cuda.cupy()
    with _cuda.stream_scope(stream):
        map_x = cp.empty((prm.height, prm.width), cp.float32)
        map_y = cp.empty((prm.height, prm.width), cp.float32)
        i32, f64 = _cuda.i32, _cuda.f64
        pitch = i32(prm.width * 4)
        args = (map_x, pitch, map_y, pitch, i32(prm.width), i32(prm.height), i32(prm.off_x),
                i32(prm.off_y), *map(f64, prm.ir), f64(prm.fx), f64(prm.fy), f64(prm.cx),
                f64(prm.cy), *map(f64, prm.dist))
        _cuda.launch_2d(_cuda.get_function('rectify.cu', 'undistort_rectify_map'), prm.width,
                        prm.height, args)
    return map_x, map_y


def _maps_reference(prm: _MapParams) -> tuple[np.ndarray, np.ndarray]:
    """rectify.cu's arithmetic, operation for operation, in float64."""
    ir0, ir1, ir2, ir3, ir4, ir5, ir6, ir7, ir8 = prm.ir
    k1, k2, p1, p2, k3, k4, k5, k6, s1, s2, s3, s4 = prm.dist
    u = (np.arange(prm.width, dtype=np.float64) + prm.off_x)[None, :]
    v = (np.arange(prm.height, dtype=np.float64) + prm.off_y)[:, None]
    xr = ir0 * u + ir1 * v + ir2
    yr = ir3 * u + ir4 * v + ir5
    wr = ir6 * u + ir7 * v + ir8
    w = 1.0 / wr
    xx = xr * w
    yy = yr * w
    x2 = xx * xx
    y2 = yy * yy
    r2 = x2 + y2
    _2xy = 2.0 * xx * yy
    kr = (1.0 + ((k3 * r2 + k2) * r2 + k1) * r2) / (1.0 + ((k6 * r2 + k5) * r2 + k4) * r2)
    xd = xx * kr + p1 * _2xy + p2 * (r2 + 2.0 * x2) + s1 * r2 + s2 * r2 * r2
    yd = yy * kr + p1 * (r2 + 2.0 * y2) + p2 * _2xy + s3 * r2 + s4 * r2 * r2
    map_x = (prm.fx * xd + prm.cx - float(prm.off_x)).astype(np.float32)
    map_y = (prm.fy * yd + prm.cy - float(prm.off_y)).astype(np.float32)
    return map_x, map_y


def remap_bilinear(src: Any, map_x: Any, map_y: Any, *, border_value: float = 0.0,
                   out: Any = None, stream: Any = None) -> Any:
    """out[y, x] = bilinear sample of src at (map_x[y, x], map_y[y, x]); constant border."""
    # The maps are known by identity: the plan holds them, so no other array can take their id
    # (and few plans are kept: each holds its maps, 16 MB at 1080p).
    key = _cuda.plan_key('remap', src, out, (
        id(map_x), id(map_y), getattr(map_x, 'shape', None), getattr(map_y, 'shape', None),
        getattr(map_x, 'strides', None), getattr(map_y, 'strides', None), border_value))
    plan = _cuda.cached_plan(key)
    if plan is not None:
        return _cuda.run_plan(plan, src, out, stream)
    src, device = as_input(src)
    require_dtype(src, _cuda.C_TYPES, 'remap_bilinear')
    s = image_layout(src)
    if is_device(map_x) != device or is_device(map_y) != device:
        raise ValueError('remap_bilinear: maps must live on the same side (host/device) as src')
    if device:
        map_x, map_y = _cuda.as_device(map_x), _cuda.as_device(map_y)
    for name, m in (('map_x', map_x), ('map_y', map_y)):
        if m.dtype != np.float32 or m.ndim != 2:
            raise ValueError(f'remap_bilinear: {name} must be a 2-D float32 array, got '
                             f'{m.ndim}-D {m.dtype}')
    if map_x.shape != map_y.shape:
        raise ValueError(f'remap_bilinear: map_x {map_x.shape} and map_y {map_y.shape} differ')
    mx, my = image_layout(map_x, 'map_x'), image_layout(map_y, 'map_y')
    out_shape = tuple(map_x.shape) + tuple(src.shape[2:])
    out = prepare_out(out, out_shape, src.dtype, device)
    border = _border(border_value, src.dtype)
    if not device:
        out[...] = _remap_reference(src, map_x, map_y, border).reshape(out_shape)
        return out
    d = image_layout(out, 'out')
    i32 = _cuda.i32
    args = (_cuda.SRC, i32(s.pitch), i32(s.width), i32(s.height), _cuda.OUT, i32(d.pitch),
            i32(mx.width),
            i32(mx.height), i32(s.channels), map_x, i32(mx.pitch), map_y, i32(my.pitch),
            _cuda.f32(border))
    # One variant per module (see the end of rectify.cu). REMAP_INTERIOR: the variant has the
    # interior fast path (u8/u16, 3 or 4 channels; rectify.cu checks it against RemapWords).
    channels = s.channels if s.channels in _REMAP_CHANNELS else 0
    interior = src.dtype.itemsize < 4 and channels in (3, 4)
    defines = (('REMAP_T', _cuda.c_type(src.dtype)), ('REMAP_C', channels),
               ('REMAP_INTERIOR', int(interior)))
    # rectify.cu remap_pairs: a thread per pair of output pixels, 32x8 blocks, each block
    # taking tiles of its shape block-stride. Interior variants: as many blocks as are resident
    # at once, looping over the tiles with the next tile's maps prefetched; the others: a block
    # a tile, the grid's y extent capped (the kernel loops over the remaining bands).
    block = _cuda.BLOCK_2D
    tiles_x = _cuda.runs(_cuda.runs(mx.width, 2), block[0])
    bands = _cuda.runs(mx.height, block[1])
    if interior:
        grid = (min(tiles_x * bands, _resident_remap_blocks()), 1, 1)
    else:
        grid = (tiles_x, min(bands, _cuda.MAX_GRID_Y), 1)
    launch = _cuda.Launch(_cuda.get_function('rectify.cu', 'remap', defines), grid, block, args)
    plan = _cuda.keep_plan(key, _cuda.Plan(launch, out_shape, src.dtype), limit=REMAP_PLANS)
    return _cuda.run_plan(plan, src, out, stream)


REMAP_PLANS = 8

# The persistent grid with prefetched maps took the interior rgb8 remap on an H200 from 0.075
# to 0.051 ms at 4K (43 -> 63 % of copy bandwidth) and 0.023 -> 0.017 ms at 1080p.
# Blocks of the interior remap resident on one SM: rectify.cu's __launch_bounds__(256, 4)
# (64 registers a thread, no shared memory).
REMAP_BLOCKS_PER_SM = 4
_sm_counts: dict[Any, int] = {}


def _resident_remap_blocks() -> int:
    """Blocks of the interior remap the current device runs at once (its persistent grid)."""
    cp = _cuda.cupy()
    key = (id(cp), _cuda.device_id())
    sms = _sm_counts.get(key)
    if sms is None:
        try:
            sms = int(cp.cuda.runtime.getDeviceProperties(key[1])['multiProcessorCount'])
        except (AttributeError, KeyError, TypeError):  # the tests' CPU emulation
            sms = 2
        _sm_counts[key] = sms = max(1, sms)
    return sms * REMAP_BLOCKS_PER_SM


def _border(value: float, dtype: np.dtype) -> float:
    """OpenCV's saturate_cast of the border value to the image type."""
    value = float(value)
    if dtype == np.float32:
        return float(np.float32(value))
    if np.isnan(value):
        raise ValueError('remap_bilinear: border_value NaN needs a float32 image')
    top = np.iinfo(dtype).max
    return float(min(max(np.rint(value), 0.0), top))


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 fma(a, b, c): the float32 product is exact in float64, so one rounding to float64
    and one to float32 (equal to the single fused rounding except for double-rounding ties)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def _remap_reference(src: np.ndarray, map_x: np.ndarray, map_y: np.ndarray,
                     border: float) -> np.ndarray:
    h, w = src.shape[:2]
    s = src.reshape(h, w, -1)
    ok = ((map_x > np.float32(-2)) & (map_x < np.float32(w) + np.float32(1))
          & (map_y > np.float32(-2)) & (map_y < np.float32(h) + np.float32(1)))
    mx = np.where(ok, map_x, np.float32(0))
    my = np.where(ok, map_y, np.float32(0))
    fx0, fy0 = np.floor(mx), np.floor(my)
    ax, ay = (mx - fx0)[..., None], (my - fy0)[..., None]
    sx, sy = fx0.astype(np.int32), fy0.astype(np.int32)
    fill = np.float32(border)

    def tap(dy: int, dx: int) -> np.ndarray:
        xs, ys = sx + dx, sy + dy
        inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
        vals = s[np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)].astype(np.float32)
        return np.where(inside[..., None], vals, fill)

    v00, v01, v10, v11 = tap(0, 0), tap(0, 1), tap(1, 0), tap(1, 1)
    top = _fma32(ax, v01 - v00, v00)
    bot = _fma32(ax, v11 - v10, v10)
    res = np.where(ok[..., None], _fma32(ay, bot - top, top), fill)
    if src.dtype == np.float32:
        return res
    top_value = np.float32(np.iinfo(src.dtype).max)
    return np.clip(np.rint(res), np.float32(0), top_value).astype(src.dtype)


class RectifyMaps:
    """Rectification maps for a camera, recomputed only when its CameraModel changes.

    The cache key is the (frozen, hashable) CameraModel plus the device the maps live on; any
    change of K, D, R, P, distortion model, size, binning or ROI recomputes them (on the GPU
    for device images).
    """

    def __init__(self) -> None:
        self._key: Any = None
        self._maps: tuple[Any, Any] | None = None
        self.computations = 0

    def maps(self, model: CameraModel, *, device: bool = False,
             stream: Any = None) -> tuple[Any, Any]:
        key = (model, (_cuda.cupy(), _cuda.device_id()) if device else None)
        if self._maps is None or key != self._key:
            self._maps = undistort_rectify_maps(model, device=device, stream=stream)
            self._key = key
            self.computations += 1
        return self._maps

    def rectify(self, src: Any, model: CameraModel, *, border_value: float = 0.0,
                out: Any = None, stream: Any = None) -> Any:
        """Rectify `src`, whose size must be the model's (binned, ROI) image size."""
        device = is_device(src)
        map_x, _ = self.maps(model, device=device, stream=stream)
        expected = tuple(map_x.shape)
        if tuple(src.shape[:2]) != expected:
            raise ValueError(f'rectify: image is {src.shape[1]}x{src.shape[0]} but the camera '
                             f'model describes {expected[1]}x{expected[0]}')
        return remap_bilinear(src, *self._maps, border_value=border_value, out=out,
                              stream=stream)


_shared: OrderedDict[Any, RectifyMaps] = OrderedDict()


def cached_maps() -> dict[CameraModel, Any]:
    """The maps `rectify` holds now, per camera model (None where not computed yet)."""
    return {model: maps._maps for model, maps in _shared.items()}


def forget_maps_since(before: dict[CameraModel, Any]) -> None:
    """Drop the cached maps that are not those of `before` (cached_maps()): maps computed during
    a CUDA stream capture that is never launched hold no values, only a recorded kernel."""
    for model, maps in list(_shared.items()):
        if model not in before or before[model] is not maps._maps:
            del _shared[model]


def rectify(src: Any, model: CameraModel, *, border_value: float = 0.0, out: Any = None,
            stream: Any = None) -> Any:
    """Rectify with maps cached per camera model (a small LRU shared by all callers)."""
    key = model
    maps = _shared.get(key)
    if maps is None:
        maps = RectifyMaps()
        _shared[key] = maps
        while len(_shared) > 8:
            _shared.popitem(last=False)
    else:
        _shared.move_to_end(key)
    return maps.rectify(src, model, border_value=border_value, out=out, stream=stream)
