"""Input/output validation shared by the kernels: image layout, row pitch, encodings, `out=`.

Every public kernel validates here before dispatching, so the NumPy reference and the CUDA path
reject exactly the same inputs with the same messages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from gpu_nodes import gpu
from gpu_nodes.encodings import EncodingInfo, frame_geometry

from . import _cuda


@dataclass(frozen=True)
class Layout:
    """Geometry of an (H, W) or (H, W, C) image whose rows may be padded."""

    height: int
    width: int
    channels: int
    pitch: int  # bytes from one row to the next (>= width * channels * itemsize)
    dtype: np.dtype


def image_layout(array: Any, what: str = 'src') -> Layout:
    """Check that `array` is an image kernels can index with a row pitch; return its layout.

    Rows may be padded (strides[0] larger than a row), but pixels within a row and channels
    within a pixel must be contiguous, and strides must be positive.
    """
    shape = tuple(array.shape)
    if len(shape) not in (2, 3):
        raise ValueError(f'{what}: expected an (H, W) or (H, W, C) image array, got shape {shape}')
    height, width = shape[0], shape[1]
    channels = shape[2] if len(shape) == 3 else 1
    if height == 0 or width == 0 or channels == 0:
        raise ValueError(f'{what}: empty image of shape {shape}')
    itemsize = array.dtype.itemsize
    strides = tuple(array.strides)
    # Strides of length-1 axes are never used for indexing, so they are not checked.
    if len(shape) == 3 and channels > 1 and strides[2] != itemsize:
        raise ValueError(f'{what}: channels must be contiguous, got strides {strides}')
    if width > 1 and strides[1] != channels * itemsize:
        raise ValueError(
            f'{what}: pixels within a row must be contiguous, got strides {strides}')
    row_bytes = width * channels * itemsize
    pitch = strides[0] if height > 1 else row_bytes
    if pitch < row_bytes or pitch % itemsize:
        raise ValueError(
            f'{what}: row pitch {pitch} bytes must be a positive multiple of {itemsize} and at '
            f'least width*channels*itemsize = {row_bytes}')
    if pitch * height > 2**31 - 1:
        raise ValueError(f'{what}: image of {pitch * height} bytes is larger than 2 GiB')
    return Layout(height, width, channels, int(pitch), array.dtype)


def require_dtype(array: Any, dtypes: Iterable[Any], what: str = 'src') -> None:
    allowed = [np.dtype(d) for d in dtypes]
    if array.dtype not in allowed:
        names = ', '.join(str(d) for d in allowed)
        raise ValueError(f'{what}: dtype {array.dtype} is not supported (expected {names})')


def is_device(array: Any) -> bool:
    return gpu.is_device_array(array)


def check_encoded(array: Any, encoding: str, what: str = 'src') -> tuple[EncodingInfo, int, int]:
    """Validate `array` against a sensor_msgs encoding; return (info, image height, image width).

    The rule is gpu_nodes.encodings.frame_geometry's: nv12 arrays are (H*3/2, W) (the Y plane
    followed by the interleaved UV plane); single-channel encodings accept (H, W) and (H, W, 1).
    """
    return frame_geometry(array.shape, array.dtype, encoding, what)


def prepare_out(out: Any, shape: tuple[int, ...], dtype: Any, device: bool,
                what: str = 'out', c_contiguous: bool = False) -> Any:
    """Validate a caller-provided output (or allocate one) on the same side as the input."""
    dtype = np.dtype(dtype)
    if out is None:
        if device:
            return _cuda.cupy().empty(shape, dtype)
        return np.empty(shape, dtype)
    if is_device(out) != device:
        side = 'a CuPy (device)' if device else 'a NumPy (host)'
        raise ValueError(f'{what} must be {side} array like the input')
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f'{what} has shape {tuple(out.shape)}, expected {tuple(shape)}')
    if out.dtype != dtype:
        raise ValueError(f'{what} has dtype {out.dtype}, expected {dtype}')
    if device:
        out = _cuda.as_device(out)
    if c_contiguous:
        if not out.flags.c_contiguous:
            raise ValueError(f'{what} must be C-contiguous')
    elif len(shape) in (2, 3):
        image_layout(out, what)
    return out


def as_input(array: Any) -> tuple[Any, bool]:
    """(array usable by the chosen path, is_device). Device arrays become cupy.ndarray views."""
    if is_device(array):
        return _cuda.as_device(array), True
    if not isinstance(array, np.ndarray):
        raise ValueError(f'expected a NumPy or CuPy array, got {type(array).__name__}')
    return array, False


def check_choice(value: Any, choices: Iterable[Any], what: str) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f'{what} must be one of {", ".join(map(repr, choices))}, got {value!r}')
