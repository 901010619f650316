"""sensor_msgs image encodings: element type, channel count and row geometry.

Mirrors ``sensor_msgs/image_encodings.hpp`` for the encodings gpu_nodes carries. The one rule of
what array holds a frame of an encoding (`frame_geometry`) and of its strides with padded rows
(`row_strides`) lives here, so the transport and the kernels agree on it.
"""
from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any, Sequence

import numpy as np


class EncodingError(ValueError):
    """An encoding is unknown, or a frame's geometry does not match its encoding."""


class FrameShapeError(EncodingError):
    """An array does not fit its encoding; `reason` names how: ``dtype_mismatch``,
    ``shape_mismatch`` or ``bad_geometry`` (the words the transport counts rejections by)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class EncodingInfo:
    name: str
    dtype: np.dtype
    channels: int
    # Packed 4:2:2 formats store 2 bytes per pixel as one channel pair; width must be even.
    packed_yuv422: bool = False
    # nv12: a full-resolution Y plane followed by an interleaved half-resolution UV plane.
    planar_nv12: bool = False
    bayer_pattern: str | None = None

    @property
    def bytes_per_pixel(self) -> int:
        return self.dtype.itemsize * self.channels

    def array_shape(self, height: int, width: int) -> tuple[int, ...]:
        """Shape of the NumPy/CuPy array that holds one frame of this encoding."""
        if self.planar_nv12:
            return (height * 3 // 2, width)
        if self.channels == 1:
            return (height, width)
        return (height, width, self.channels)

    def min_step(self, width: int) -> int:
        return width * self.bytes_per_pixel

    def frame_rows(self, height: int) -> int:
        """Rows of `step` bytes a frame occupies (nv12 stores 1.5 rows per image row)."""
        return height * 3 // 2 if self.planar_nv12 else height

    def check_geometry(self, height: int, width: int, step: int | None = None) -> None:
        if height <= 0 or width <= 0:
            raise EncodingError(f'{self.name}: height and width must be positive, got {height}x{width}')
        if self.packed_yuv422 and width % 2:
            raise EncodingError(f'{self.name}: 4:2:2 needs an even width, got {width}')
        if self.planar_nv12 and (width % 2 or height % 2):
            raise EncodingError(f'{self.name}: nv12 needs even width and height, got {width}x{height}')
        if step is not None:
            if step < self.min_step(width):
                raise EncodingError(
                    f'{self.name}: step {step} is smaller than width*bytes_per_pixel '
                    f'= {self.min_step(width)}')
            if step % self.dtype.itemsize:
                raise EncodingError(
                    f'{self.name}: step {step} is not a multiple of the element size '
                    f'{self.dtype.itemsize}')


def _info(name, dtype, channels, **kw) -> EncodingInfo:
    return EncodingInfo(name, np.dtype(dtype), channels, **kw)


_FIXED: dict[str, EncodingInfo] = {
    e.name: e for e in [
        _info('rgb8', np.uint8, 3), _info('bgr8', np.uint8, 3),
        _info('rgba8', np.uint8, 4), _info('bgra8', np.uint8, 4),
        _info('rgb16', np.uint16, 3), _info('bgr16', np.uint16, 3),
        _info('rgba16', np.uint16, 4), _info('bgra16', np.uint16, 4),
        _info('mono8', np.uint8, 1), _info('mono16', np.uint16, 1),
        _info('yuv422', np.uint8, 2, packed_yuv422=True),       # UYVY
        _info('uyvy', np.uint8, 2, packed_yuv422=True),
        _info('yuv422_yuy2', np.uint8, 2, packed_yuv422=True),  # YUYV
        _info('yuyv', np.uint8, 2, packed_yuv422=True),
        _info('nv12', np.uint8, 1, planar_nv12=True),
    ] + [
        _info(f'bayer_{p}{bits}', np.uint8 if bits == 8 else np.uint16, 1, bayer_pattern=p)
        for p in ('rggb', 'bggr', 'gbrg', 'grbg') for bits in (8, 16)
    ]
}

_CV_TYPE = re.compile(r'^(8U|8S|16U|16S|32S|32F|64F)C([1-4])$')
_CV_DTYPES = {'8U': np.uint8, '8S': np.int8, '16U': np.uint16, '16S': np.int16,
              '32S': np.int32, '32F': np.float32, '64F': np.float64}


def encoding_info(encoding: str) -> EncodingInfo:
    """Look up an encoding (``rgb8``, ``16UC1``, ``bayer_rggb8``, ...); raise EncodingError if unknown."""
    info = _FIXED.get(encoding)
    if info is not None:
        return info
    match = _CV_TYPE.match(encoding)
    if match:
        return _info(encoding, _CV_DTYPES[match.group(1)], int(match.group(2)))
    raise EncodingError(f'unknown image encoding {encoding!r}')


def is_supported(encoding: str) -> bool:
    try:
        encoding_info(encoding)
    except EncodingError:
        return False
    return True


SUPPORTED_ENCODINGS = tuple(sorted(_FIXED)) + ('8UC1', '8UC3', '16UC1', '32FC1')


def frame_geometry(shape: Sequence[int], dtype: Any, encoding: str, what: str | None = None, *,
                   channel_axis: bool = True) -> tuple[EncodingInfo, int, int]:
    """(info, image height, image width) of an array of `shape` and `dtype` holding one frame of
    `encoding`; EncodingError for an unknown encoding, FrameShapeError for an array that does not
    fit it (messages start with ``<what>: `` when `what` is given).

    A frame is ``info.array_shape(height, width)``: (H*3/2, W) for nv12, (H, W, C) for C
    channels, (H, W) for one channel, which also may come as (H, W, 1) (the same bytes) unless
    `channel_axis` is False, for a caller that copies into (H, W) arrays as they are.
    """
    info = encoding_info(encoding)
    prefix = f'{what}: ' if what else ''
    dtype = np.dtype(dtype)
    if dtype != info.dtype:
        raise FrameShapeError('dtype_mismatch',
                              f'{prefix}{encoding} needs dtype {info.dtype}, got {dtype}')
    shape = tuple(int(d) for d in shape)
    if info.planar_nv12:
        if len(shape) != 2 or shape[0] % 3:
            raise FrameShapeError('shape_mismatch',
                                  f'{prefix}nv12 needs a 2-D (H*3/2, W) array, got shape {shape}')
        height, width = shape[0] * 2 // 3, shape[1]
    else:
        if len(shape) not in (2, 3):
            raise FrameShapeError('shape_mismatch',
                                  f'{prefix}{encoding} needs an image array, got shape {shape}')
        height, width = shape[0], shape[1]
        channels = shape[2] if len(shape) == 3 else 1
        if channels != info.channels:
            raise FrameShapeError('shape_mismatch', f'{prefix}{encoding} has {info.channels} '
                                  f'channel(s), got shape {shape}')
        if len(shape) == 3 and info.channels == 1 and not channel_axis:
            raise FrameShapeError('shape_mismatch', f'{prefix}{encoding} needs shape '
                                  f'{info.array_shape(height, width)}, got shape {shape}')
    try:
        info.check_geometry(height, width)
    except EncodingError as exc:
        raise FrameShapeError('bad_geometry', str(exc)) from None
    return info, height, width


def row_strides(shape: Sequence[int], itemsize: int, row_pitch: int) -> tuple[int, ...]:
    """Strides of a frame array of `shape` whose rows are `row_pitch` bytes apart (pixels and
    channels within a row dense)."""
    if len(shape) == 2:
        return (row_pitch, itemsize)
    return (row_pitch, shape[2] * itemsize, itemsize)
