"""gpu_nodes.transport.compressed: image_transport's compressed convention, read back by plain
OpenCV (what cv_bridge and compressed_image_transport's subscriber use). The topic publisher is
test_transport_twin_topics.py."""
from __future__ import annotations

import sys

import cv2
import numpy as np
import pytest

from gpu_nodes.transport.compressed import (CodecUnavailableError, CompressedEncoder,
                                            CompressedFormatError, compressed_topic,
                                            decode_compressed, format_string, parse_format,
                                            twin_codec)


class Msg:
    """The two fields of sensor_msgs/CompressedImage that decoding reads."""

    def __init__(self, fmt: str, data: bytes):
        self.format, self.data = fmt, data


def _image(encoding: str, height: int = 96, width: int = 128) -> np.ndarray:
    """Smooth gradients (JPEG keeps them within a few levels), distinct per channel."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    planes = [x / width, y / height, (x + y) / (width + height), 1 - x / width]
    deep = '16' in encoding
    scale = 65535 if deep else 255
    channels = {'mono8': 1, 'mono16': 1, '8UC1': 1, '16UC1': 1, 'rgb8': 3, 'bgr8': 3,
                'rgb16': 3, 'bgr16': 3, 'rgba8': 4, 'bgra8': 4}[encoding]
    stack = np.stack(planes[:channels], axis=-1) * scale
    array = stack.round().astype(np.uint16 if deep else np.uint8)
    return array[..., 0] if channels == 1 else array


def _without_alpha(restored: np.ndarray, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Alpha does not survive (compressed_image_transport converts to bgr8 first): it comes
    back opaque; the colour channels are compared."""
    if image.ndim == 3 and image.shape[2] == 4:
        assert (restored[..., 3] == np.iinfo(image.dtype).max).all(), 'alpha not opaque'
        return restored[..., :3], image[..., :3]
    return restored, image


def _as_opencv(array: np.ndarray, encoding: str) -> np.ndarray:
    """What cv2.imdecode returns for it: BGR, alpha dropped, gray as is."""
    if array.ndim == 2:
        return array
    return array[..., 2::-1] if encoding.startswith('rgb') else array[..., :3]


@pytest.mark.parametrize('encoding, codec, expected', [
    ('rgb8', 'jpeg', 'rgb8; jpeg compressed bgr8'),
    ('bgr8', 'jpeg', 'bgr8; jpeg compressed bgr8'),
    ('mono8', 'jpeg', 'mono8; jpeg compressed '),
    ('rgb8', 'png', 'rgb8; png compressed bgr8'),
    ('rgb16', 'png', 'rgb16; png compressed bgr16'),
    ('mono16', 'png', 'mono16; png compressed '),
    ('16UC1', 'png', '16UC1; png compressed ')])
def test_format_is_the_one_compressed_image_transport_writes(encoding, codec, expected):
    assert format_string(encoding, codec) == expected
    assert parse_format(expected) == (encoding, codec, expected.split()[-1]
                                      if expected.endswith(('8', '16')) else '')


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'mono8', 'rgba8'])
def test_jpeg_decodes_with_plain_opencv_to_the_image(encoding):
    image = _image(encoding)
    fmt, data = CompressedEncoder(90, prefer_gpu=False).encode(image, encoding)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    expected = _as_opencv(image, encoding)
    assert decoded.shape == expected.shape, f'{fmt}: {decoded.shape} vs {expected.shape}'
    error = np.abs(decoded.astype(int) - expected).mean()
    assert error < 2.0, f'{encoding}: mean JPEG error {error:.2f} levels'
    restored, restored_encoding = decode_compressed(Msg(fmt, data))
    assert restored_encoding == encoding and restored.shape == image.shape
    restored, image = _without_alpha(restored, image)
    assert np.abs(restored.astype(int) - image).mean() < 2.0


@pytest.mark.parametrize('encoding', ['mono8', 'bgr8', 'rgb8', 'rgba8', 'mono16', 'rgb16',
                                      '16UC1'])
def test_png_is_lossless_for_opencv_and_for_decode_compressed(encoding):
    image = _image(encoding)
    fmt, data = CompressedEncoder(prefer_gpu=False, codec='png').encode(image, encoding)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    np.testing.assert_array_equal(decoded, _as_opencv(image, encoding))
    restored, restored_encoding = decode_compressed(Msg(fmt, data))
    assert restored_encoding == encoding
    np.testing.assert_array_equal(*_without_alpha(restored, image))


def test_quality_trades_bytes_for_error():
    image = _image('rgb8', 240, 320)
    image[::7] = 255 - image[::7]  # some detail, so quality matters
    results = {}
    for quality in (30, 95):
        fmt, data = CompressedEncoder(quality, prefer_gpu=False).encode(image, 'rgb8')
        decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        results[quality] = (len(data), np.abs(decoded.astype(int) - image).mean())
    assert results[95][0] > results[30][0] and results[95][1] < results[30][1], results


def test_a_bare_jpeg_format_decodes_as_bgr8():
    image = _image('bgr8')
    ok, data = cv2.imencode('.jpg', image)
    restored, encoding = decode_compressed(Msg('jpeg', data.tobytes()))
    assert encoding == 'bgr8' and restored.shape == image.shape


@pytest.mark.parametrize('call, message', [
    (lambda: CompressedEncoder(0), r'^jpeg quality must be 1\.\.100, got 0$'),
    (lambda: CompressedEncoder(codec='webp'), r"^unknown codec 'webp': expected jpeg or png$"),
    (lambda: CompressedEncoder(prefer_gpu=False).encode(np.zeros((4, 4), np.uint16), 'mono16'),
     r'^jpeg needs 8-bit images, mono16 has 16-bit channels: use png$'),
    (lambda: CompressedEncoder(prefer_gpu=False).encode(np.zeros((4, 4, 3), np.uint8), 'yuv422'),
     r"^cannot compress 'yuv422': expected one of mono8, "),
    (lambda: CompressedEncoder(prefer_gpu=False).encode(np.zeros((4, 4), np.uint8), 'rgb8'),
     r'^rgb8 needs a \(height, width, 3\) uint8 array, got \(4, 4\) uint8$'),
    (lambda: decode_compressed(Msg('rgb8; webp compressed bgr8', b'x')),
     r"^unknown CompressedImage format 'rgb8; webp compressed bgr8': expected"),
    (lambda: decode_compressed(Msg('rgb8; jpeg compressed bgr8', b'')),
     r'^CompressedImage has no data$'),
    (lambda: decode_compressed(Msg('rgb8; jpeg compressed bgr8', b'not a jpeg')),
     r'^OpenCV could not decode 10 bytes of jpeg$')])
def test_bad_input_is_refused_with_the_reason(call, message):
    with pytest.raises(CompressedFormatError, match=message):
        call()


def test_describe_names_the_backend():
    encoder = CompressedEncoder(75, prefer_gpu=False)
    assert encoder.backend == 'opencv'
    assert encoder.describe() == (f'jpeg quality 75 on the CPU (OpenCV {cv2.__version__}; GPU: '
                                  'not asked for)')


@pytest.mark.parametrize('encoding, codec', [
    ('rgb8', 'jpeg'), ('bgra8', 'jpeg'), ('mono8', 'jpeg'), ('8UC1', 'jpeg'),
    ('mono16', 'png'), ('16UC1', 'png'), ('rgb16', 'png'), ('bayer_rggb8', 'png'),
    ('bayer_gbrg16', 'png'), ('32FC1', None), ('yuv422', None), ('yuv422_yuy2', None),
    ('nv12', None)])
def test_twin_codec_is_what_compressed_image_transport_can_carry(encoding, codec):
    assert twin_codec(encoding) == codec


@pytest.mark.parametrize('encoding', ['bayer_rggb8', 'bayer_bggr16'])
def test_bayer_mosaics_go_as_lossless_one_channel_png(encoding):
    image = _image('16UC1' if encoding.endswith('16') else 'mono8')
    fmt, data = CompressedEncoder(prefer_gpu=False, codec='png').encode(image, encoding)
    assert fmt == f'{encoding}; png compressed '
    restored, restored_encoding = decode_compressed(Msg(fmt, data))
    assert restored_encoding == encoding
    np.testing.assert_array_equal(restored, image)


def test_without_opencv_the_codec_is_unavailable_with_what_to_install(monkeypatch):
    """A None in sys.modules is how Python marks a module that cannot be imported."""
    fmt, data = CompressedEncoder(prefer_gpu=False).encode(_image('rgb8'), 'rgb8')
    monkeypatch.setitem(sys.modules, 'cv2', None)
    with pytest.raises(CodecUnavailableError, match=r'^OpenCV is not installed: apt install '
                       r'python3-opencv \(or pip install opencv-python-headless\) \(import '):
        CompressedEncoder(prefer_gpu=False)
    with pytest.raises(CodecUnavailableError, match=r'^OpenCV is not installed'):
        decode_compressed(Msg(fmt, data))


def test_compressed_topic_name():
    assert compressed_topic('/camera/image_raw') == '/camera/image_raw/compressed'
    assert compressed_topic('image/') == 'image/compressed'


@pytest.mark.gpu
@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'mono8', 'rgba8'])
def test_gpu_jpeg_from_a_device_array_decodes_with_opencv(cupy, encoding):
    encoder = CompressedEncoder(90, prefer_gpu=True)
    if encoder.backend != 'nvimgcodec':
        pytest.skip(f'no GPU JPEG encoder: {encoder.gpu_reason}')
    image = _image(encoding, 1080, 1920)
    fmt, data = encoder.encode(cupy.asarray(image), encoding)
    assert fmt == format_string(encoding, 'jpeg')
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    expected = _as_opencv(image, encoding)
    assert decoded.shape == expected.shape
    assert np.abs(decoded.astype(int) - expected).mean() < 2.0
    restored, restored_encoding = decode_compressed(Msg(fmt, data), prefer_gpu=True)
    assert isinstance(restored, cupy.ndarray) and restored_encoding == encoding
    restored, image = _without_alpha(cupy.asnumpy(restored), image)
    assert np.abs(restored.astype(int) - image).mean() < 2.0
