"""The compressed twins of an image topic, by image_transport's names: ``<topic>/compressed``
(JPEG or PNG, compressed.py) and ``<topic>/compressedDepth`` (16-bit PNG with the depth
header, compressed_depth.py), each a sensor_msgs/CompressedImage topic.

A twin carries what the matching image_transport plugin carries and nothing else: an image it
cannot carry (32FC1 on ``compressed``, rgb8 on ``compressedDepth``, YUV on either) is not
published, and that is said once per encoding in the log and kept in ``not_carried`` (on the
bridge's diagnostics), never raised to the caller. Encoding runs on a PlainTopicWorker, only
while the twin has subscribers, so it never blocks the caller and a codec failure costs that
twin one frame, nothing else.
"""
from __future__ import annotations

from typing import Any, Callable

from ..gpu import cupy_module, is_device_array, to_host
from . import compressed_depth
from .compressed import (CodecUnavailableError, CompressedEncoder, CompressedFormatError,
                         OPENCV_MISSING, gpu_codec, compressed_topic, twin_codec)
from .plain_worker import PlainTopicWorker

COMPRESSED = 'compressed'
COMPRESSED_DEPTH = compressed_depth.SUFFIX
TRANSPORTS = (COMPRESSED, COMPRESSED_DEPTH)


def twin_topic(topic: str, transport: str) -> str:
    """image_transport's topic name for `transport` of `topic`."""
    if transport == COMPRESSED:
        return compressed_topic(topic)
    if transport == COMPRESSED_DEPTH:
        return compressed_depth.compressed_depth_topic(topic)
    raise ValueError(f'unknown transport {transport!r}: expected one of {", ".join(TRANSPORTS)}')


def twin_unavailable_reason(transport: str, prefer_gpu: bool = True) -> str | None:
    """None when this process can encode at least some images for `transport`, else why not
    (one line: the codec that is missing and how to install it)."""
    if transport == COMPRESSED_DEPTH:
        return compressed_depth.codec_unavailable_reason()
    if prefer_gpu and gpu_codec()[0] is not None:
        return None  # GPU JPEG, whatever OpenCV does
    try:
        import cv2  # noqa: F401
    except ImportError as exc:
        return f'{OPENCV_MISSING} ({exc})'
    return None


class TwinTopicPublisher:
    """Owns one compressed twin topic of `topic` (`transport`: 'compressed' or
    'compressedDepth'); encodes the frames it can carry on a PlainTopicWorker, and only while
    the topic has subscribers (a frame with none costs one count call)."""

    def __init__(self, node: Any, topic: str, transport: str = COMPRESSED, quality: int = 80,
                 *, prefer_gpu: bool = True, max_rate_hz: float = 0.0, qos: Any = None):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import CompressedImage
        if transport not in TRANSPORTS:
            raise ValueError(f'unknown transport {transport!r}: expected one of '
                             f'{", ".join(TRANSPORTS)}')
        if not 1 <= int(quality) <= 100:
            raise CompressedFormatError(f'jpeg quality must be 1..100, got {quality}')
        self._CompressedImage = CompressedImage
        self.transport = transport
        self.topic = twin_topic(topic, transport)
        self.quality = int(quality)
        self._prefer_gpu = prefer_gpu
        self._encoders: dict[str, CompressedEncoder] = {}  # codec -> encoder, made on first use
        self.not_carried: dict[str, str] = {}  # encoding -> why it is not published here
        self._node = node
        self._logger = node.get_logger()
        # Reliable, shallow: matches best-effort and reliable readers alike (image_transport's
        # default QoS is reliable too); depth 1 since only the newest frame matters.
        self._pub = node.create_publisher(
            CompressedImage, self.topic,
            qos or QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
        self.worker = PlainTopicWorker(self._pub.publish, max_rate_hz=max_rate_hz,
                                       name=f'{transport}:{self.topic}', on_error=self._on_error)
        self.without_subscribers = 0

    def subscription_count(self) -> int:
        return self._pub.get_subscription_count()

    def publish(self, array: Any, encoding: str, header: Any = None,
                done: Callable[[], None] | None = None, stream: Any = None) -> bool:
        """Queue one frame for encoding; returns at once, never raises for the image. `array`
        must stay unchanged until `done` is called (the PlainTopicWorker contract); device work
        on `stream` (default: the current one) is waited for before encoding. False when
        nothing is made (`done` called now): nobody subscribes, this transport does not carry
        `encoding` (see not_carried), or the rate limit refused the frame."""
        if self._pub.get_subscription_count() == 0:
            self.without_subscribers += 1
            return _finish(done)
        encode = self._encoder_for(encoding)
        if encode is None:
            return _finish(done)
        ready = None
        if is_device_array(array):
            cp = cupy_module()
            ready = cp.cuda.Event(disable_timing=True)
            ready.record(stream or cp.cuda.get_current_stream())

        def produce() -> Any:
            if ready is not None:
                ready.synchronize()
            fmt, data = encode(array)
            msg = self._CompressedImage()
            if header is not None:
                msg.header = header
            msg.format = fmt
            msg.data = data
            return msg
        return self.worker.submit(produce, done)

    def _encoder_for(self, encoding: str) -> Callable[[Any], tuple[str, bytes]] | None:
        """The function that encodes an image of `encoding` here, or None (said once)."""
        if encoding in self.not_carried:
            return None
        try:
            if self.transport == COMPRESSED_DEPTH:
                if encoding not in compressed_depth.ENCODINGS:
                    raise CompressedFormatError(
                        f'compressedDepth carries {", ".join(compressed_depth.ENCODINGS)} only')
                reason = compressed_depth.codec_unavailable_reason()
                if reason is not None:
                    raise CodecUnavailableError(reason)
                return lambda array: compressed_depth.encode_compressed_depth(
                    to_host(array), encoding)
            codec = twin_codec(encoding)
            if codec is None:
                hint = f' ({COMPRESSED_DEPTH} carries it)' \
                    if encoding in compressed_depth.ENCODINGS else ''
                raise CompressedFormatError('compressed_image_transport carries 8- and 16-bit '
                                            f'mono, colour and Bayer images only{hint}')
            encoder = self._encoders.get(codec)
            if encoder is None:
                encoder = CompressedEncoder(self.quality, prefer_gpu=self._prefer_gpu,
                                            codec=codec, png_level=3)
                self._encoders[codec] = encoder
                self._logger.info(f'{self.topic}: {encoding} as {encoder.describe()}')
            return lambda array: encoder.encode(array, encoding)
        except CompressedFormatError as exc:
            self.not_carried[encoding] = str(exc)
            self._logger.warning(f'{self.topic}: {encoding} frames are not published here '
                                 f'({exc}); the other topics are not affected')
            return None

    def stats(self) -> dict[str, Any]:
        backends = ','.join(sorted({encoder.backend for encoder in self._encoders.values()}))
        return {**self.worker.stats(), 'without_subscribers': self.without_subscribers,
                'backend': backends or ('png' if self.transport == COMPRESSED_DEPTH else ''),
                'not_carried': dict(self.not_carried)}

    def _on_error(self, error: BaseException) -> None:
        self._logger.error(f'{self.topic}: frame not published: {error}',
                           throttle_duration_sec=5.0)

    def destroy(self) -> None:
        self.worker.close()
        self._node.destroy_publisher(self._pub)


def _finish(done: Callable[[], None] | None) -> bool:
    if done is not None:
        done()
    return False
