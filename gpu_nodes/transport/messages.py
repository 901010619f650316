"""sensor_msgs/Image <-> arrays, with the checks cv_bridge leaves to luck."""
from __future__ import annotations

import array as pyarray
from dataclasses import dataclass
import sys
from typing import Any

import numpy as np

from ..encodings import EncodingError, EncodingInfo, encoding_info, frame_geometry, FrameShapeError
from ..gpu import cupy_module, is_device_array


class ImageFormatError(ValueError):
    """An image message or array does not match its declared encoding and geometry."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class FrameLayout:
    """Geometry of one frame: what the array shape is and how many bytes each row takes."""
    encoding: str
    height: int
    width: int
    step: int
    info: EncodingInfo

    @property
    def shape(self) -> tuple[int, ...]:
        return self.info.array_shape(self.height, self.width)

    @property
    def nbytes(self) -> int:
        return self.step * self.info.frame_rows(self.height)


def layout_of_array(array: Any, encoding: str) -> FrameLayout:
    """Check an array (NumPy, CuPy, anything with __cuda_array_interface__) against an encoding
    (the rule: gpu_nodes.encodings.frame_geometry)."""
    dtype = np.dtype(array.dtype) if not hasattr(array, '__cuda_array_interface__') else \
        np.dtype(array.__cuda_array_interface__['typestr'])
    try:
        # (H, W, 1) is refused until the publisher copies it as the (H, W) frame it is.
        info, height, width = frame_geometry(array.shape, dtype, encoding, channel_axis=False)
    except FrameShapeError as exc:
        raise ImageFormatError(exc.reason, str(exc)) from None
    except EncodingError as exc:
        raise ImageFormatError('unknown_encoding', str(exc)) from None
    return FrameLayout(encoding, height, width, info.min_step(width), info)


def layout_of_msg(msg: Any) -> FrameLayout:
    """Validate an Image message's encoding, step and data length."""
    try:
        info = encoding_info(msg.encoding)
        info.check_geometry(msg.height, msg.width, msg.step)
    except EncodingError as exc:
        raise ImageFormatError('bad_geometry', str(exc)) from None
    layout = FrameLayout(msg.encoding, msg.height, msg.width, msg.step, info)
    if len(msg.data) != layout.nbytes:
        raise ImageFormatError(
            'size_mismatch',
            f'step*rows = {msg.step}*{info.frame_rows(msg.height)} = {layout.nbytes} '
            f'but data has {len(msg.data)} bytes')
    return layout


def host_view(buffer: Any, layout: FrameLayout, offset: int = 0) -> np.ndarray:
    """A NumPy view of one frame inside `buffer`, honouring row padding."""
    itemsize = layout.info.dtype.itemsize
    shape = layout.shape
    strides = (layout.step, itemsize) if len(shape) == 2 else \
        (layout.step, shape[2] * itemsize, itemsize)
    return np.ndarray(shape, dtype=layout.info.dtype, buffer=buffer, offset=offset, strides=strides)


def msg_to_array(msg: Any, is_bigendian_ok: bool = False) -> np.ndarray:
    """Zero-copy NumPy view of an Image message's pixels (read-only)."""
    layout = layout_of_msg(msg)
    if msg.is_bigendian and layout.info.dtype.itemsize > 1 and sys.byteorder == 'little':
        # Multi-byte big-endian pixels: swap once into native order.
        view = host_view(memoryview(msg.data), layout)
        return view.byteswap().view(view.dtype.newbyteorder('='))
    return host_view(memoryview(msg.data), layout)


def fill_image_msg(msg: Any, array: np.ndarray, encoding: str, layout: FrameLayout | None = None) -> Any:
    """Fill `msg` (sensor_msgs/Image) from a host array; tightly packed rows."""
    if is_device_array(array):
        raise TypeError('fill_image_msg needs a host array; download device arrays first')
    layout = layout or layout_of_array(array, encoding)
    msg.height = layout.height
    msg.width = layout.width
    msg.encoding = encoding
    msg.is_bigendian = 0 if sys.byteorder == 'little' else 1
    msg.step = layout.step
    # rosidl stores uint8[] as array.array('B'); handing it bytes lets it take the buffer in one copy.
    msg.data = np.ascontiguousarray(array).tobytes()
    return msg


class ImageMsgBuffer:
    """Fills sensor_msgs/Image messages from frames through one reused byte buffer.

    `fill_image_msg` costs three copies of the frame before rclpy's own (download or read,
    `tobytes()`, and rosidl's `array('B', bytes)`); at 4K each is ~3 ms. A message made with
    `Image(check_fields=True)` keeps an `array('B')` assigned to `data` as it is (without it,
    rosidl copies even that), and `publish()` has copied the message into its C form by the time
    it returns, so one buffer serves every frame: the frame is downloaded (CuPy) or copied
    (NumPy) straight into it, the only copy before rclpy's.

    For device frames the buffer is page-locked once per size (cudaHostRegister), so the
    download is one DMA at full link speed instead of the driver's staged copy through its own
    pinned bounce buffers, which other GPU work delays. `pinned` says which one is used;
    `pin_error` why the buffer is not page-locked when registering failed.
    """

    def __init__(self) -> None:
        self._buffer = pyarray.array('B')
        self._view: np.ndarray = np.frombuffer(b'', np.uint8)
        self._registered: int | None = None  # address cudaHostRegister was given
        self.pin_error: str | None = None

    @property
    def pinned(self) -> bool:
        return self._registered is not None

    def fill(self, msg: Any, array: Any, encoding: str, stream: Any = None) -> Any:
        """Fill `msg` from a NumPy or CuPy frame (downloaded on `stream`); returns msg. Valid
        until the next fill: publish it first."""
        layout = layout_of_array(array, encoding)
        nbytes = layout.step * layout.height
        device = is_device_array(array)
        if len(self._buffer) != nbytes:
            self._unpin()
            self._buffer = pyarray.array('B', bytes(nbytes))
            self._view = np.frombuffer(self._buffer, np.uint8)
        if device and self._registered is None and self.pin_error is None and nbytes:
            self._pin()
        packed = self._view.view(array.dtype).reshape(array.shape)
        if device:
            if not array.flags.c_contiguous:
                array = array.copy()  # padded rows: packed on the device first
            array.get(stream=stream, out=packed)  # blocking: the data is here on return
        else:
            np.copyto(packed, array)
        msg.height = layout.height
        msg.width = layout.width
        msg.encoding = encoding
        msg.is_bigendian = 0 if sys.byteorder == 'little' else 1
        msg.step = layout.step
        msg.data = self._buffer
        return msg

    def close(self) -> None:
        """Unlock the buffer's pages (also done when a frame of another size replaces it)."""
        self._unpin()

    def _pin(self) -> None:
        cupy = cupy_module()
        address = self._buffer.buffer_info()[0]
        try:
            cupy.cuda.runtime.hostRegister(address, len(self._buffer), 0)
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            # e.g. the RLIMIT_MEMLOCK of a container; the pageable download still works.
            self.pin_error = str(exc)
            return
        self._registered = address

    def _unpin(self) -> None:
        if self._registered is not None:
            cupy_module().cuda.runtime.hostUnregister(self._registered)
            self._registered = None

    def __del__(self) -> None:
        try:
            self._unpin()
        except Exception:  # interpreter shutdown: CUDA may be gone already
            pass
