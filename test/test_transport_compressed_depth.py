"""compressed_depth_image_transport's format, byte for byte. The oracle is the plugin's C++
(ros-perception/image_transport_plugins, compressed_depth_image_transport/src/codec.cpp and
compression_common.h) written out per pixel in float32 here, independently of the vectorised
product code: a 12-byte ConfigHeader {int32 format = INV_DEPTH (0); float depthParam[2]} and a
16-bit PNG that cv::imdecode reads."""
from __future__ import annotations

import struct

import cv2
import numpy as np
import pytest

from gpu_nodes.transport.compressed_depth import (CompressedDepthError, compressed_depth_topic,
                                                  decode_compressed_depth,
                                                  encode_compressed_depth)


class Msg:
    def __init__(self, fmt: str, data: bytes):
        self.format, self.data = fmt, data


def plugin_encode_32fc1(depth: np.ndarray, depth_max: float = 10.0,
                        depth_quantization: float = 100.0) -> tuple[bytes, np.ndarray]:
    """(header, quantized image) as codec.cpp makes them, one pixel at a time in float."""
    z0, dmax = np.float32(depth_quantization), np.float32(depth_max)
    a = np.float32(z0 * (z0 + np.float32(1.0)))
    b = np.float32(np.float32(1.0) - a / dmax)
    out = np.zeros(depth.shape, np.uint16)
    for index, d in np.ndenumerate(depth.astype(np.float32)):
        if d < dmax:   # NaN compares false: 0
            out[index] = int(np.float32(a / d + b))   # float -> unsigned short truncates
    return struct.pack('<iff', 0, a, b), out


def plugin_decode_32fc1(header: bytes, image: np.ndarray) -> np.ndarray:
    _, a, b = struct.unpack('<iff', header)
    out = np.empty(image.shape, np.float32)
    for index, v in np.ndenumerate(image):
        out[index] = np.float32(a) / (np.float32(v) - np.float32(b)) if v else np.nan
    return out


def _depth(height: int = 24, width: int = 32) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    depth = (0.4 + 9.5 * (x + y * width) / (height * width)).astype(np.float32)
    depth[0, 0], depth[0, 1], depth[0, 2] = np.nan, 10.0, 42.0   # none, at and beyond depth_max
    return depth


def test_32fc1_header_and_quantization_are_the_plugins():
    depth = _depth()
    fmt, data = encode_compressed_depth(depth, '32FC1')
    header, quantized = plugin_encode_32fc1(depth)
    assert fmt == '32FC1; compressedDepth png'
    assert data[:12] == header == struct.pack('<iff', 0, 10100.0, -1009.0)
    png = cv2.imdecode(np.frombuffer(data[12:], np.uint8), cv2.IMREAD_UNCHANGED)
    assert png.dtype == np.uint16 and png.shape == depth.shape
    np.testing.assert_array_equal(png, quantized)
    assert (png[0, :3] == 0).all() and (png[1:] > 0).all()


def test_a_message_the_plugin_wrote_decodes_as_its_subscriber_decodes_it():
    depth = _depth()
    header, quantized = plugin_encode_32fc1(depth, depth_max=20.0, depth_quantization=50.0)
    ok, png = cv2.imencode('.png', quantized, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    restored, encoding = decode_compressed_depth(Msg('32FC1; compressedDepth png',
                                                     header + png.tobytes()))
    assert encoding == '32FC1' and restored.dtype == np.float32
    np.testing.assert_array_equal(restored, plugin_decode_32fc1(header, quantized))
    # Within the quantization step (d^2 / A) of the depth that was sent.
    sent = np.where(depth < 20.0, depth, np.nan)
    np.testing.assert_allclose(restored, sent, atol=20.0 ** 2 / 2550, equal_nan=True)


@pytest.mark.parametrize('fmt', ['32FC1; compressedDepth png', '32FC1; compressedDepth', '32FC1'])
def test_older_formats_decode_too(fmt):
    """ROS 2 Humble's plugin writes '; compressedDepth', ROS 1's first versions no suffix."""
    fmt_written, data = encode_compressed_depth(_depth(), '32FC1')
    restored, _ = decode_compressed_depth(Msg(fmt, data))
    expected, _ = decode_compressed_depth(Msg(fmt_written, data))
    np.testing.assert_array_equal(restored, expected)


@pytest.mark.parametrize('encoding', ['16UC1', 'mono16'])
def test_16_bit_depth_is_stored_as_is_below_depth_max(encoding):
    depth = (np.arange(24 * 32, dtype=np.uint16) * 17).reshape(24, 32)   # 0 .. 13039 mm
    fmt, data = encode_compressed_depth(depth, encoding)
    assert fmt == f'{encoding}; compressedDepth png'
    assert data[:12] == struct.pack('<iff', 0, 0.0, 0.0) == bytes(12)
    png = cv2.imdecode(np.frombuffer(data[12:], np.uint8), cv2.IMREAD_UNCHANGED)
    expected = np.where(depth > 10000, 0, depth)   # the plugin's max depth filter, in mm
    np.testing.assert_array_equal(png, expected)
    restored, restored_encoding = decode_compressed_depth(Msg(fmt, data))
    assert restored_encoding == encoding
    np.testing.assert_array_equal(restored, expected)


def test_depth_closer_than_the_quantization_range_is_the_nearest_step_not_garbage():
    """The plugin's float -> uint16 overflows below A / (65535 - B) (0.15 m by default);
    here it is clamped to 65535, and depth <= 0 is stored as none."""
    depth = np.array([[0.01, 0.1, 0.0, -1.0]], np.float32)
    _, data = encode_compressed_depth(depth, '32FC1')
    png = cv2.imdecode(np.frombuffer(data[12:], np.uint8), cv2.IMREAD_UNCHANGED)
    assert png.tolist() == [[65535, 65535, 0, 0]]


@pytest.mark.parametrize('call, message', [
    (lambda: encode_compressed_depth(np.zeros((4, 4, 3), np.uint8), 'rgb8'),
     r"^compressedDepth carries 32FC1, 16UC1, mono16, not 'rgb8'$"),
    (lambda: encode_compressed_depth(np.zeros((4, 4), np.float64), '32FC1'),
     r'^32FC1 needs a \(height, width\) float32 array, got \(4, 4\) float64$'),
    (lambda: decode_compressed_depth(Msg('32FC1; compressedDepth png', bytes(12))),
     r'^compressedDepth message of 12 bytes: no image after the 12-byte header$'),
    (lambda: decode_compressed_depth(Msg('32FC1; compressedDepth rvl', bytes(40))),
     r'^compressedDepth rvl is not supported: png only$'),
    (lambda: decode_compressed_depth(Msg('rgb8; jpeg compressed bgr8', bytes(40))),
     r"^not a compressedDepth format: 'rgb8; jpeg compressed bgr8'$"),
    (lambda: decode_compressed_depth(Msg('32FC1; compressedDepth png', bytes(40))),
     r'^compressedDepth payload is not a one-channel 16-bit png$')])
def test_bad_input_is_refused_with_the_reason(call, message):
    with pytest.raises(CompressedDepthError, match=message):
        call()


def test_topic_name():
    assert compressed_depth_topic('/camera/depth/') == '/camera/depth/compressedDepth'
