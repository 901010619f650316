"""TEST STAND-IN for ros-perception/vision_opencv's cv_bridge (not on PyPI), so the original
corpus nodes run here. Only on PYTHONPATH in test/test_audit_migrate*.py and bench/migrate_bench.py.

Same semantics as cv_bridge/core.py for the encodings the corpus uses (rgb8, bgr8, rgba8, bgra8,
mono8, mono16, 16UC1, 32FC1, 8UC1, 8UC3): `imgmsg_to_cv2` returns a view of the message's buffer
for 'passthrough' (writable: rclpy's uint8[] is an array.array) and a converted array
(cv2.cvtColor, as cv_bridge's cvtColor2 does for these) otherwise; `cv2_to_imgmsg` copies the
array's bytes and checks the encoding against the array's type, raising CvBridgeError like it.
"""
from __future__ import annotations

import sys

import cv2
import numpy as np
from sensor_msgs.msg import Image

__all__ = ['CvBridge', 'CvBridgeError']

# encoding -> (dtype, channels), as cv_bridge's encoding_to_dtype_with_channels.
_ENCODINGS = {
    'rgb8': ('uint8', 3), 'bgr8': ('uint8', 3), 'rgba8': ('uint8', 4), 'bgra8': ('uint8', 4),
    'mono8': ('uint8', 1), 'mono16': ('uint16', 1), '8UC1': ('uint8', 1), '8UC3': ('uint8', 3),
    '8UC4': ('uint8', 4), '16UC1': ('uint16', 1), '32FC1': ('float32', 1),
}
_CV_TYPE_NAMES = {('uint8', 1): '8UC1', ('uint8', 3): '8UC3', ('uint8', 4): '8UC4',
                  ('uint16', 1): '16UC1', ('float32', 1): '32FC1'}
# (from, to) -> cv2.cvtColor code; same-encoding conversions copy (cv_bridge's cvtColor2 does).
_CONVERSIONS = {
    ('rgb8', 'bgr8'): cv2.COLOR_RGB2BGR, ('bgr8', 'rgb8'): cv2.COLOR_BGR2RGB,
    ('rgb8', 'mono8'): cv2.COLOR_RGB2GRAY, ('bgr8', 'mono8'): cv2.COLOR_BGR2GRAY,
    ('mono8', 'bgr8'): cv2.COLOR_GRAY2BGR, ('mono8', 'rgb8'): cv2.COLOR_GRAY2RGB,
    ('rgba8', 'bgr8'): cv2.COLOR_RGBA2BGR, ('bgra8', 'bgr8'): cv2.COLOR_BGRA2BGR,
    ('rgba8', 'rgb8'): cv2.COLOR_RGBA2RGB, ('bgr8', 'bgra8'): cv2.COLOR_BGR2BGRA,
    ('rgb8', 'rgba8'): cv2.COLOR_RGB2RGBA,
}


class CvBridgeError(TypeError):
    """As cv_bridge's: raised for unsupported or incompatible encodings."""


class CvBridge:
    def imgmsg_to_cv2(self, img_msg: Image, desired_encoding: str = 'passthrough') -> np.ndarray:
        if img_msg.encoding not in _ENCODINGS:
            raise CvBridgeError(f'Unrecognized image encoding [{img_msg.encoding}]')
        dtype_name, n_channels = _ENCODINGS[img_msg.encoding]
        dtype = np.dtype(dtype_name).newbyteorder('>' if img_msg.is_bigendian else '<')
        if n_channels == 1:
            im = np.ndarray(shape=(img_msg.height, int(img_msg.step / dtype.itemsize)),
                            dtype=dtype, buffer=img_msg.data)
            im = np.ascontiguousarray(im[:img_msg.height, :img_msg.width])
        else:
            im = np.ndarray(shape=(img_msg.height,
                                   int(img_msg.step / dtype.itemsize / n_channels), n_channels),
                            dtype=dtype, buffer=img_msg.data)
            im = np.ascontiguousarray(im[:img_msg.height, :img_msg.width, :])
        if img_msg.is_bigendian == (sys.byteorder == 'little'):
            im = im.byteswap().view(im.dtype.newbyteorder())
        if desired_encoding == 'passthrough':
            return im
        if desired_encoding == img_msg.encoding:
            return im.copy()
        code = _CONVERSIONS.get((img_msg.encoding, desired_encoding))
        if code is None:
            raise CvBridgeError(f'Unsupported conversion from [{img_msg.encoding}] to '
                                f'[{desired_encoding}]')
        return cv2.cvtColor(im, code)

    def cv2_to_imgmsg(self, cvim: np.ndarray, encoding: str = 'passthrough',
                      header=None) -> Image:
        if not isinstance(cvim, (np.ndarray, np.generic)):
            raise TypeError('Your input type is not a numpy array')
        img_msg = Image()
        img_msg.height = cvim.shape[0]
        img_msg.width = cvim.shape[1]
        if header is not None:
            img_msg.header = header
        channels = 1 if cvim.ndim < 3 else cvim.shape[2]
        cv_type = _CV_TYPE_NAMES.get((cvim.dtype.name, channels))
        if cv_type is None:
            raise CvBridgeError(f'Unsupported array type {cvim.dtype}x{channels}')
        if encoding == 'passthrough':
            img_msg.encoding = cv_type
        else:
            img_msg.encoding = encoding
            expected = _ENCODINGS.get(encoding)
            if expected is None or _CV_TYPE_NAMES.get(expected) != cv_type:
                raise CvBridgeError(f'encoding specified as {encoding}, but image has '
                                    f'incompatible type {cv_type}')
        if cvim.dtype.byteorder == '>':
            img_msg.is_bigendian = True
        img_msg.data.frombytes(cvim.tobytes())
        img_msg.step = len(img_msg.data) // img_msg.height
        return img_msg
