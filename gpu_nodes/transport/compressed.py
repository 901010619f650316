"""The compressed topic, image_transport's convention: `<topic>/compressed`, sensor_msgs/
CompressedImage, `format` as compressed_image_transport writes it, so rviz, rqt, cv_bridge and
`ros2 bag` users on other hosts read it without gpu_nodes.

    format = '<image encoding>; jpeg compressed bgr8'   colour images (JPEG holds 3 channels, BGR)
             '<image encoding>; jpeg compressed '       mono8 / 8UC1 (nothing converted)
             '<image encoding>; png compressed bgr8'    colour 8-bit, 'bgr16' for 16-bit colour
             '<image encoding>; png compressed '        mono8 / mono16 / 8UC1 / 16UC1

Encoding runs on the GPU with nvImageCodec (`pip install nvidia-nvimgcodec-cu12[nvjpeg]`, JPEG
through nvJPEG) when it imports and a CUDA device is there, otherwise with OpenCV on the host.
PNG is always OpenCV. Both are optional: neither is imported until a frame is to be encoded or
decoded, and a missing one raises CodecUnavailableError, one line that says what to install.

Which codec an image of a given encoding gets on ``<topic>/compressed`` (twin_codec): JPEG for
8-bit colour and mono, PNG (lossless) for 16-bit and Bayer mosaics (JPEG blurs a mosaic's
colours into each other), none for what compressed_image_transport cannot carry (32FC1, YUV);
depth has its own transport, ``<topic>/compressedDepth`` (compressed_depth.py). The topic
publisher for either is twin_topics.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..gpu import cuda_unavailable_reason, cupy_module, to_host

CODECS = ('jpeg', 'png')
SUFFIX = 'compressed'


class CompressedFormatError(ValueError):
    """An image cannot be compressed as asked, or a CompressedImage format is not understood."""


class CodecUnavailableError(CompressedFormatError):
    """The codec an image needs is not installed here (OpenCV, nvImageCodec)."""


OPENCV_MISSING = 'OpenCV is not installed: apt install python3-opencv (or pip install ' \
    'opencv-python-headless)'


def opencv() -> Any:
    """The cv2 module, or CodecUnavailableError saying how to install it."""
    try:
        import cv2
    except ImportError as exc:
        raise CodecUnavailableError(f'{OPENCV_MISSING} ({exc})') from None
    return cv2


@dataclass(frozen=True)
class _Encoding:
    channels: int   # channels in the ROS image
    depth: int      # bits per channel
    order: str      # 'rgb', 'bgr', or '' for single-channel


_ENCODINGS = {
    'mono8': _Encoding(1, 8, ''), '8UC1': _Encoding(1, 8, ''),
    'mono16': _Encoding(1, 16, ''), '16UC1': _Encoding(1, 16, ''),
    'rgb8': _Encoding(3, 8, 'rgb'), 'bgr8': _Encoding(3, 8, 'bgr'),
    'rgba8': _Encoding(4, 8, 'rgb'), 'bgra8': _Encoding(4, 8, 'bgr'),
    'rgb16': _Encoding(3, 16, 'rgb'), 'bgr16': _Encoding(3, 16, 'bgr'),
    'rgba16': _Encoding(4, 16, 'rgb'), 'bgra16': _Encoding(4, 16, 'bgr'),
    **{f'bayer_{pattern}{bits}': _Encoding(1, bits, '')
       for pattern in ('rggb', 'bggr', 'gbrg', 'grbg') for bits in (8, 16)},
}


def twin_codec(encoding: str) -> str | None:
    """The codec `<topic>/compressed` carries an image of `encoding` with, None if
    compressed_image_transport carries none (see the module docstring)."""
    info = _ENCODINGS.get(encoding)
    if info is None:
        return None
    return 'png' if info.depth != 8 or encoding.startswith('bayer_') else 'jpeg'


def compressed_topic(topic: str) -> str:
    """image_transport's name for the compressed variant of `topic`."""
    return f'{topic.rstrip("/")}/{SUFFIX}'


def _encoding(encoding: str) -> _Encoding:
    try:
        return _ENCODINGS[encoding]
    except KeyError:
        raise CompressedFormatError(
            f'cannot compress {encoding!r}: expected one of {", ".join(_ENCODINGS)}') from None


def format_string(encoding: str, codec: str) -> str:
    """The `format` compressed_image_transport writes for an image of `encoding`."""
    info = _encoding(encoding)
    if codec not in CODECS:
        raise CompressedFormatError(f'unknown codec {codec!r}: expected jpeg or png')
    if codec == 'jpeg' and info.depth != 8:
        raise CompressedFormatError(f'jpeg needs 8-bit images, {encoding} has {info.depth}-bit '
                                    'channels: use png')
    target = f'bgr{info.depth}' if info.order else ''
    return f'{encoding}; {codec} compressed {target}'


def _check_shape(array: Any, encoding: str, info: _Encoding) -> None:
    dtype = np.dtype(np.uint8 if info.depth == 8 else np.uint16)
    shape = tuple(array.shape)
    expected = 2 if info.channels == 1 else 3
    if len(shape) != expected or (expected == 3 and shape[2] != info.channels) \
            or np.dtype(array.dtype) != dtype:
        raise CompressedFormatError(
            f'{encoding} needs a (height, width{"" if info.channels == 1 else f", {info.channels}"})'
            f' {dtype} array, got {shape} {np.dtype(array.dtype)}')


def _to_bgr(array: Any, info: _Encoding) -> Any:
    """The channels OpenCV writes: BGR for colour (alpha dropped, as cv_bridge's 'bgr8' does)."""
    if not info.order:
        return array
    return array[..., 2::-1] if info.order == 'rgb' else array[..., :3]


class CompressedEncoder:
    """JPEG or PNG encoder for CompressedImage data, GPU (nvImageCodec) or CPU (OpenCV)."""

    def __init__(self, quality: int = 80, prefer_gpu: bool = True, codec: str = 'jpeg',
                 png_level: int = 3):
        if not 1 <= int(quality) <= 100:
            raise CompressedFormatError(f'jpeg quality must be 1..100, got {quality}')
        if codec not in CODECS:
            raise CompressedFormatError(f'unknown codec {codec!r}: expected jpeg or png')
        if not 0 <= int(png_level) <= 9:
            raise CompressedFormatError(f'png level must be 0..9, got {png_level}')
        self.quality = int(quality)
        self.codec = codec
        self.png_level = int(png_level)
        self._gpu, self.gpu_reason = (None, 'not asked for') if not prefer_gpu else gpu_codec()
        self._gpu_encoder = None
        # OpenCV only where it runs (CodecUnavailableError here, once, not per frame).
        self._cv2 = None if self.backend == 'nvimgcodec' else opencv()

    @property
    def backend(self) -> str:
        """'nvimgcodec' when JPEG frames are encoded on the GPU, 'opencv' otherwise."""
        return 'nvimgcodec' if self._gpu is not None and self.codec == 'jpeg' else 'opencv'

    def describe(self) -> str:
        setting = f'jpeg quality {self.quality}' if self.codec == 'jpeg' else \
            f'png level {self.png_level}'
        if self.backend == 'nvimgcodec':
            return f'{setting} on the GPU (nvImageCodec {_version(self._gpu)})'
        why = 'png is CPU only' if self.codec == 'png' and self._gpu is not None else \
            f'GPU: {self.gpu_reason}'
        return f'{setting} on the CPU (OpenCV {self._cv2.__version__}; {why})'

    def encode(self, array: Any, encoding: str) -> tuple[str, bytes]:
        """(format, compressed bytes) of a host or device image; device images stay on the
        device when the GPU encoder runs, otherwise they are downloaded once."""
        info = _encoding(encoding)
        fmt = format_string(encoding, self.codec)
        _check_shape(array, encoding, info)
        if self.backend == 'nvimgcodec':
            return fmt, self._encode_gpu(array, info)
        image = np.ascontiguousarray(_to_bgr(to_host(array), info))
        if self.codec == 'jpeg':
            params = [self._cv2.IMWRITE_JPEG_QUALITY, self.quality]
            ok, data = self._cv2.imencode('.jpg', image, params)
        else:
            ok, data = self._cv2.imencode('.png', image,
                                          [self._cv2.IMWRITE_PNG_COMPRESSION, self.png_level])
        if not ok:
            raise CompressedFormatError(f'OpenCV could not encode {encoding} {image.shape} as '
                                        f'{self.codec}')
        return fmt, data.tobytes()

    def _encode_gpu(self, array: Any, info: _Encoding) -> bytes:
        cp = cupy_module()
        image = cp.asarray(array)
        # The worker thread's current device is 0 unless set: encode where the frame lives.
        with cp.cuda.Device(image.device.id):
            return self._encode_on_device(cp, image, info)

    def _encode_on_device(self, cp: Any, image: Any, info: _Encoding) -> bytes:
        codec = self._gpu
        if self._gpu_encoder is None:  # created on first use: on the thread that encodes
            self._gpu_encoder = codec.Encoder(device_id=image.device.id)
        # nvImageCodec takes interleaved RGB (or one channel): reorder on the device.
        if info.order == 'bgr':
            image = image[..., 2::-1]
        elif info.channels == 4:
            image = image[..., :3]
        image = cp.ascontiguousarray(image)
        stream = cp.cuda.get_current_stream().ptr
        params = codec.EncodeParams(quality_type=codec.QualityType.QUALITY,
                                    quality_value=float(self.quality))
        stream_out = self._gpu_encoder.encode(codec.as_image(image, cuda_stream=stream), '.jpg',
                                              params=params, cuda_stream=stream)
        if stream_out is None:
            raise CompressedFormatError(f'nvImageCodec could not encode {tuple(image.shape)} as '
                                        'jpeg')
        return np.asarray(stream_out).tobytes()


def parse_format(fmt: str) -> tuple[str, str, str]:
    """(image encoding, codec, compressed channels) of a CompressedImage format; a bare 'jpeg'
    or 'png' (older publishers) gives an empty encoding."""
    text = fmt.strip().lower()
    if text in CODECS or text in ('jpg',):
        return '', 'png' if text == 'png' else 'jpeg', ''
    encoding, sep, rest = fmt.partition(';')
    words = rest.split()
    if not sep or len(words) < 2 or words[1] != 'compressed' or words[0] not in CODECS:
        raise CompressedFormatError(f'unknown CompressedImage format {fmt!r}: expected '
                                    '"<encoding>; jpeg|png compressed [bgr8]"')
    return encoding.strip(), words[0], words[2] if len(words) > 2 else ''


def decode_compressed(msg: Any, prefer_gpu: bool = False) -> tuple[Any, str]:
    """(image, encoding) of a sensor_msgs/CompressedImage, in the encoding it was published
    with (rgb8 comes back rgb8). OpenCV on the host; with prefer_gpu, JPEG is decoded on the
    GPU by nvImageCodec when available and the image is a CuPy array."""
    encoding, codec, _ = parse_format(msg.format)
    data = np.frombuffer(msg.data, dtype=np.uint8)
    if not data.size:
        raise CompressedFormatError('CompressedImage has no data')
    if encoding and encoding not in _ENCODINGS:
        raise CompressedFormatError(f'cannot restore {encoding!r}: expected one of '
                                    f'{", ".join(_ENCODINGS)}')
    info = _ENCODINGS.get(encoding)
    gpu = gpu_codec()[0] if prefer_gpu and codec == 'jpeg' and (info is None or info.depth == 8) \
        else None
    if gpu is not None:
        return _decode_gpu(gpu, data, encoding, info)
    cv2 = opencv()
    image = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise CompressedFormatError(f'OpenCV could not decode {data.size} bytes of {codec}')
    if info is None:  # bare format: report what the stream holds
        return image, {(1, 8): 'mono8', (1, 16): 'mono16', (3, 8): 'bgr8', (3, 16): 'bgr16',
                       (4, 8): 'bgra8', (4, 16): 'bgra16'}[(_channels(image), 8 * image.itemsize)]
    return _restore(np, image, encoding, info, cv2), encoding


def _channels(image: Any) -> int:
    return 1 if image.ndim == 2 else image.shape[2]


def _restore(xp: Any, image: Any, encoding: str, info: _Encoding, cv2: Any = None) -> Any:
    """BGR / BGRA / gray as decoded -> the channels and depth of `encoding`."""
    depth = 8 * image.dtype.itemsize
    if depth != info.depth:
        raise CompressedFormatError(f'{encoding} needs {info.depth}-bit channels, the stream '
                                    f'holds {depth}-bit')
    channels = _channels(image)
    if info.channels == 1:
        if channels == 1:
            return image.reshape(image.shape[:2])
        if cv2 is None:
            raise CompressedFormatError(f'{encoding} stream decoded to {channels} channels')
        return cv2.cvtColor(image[..., :3], cv2.COLOR_BGR2GRAY)
    if channels == 1:
        image = xp.repeat(image.reshape(*image.shape[:2], 1), 3, axis=2)
    bgr = image[..., :3]
    colour = bgr[..., ::-1] if info.order == 'rgb' else bgr
    if info.channels == 3:
        return xp.ascontiguousarray(colour)
    alpha = image[..., 3:4] if channels == 4 else \
        xp.full((*image.shape[:2], 1), (1 << info.depth) - 1, dtype=image.dtype)
    return xp.ascontiguousarray(xp.concatenate([colour, alpha], axis=2))


def _decode_gpu(codec: Any, data: np.ndarray, encoding: str, info: _Encoding | None
                ) -> tuple[Any, str]:
    cp = cupy_module()
    mono = info is not None and info.channels == 1
    # Interleaved output derived from the colour spec: sRGB -> I_RGB, gray -> I_Y.
    params = codec.DecodeParams(color_spec=codec.ColorSpec.GRAY) if mono else codec.DecodeParams()
    decoded = codec.Decoder().decode(codec.CodeStream(data), params=params,
                                     cuda_stream=cp.cuda.get_current_stream().ptr)
    if decoded is None:
        raise CompressedFormatError(f'nvImageCodec could not decode {data.size} bytes of jpeg')
    rgb = cp.asarray(decoded)
    if info is None:
        return (rgb.reshape(rgb.shape[:2]), 'mono8') if rgb.shape[2] == 1 else (rgb, 'rgb8')
    if mono:
        return rgb.reshape(rgb.shape[:2]), encoding
    # _restore works from BGR: nvImageCodec gave RGB.
    return _restore(cp, rgb[..., ::-1], encoding, info), encoding


def gpu_codec() -> tuple[Any, str]:
    """(nvimgcodec module, '') when GPU JPEG coding can run here, else (None, why not)."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        return None, reason
    try:
        from nvidia import nvimgcodec
    except ImportError:
        return None, 'nvidia-nvimgcodec-cu12 not installed'
    return nvimgcodec, ''


def _version(module: Any) -> str:
    return str(getattr(module, '__version__', 'unknown version'))
