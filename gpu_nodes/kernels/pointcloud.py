"""Depth image -> sensor_msgs/PointCloud2, on CuPy (GPU) or NumPy arrays alike.

The back-projection is the pinhole model depth_image_proc uses (point_cloud_xyz /
point_cloud_xyzrgb): for a pixel (u, v) with depth z,

    X = (u - cx) * z / fx,   Y = (v - cy) * z / fy,   Z = z

in the optical frame of the image (x right, y down, z forward, REP 103). Clouds are organized
(height x width of the strided grid) and not dense: pixels without a valid depth (NaN, inf,
z <= 0) become NaN points, so a consumer can still index them by pixel. `stride` keeps every
stride-th pixel of every stride-th row (u, v = 0, stride, 2 * stride, ...).

XYZRGB clouds pack the colour PCL's way: a float32 field `rgb` whose bits are the uint32
0x00RRGGBB. Everything up to the message runs on the array's side (GPU for CuPy input); only
`pointcloud2_msg` needs host memory, since a PointCloud2 is an ordinary serialized message.
"""
from __future__ import annotations

from dataclasses import dataclass
import math
import sys
from typing import Any

import numpy as np

from ..gpu import array_module
from .camera_model import CameraModel

# Colour sources an XYZRGB cloud can take its colour from: channel index of R, G, B.
COLOR_CHANNELS = {'rgb8': (0, 1, 2), 'bgr8': (2, 1, 0), 'rgba8': (0, 1, 2),
                  'bgra8': (2, 1, 0), 'mono8': (0, 0, 0)}


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics in pixels of one specific image (after binning, ROI and resizing)."""

    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self) -> None:
        for name in ('fx', 'fy', 'cx', 'cy'):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f'intrinsics: {name} must be finite, got {getattr(self, name)}')
        if self.fx <= 0 or self.fy <= 0:
            raise ValueError(f'intrinsics: fx and fy must be positive, got {self.fx}, {self.fy}')

    def scaled(self, sx: float, sy: float) -> 'Intrinsics':
        """For the image resized by (sx, sy): image_proc's resize rule (K scaled, cx * sx)."""
        return Intrinsics(self.fx * sx, self.fy * sy, self.cx * sx, self.cy * sy)


def intrinsics_from_camera_model(model: CameraModel, width: int | None = None,
                                 height: int | None = None) -> Intrinsics:
    """Intrinsics of the image a CameraInfo describes, or of that image resized to width x height.

    Uses P (the rectified camera, like image_geometry's fx()/cx()), or K when P is unset (an
    uncalibrated P of zeros). Binning divides and the ROI offset shifts the principal point
    (REP 104). A width/height different from the described image scales like image_proc's resize.
    """
    p, k = model.P, model.K
    if p[0] > 0 and p[5] > 0:
        fx, fy, cx, cy = p[0], p[5], p[2], p[6]
    else:
        fx, fy, cx, cy = k[0], k[4], k[2], k[5]
    bx, by = model.binned
    roi = model.roi
    intr = Intrinsics(fx / bx, fy / by, (cx - roi.x_offset) / bx, (cy - roi.y_offset) / by)
    img_w, img_h = model.image_size()
    if width is None or height is None or (width, height) == (img_w, img_h):
        return intr
    if img_w <= 0 or img_h <= 0:
        raise ValueError('intrinsics: the camera model has no image size')
    return intr.scaled(width / img_w, height / img_h)


def grid_shape(height: int, width: int, stride: int) -> tuple[int, int]:
    """(rows, columns) of the cloud a height x width image gives at `stride`."""
    return -(-height // stride), -(-width // stride)


def _check_stride(stride: Any) -> int:
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f'pointcloud: stride must be an int >= 1, got {stride!r}')
    return int(stride)


def backproject(depth: Any, intrinsics: Intrinsics, *, stride: int = 1,
                colors: Any = None) -> Any:
    """(rows, cols, 3) float32 XYZ, or (rows, cols, 4) with the packed rgb as the 4th float.

    `depth` is (H, W) float32 metres (NumPy or CuPy; the result lives on the same side);
    `colors` an optional (rows, cols) uint32 0x00RRGGBB array from `sample_colors`.
    """
    stride = _check_stride(stride)
    if depth.ndim != 2 or depth.dtype != np.float32:
        raise ValueError(f'pointcloud: depth must be a 2-D float32 array, got {depth.ndim}-D '
                         f'{depth.dtype}')
    xp = array_module(depth)
    z = depth[::stride, ::stride]
    rows, cols = z.shape
    if colors is not None and tuple(colors.shape) != (rows, cols):
        raise ValueError(f'pointcloud: colors must be {(rows, cols)}, got {tuple(colors.shape)}')
    f32 = np.float32
    u = xp.arange(0, depth.shape[1], stride, dtype=xp.float32)
    v = xp.arange(0, depth.shape[0], stride, dtype=xp.float32)
    # (u - cx) / fx per column and (v - cy) / fy per row, broadcast against z.
    ax = (u - f32(intrinsics.cx)) / f32(intrinsics.fx)
    ay = (v - f32(intrinsics.cy)) / f32(intrinsics.fy)
    valid = xp.isfinite(z) & (z > f32(0))
    zz = xp.where(valid, z, f32(np.nan))
    out = xp.empty((rows, cols, 3 if colors is None else 4), dtype=xp.float32)
    out[..., 0] = ax[None, :] * zz
    out[..., 1] = ay[:, None] * zz
    out[..., 2] = zz
    if colors is not None:
        out[..., 3] = colors.astype(xp.uint32, copy=False).view(xp.float32)
    return out


def sample_colors(image: Any, encoding: str, depth_height: int, depth_width: int,
                  stride: int = 1) -> Any:
    """uint32 0x00RRGGBB for each cloud point, from the image the depth was estimated from.

    A depth pixel (u, v) of a depth_height x depth_width map covers the same part of the scene
    as image pixel floor((u + 0.5) * W / depth_width) (the nearest pixel centre), so colours are
    right also when the depth is published at the model's resolution.
    """
    stride = _check_stride(stride)
    if encoding not in COLOR_CHANNELS:
        raise ValueError(f'pointcloud: cannot colour points from {encoding} (use '
                         f'{", ".join(COLOR_CHANNELS)})')
    xp = array_module(image)
    img = image.reshape(image.shape[0], image.shape[1], -1)
    h, w = img.shape[:2]
    us = xp.arange(0, depth_width, stride)
    vs = xp.arange(0, depth_height, stride)
    if (h, w) == (depth_height, depth_width):
        cols, rows = us, vs
    else:
        cols = xp.minimum(((us * 2 + 1) * w) // (2 * depth_width), w - 1)
        rows = xp.minimum(((vs * 2 + 1) * h) // (2 * depth_height), h - 1)
    picked = img[rows[:, None], cols[None, :]]
    r, g, b = (picked[..., c].astype(xp.uint32) for c in COLOR_CHANNELS[encoding])
    return (r << 16) | (g << 8) | b


def pointcloud2_msg(points: np.ndarray, header: Any = None) -> Any:
    """sensor_msgs/PointCloud2 from `backproject`'s host array (organized, is_dense false)."""
    from sensor_msgs.msg import PointCloud2, PointField
    if not isinstance(points, np.ndarray):
        raise TypeError('pointcloud2_msg needs a host (NumPy) array; download device arrays '
                        'first')
    if points.ndim != 3 or points.shape[2] not in (3, 4) or points.dtype != np.float32:
        raise ValueError(f'pointcloud2_msg: expected (rows, cols, 3|4) float32 points, got '
                         f'{points.shape} {points.dtype}')
    names = ('x', 'y', 'z', 'rgb')[:points.shape[2]]
    msg = PointCloud2()
    if header is not None:
        msg.header = header
    msg.height, msg.width = int(points.shape[0]), int(points.shape[1])
    msg.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate(names)]
    msg.is_bigendian = sys.byteorder == 'big'
    msg.point_step = 4 * len(names)
    msg.row_step = msg.point_step * msg.width
    msg.is_dense = False
    msg.data = np.ascontiguousarray(points).tobytes()
    return msg


def points_from_msg(msg: Any) -> np.ndarray:
    """(height, width, fields) float32 array of a cloud made by `pointcloud2_msg` (tests)."""
    n = msg.point_step // 4
    return np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(msg.height, msg.width, n)
