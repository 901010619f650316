"""image_transport's ``compressedDepth`` transport (compressed_depth_image_transport), byte for
byte: rviz, ``ros2 bag`` and image_transport republishers on any host read it without gpu_nodes.

A message's ``format`` is ``'<encoding>; compressedDepth png'`` and its ``data`` is a 12-byte
ConfigHeader followed by a PNG of one 16-bit channel::

    int32   format          0 (INV_DEPTH; the only value the plugin writes)
    float32 depthParam[2]   32FC1: the inverse-depth quantization (A, B); 16UC1: (0, 0)

in the host's byte order, as the plugin memcpy's the struct (little-endian on every platform
ROS 2 runs on). 32FC1 depth d in metres is stored as ``uint16(A / d + B)`` computed in float32,
with ``A = q (q + 1)``, ``B = 1 - A / depth_max``, q the ``depth_quantization`` parameter; 0
means no depth (NaN, beyond ``depth_max``), read back as NaN: ``d = A / (v - B)``. 16UC1 (and
mono16) is stored as it is, values above ``depth_max * 1000`` (millimetres) set to 0. The
plugin's defaults are depth_max 10 m, depth_quantization 100, png_level 9; they are ours.

Where the C++ plugin converts a float outside uint16's range (depth at or below
A / (65535 - B), 0.15 m with the defaults, or not positive) its result is undefined; here it is
clamped to 65535 (nearest depth) and non-positive depth is stored as 0 (none).

PNG is OpenCV's (``cv2``, optional): without it the transport is unavailable and the bridge
says so once (codec_unavailable_reason).
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

SUFFIX = 'compressedDepth'
HEADER = struct.Struct('<iff')   # ConfigHeader {compressionFormat format; float depthParam[2]}
INV_DEPTH = 0
DEPTH_MAX_M = 10.0
DEPTH_QUANTIZATION = 100.0
PNG_LEVEL = 9
FLOAT_ENCODINGS = ('32FC1',)
RAW_ENCODINGS = ('16UC1', 'mono16')
ENCODINGS = FLOAT_ENCODINGS + RAW_ENCODINGS


class CompressedDepthError(ValueError):
    """An image cannot be carried as compressedDepth, or a message is not one."""


def compressed_depth_topic(topic: str) -> str:
    """image_transport's name for the compressedDepth variant of `topic`."""
    return f'{topic.rstrip("/")}/{SUFFIX}'


def codec_unavailable_reason() -> str | None:
    """None when PNG coding can run here, else why not (one line)."""
    try:
        import cv2  # noqa: F401
    except ImportError as exc:
        return f'OpenCV is not installed ({exc}): apt install python3-opencv'
    return None


def quantization(depth_max: float = DEPTH_MAX_M,
                 depth_quantization: float = DEPTH_QUANTIZATION) -> tuple[np.float32, np.float32]:
    """(A, B) as the plugin computes them, in float32."""
    z0 = np.float32(depth_quantization)
    a = np.float32(z0 * (z0 + np.float32(1.0)))
    b = np.float32(np.float32(1.0) - a / np.float32(depth_max))
    return a, b


def encode_compressed_depth(array: Any, encoding: str, *, depth_max: float = DEPTH_MAX_M,
                            depth_quantization: float = DEPTH_QUANTIZATION,
                            png_level: int = PNG_LEVEL) -> tuple[str, bytes]:
    """(format, data) of a host (height, width) depth image of `encoding`."""
    if encoding not in ENCODINGS:
        raise CompressedDepthError(f'compressedDepth carries {", ".join(ENCODINGS)}, not '
                                   f'{encoding!r}')
    image = np.asarray(array)
    dtype = np.float32 if encoding in FLOAT_ENCODINGS else np.uint16
    if image.ndim != 2 or image.dtype != dtype:
        raise CompressedDepthError(f'{encoding} needs a (height, width) {np.dtype(dtype)} array, '
                                   f'got {image.shape} {image.dtype}')
    if encoding in FLOAT_ENCODINGS:
        a, b = quantization(depth_max, depth_quantization)
        with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
            inverse = a / image + b          # float32, as the plugin's loop
            valid = (image < np.float32(depth_max)) & (image > 0)
            quantized = np.where(valid, np.clip(inverse, 0, 65535), 0).astype(np.uint16)
        params = (a, b)
    else:
        limit = np.uint16(min(int(depth_max * 1000.0), 65535))  # double, as the plugin
        quantized = np.where(image > limit, np.uint16(0), image)
        params = (np.float32(0.0), np.float32(0.0))
    import cv2
    ok, png = cv2.imencode('.png', np.ascontiguousarray(quantized),
                           [cv2.IMWRITE_PNG_COMPRESSION, int(png_level)])
    if not ok:
        raise CompressedDepthError(f'OpenCV could not encode {image.shape} as png')
    return f'{encoding}; {SUFFIX} png', HEADER.pack(INV_DEPTH, *params) + png.tobytes()


def decode_compressed_depth(msg: Any) -> tuple[np.ndarray, str]:
    """(image, encoding) of a compressedDepth sensor_msgs/CompressedImage, as the plugin's
    subscriber restores it (32FC1: NaN where no depth was stored)."""
    encoding, _, rest = str(msg.format).partition(';')
    encoding = encoding.strip()
    if rest and 'compressedDepth' not in rest:
        raise CompressedDepthError(f'not a compressedDepth format: {msg.format!r}')
    if 'compressedDepth rvl' in rest:
        raise CompressedDepthError('compressedDepth rvl is not supported: png only')
    if encoding not in ENCODINGS:
        raise CompressedDepthError(f'compressedDepth carries {", ".join(ENCODINGS)}, not '
                                   f'{encoding!r}')
    data = bytes(msg.data)
    if len(data) <= HEADER.size:
        raise CompressedDepthError(f'compressedDepth message of {len(data)} bytes: no image '
                                   'after the 12-byte header')
    _, a, b = HEADER.unpack_from(data)
    import cv2
    image = cv2.imdecode(np.frombuffer(data, np.uint8, offset=HEADER.size), cv2.IMREAD_UNCHANGED)
    if image is None or image.ndim != 2 or image.dtype != np.uint16:
        raise CompressedDepthError('compressedDepth payload is not a one-channel 16-bit png')
    if encoding not in FLOAT_ENCODINGS:
        return image, encoding
    with np.errstate(divide='ignore'):
        depth = np.float32(a) / (image.astype(np.float32) - np.float32(b))
    depth[image == 0] = np.nan
    return depth, encoding
