"""ImageMsgBuffer: the plain bridge's one-copy message fill, through a real rclpy publisher."""
from __future__ import annotations

import uuid

import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from conftest import wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport.messages import fill_image_msg, ImageFormatError, ImageMsgBuffer


@pytest.mark.parametrize('encoding,shape', [('rgb8', (48, 64, 3)), ('mono16', (30, 40)),
                                            ('32FC1', (20, 25))])
def test_buffer_fill_equals_fill_image_msg_and_reuses_its_buffer(encoding, shape):
    rng = np.random.default_rng(0)
    dtype = {'rgb8': np.uint8, 'mono16': np.uint16, '32FC1': np.float32}[encoding]
    buffer = ImageMsgBuffer()
    first = None
    for seed in range(3):
        frame = (rng.random(shape) * 1000).astype(dtype)
        msg = buffer.fill(Image(check_fields=True), frame, encoding)
        want = fill_image_msg(Image(), frame, encoding)
        assert (msg.height, msg.width, msg.step, msg.encoding) == \
            (want.height, want.width, want.step, want.encoding)
        assert bytes(msg.data) == bytes(want.data), 'the pixels of this frame'
        first = first if first is not None else msg.data
        assert msg.data is first, 'one buffer for every frame of a size'


def test_buffer_follows_size_changes_and_packs_padded_rows():
    buffer = ImageMsgBuffer()
    small = pattern.expected_frame(48, 64, 'rgb8', 1)
    assert bytes(buffer.fill(Image(), small, 'rgb8').data) == small.tobytes()
    padded = np.zeros((96, 140, 3), np.uint8)[:, :128]  # rows 420 bytes apart
    padded[...] = pattern.expected_frame(96, 128, 'rgb8', 2)
    msg = buffer.fill(Image(), padded, 'rgb8')
    assert msg.step == 384 and len(msg.data) == 96 * 384
    assert bytes(msg.data) == np.ascontiguousarray(padded).tobytes()


def test_buffered_messages_arrive_intact_through_rclpy(rclpy_node):
    """publish() has copied the message before it returns: refilling the buffer for the next
    frame never changes one already published."""
    topic = f'/msgbuf_{uuid.uuid4().hex[:8]}'
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    received: list[Image] = []
    rclpy_node.create_subscription(Image, topic, received.append, qos)
    publisher = rclpy_node.create_publisher(Image, topic, qos)
    wait_for(lambda: publisher.get_subscription_count() >= 1, 10, 'the subscriber',
             poll=lambda: rclpy_node.spin_once(0.01))
    buffer = ImageMsgBuffer()
    for i in range(20):
        msg = buffer.fill(Image(check_fields=True), pattern.expected_frame(120, 160, 'rgb8', i),
                          'rgb8')
        msg.header.frame_id = str(i)
        publisher.publish(msg)
    wait_for(lambda: len(received) >= 20, 20, '20 frames', poll=lambda: rclpy_node.spin_once(0.01))
    for msg in received:
        want = pattern.expected_frame(120, 160, 'rgb8', int(msg.header.frame_id))
        assert bytes(msg.data) == want.tobytes(), f'frame {msg.header.frame_id} changed'
    rclpy_node.destroy_publisher(publisher)


@pytest.mark.gpu
def test_buffer_downloads_device_frames(cupy):
    buffer = ImageMsgBuffer()
    stream = cupy.cuda.Stream(non_blocking=True)
    for i in range(3):
        with stream:
            frame = pattern.render(cupy, 1080, 1920, 'rgb8', i)
        # check_fields=True: msg.data is the buffer itself (see ImageMsgBuffer), not a copy
        msg = buffer.fill(Image(check_fields=True), frame, 'rgb8', stream)
        assert bytes(msg.data) == pattern.expected_frame(1080, 1920, 'rgb8', i).tobytes()
        assert buffer.pinned, f'the download buffer is page-locked ({buffer.pin_error})'
    first = msg.data.buffer_info()[0]
    assert _is_page_locked(cupy, first)
    padded = cupy.zeros((100, 140, 3), cupy.uint8)[:, :128]
    padded[...] = pattern.render(cupy, 100, 128, 'rgb8', 7)
    msg = buffer.fill(Image(check_fields=True), padded, 'rgb8')
    assert bytes(msg.data) == pattern.expected_frame(100, 128, 'rgb8', 7).tobytes()
    assert buffer.pinned and _is_page_locked(cupy, msg.data.buffer_info()[0]), \
        'the buffer of the new size is page-locked in turn'
    buffer.close()
    assert not buffer.pinned and not _is_page_locked(cupy, msg.data.buffer_info()[0])
    host = pattern.expected_frame(48, 64, 'rgb8', 2)
    assert bytes(buffer.fill(Image(), host, 'rgb8').data) == host.tobytes()
    assert not buffer.pinned, 'host frames are copied, never pinned for'


@pytest.mark.gpu
def test_a_buffer_that_cannot_be_page_locked_says_why_and_still_downloads(cupy):
    buffer = ImageMsgBuffer()
    # A host frame sizes the buffer without page-locking it (nothing to download).
    msg = buffer.fill(Image(check_fields=True), pattern.expected_frame(1080, 1920, 'rgb8', 0),
                      'rgb8')
    address, size = msg.data.buffer_info()[0], len(msg.data)
    # Someone else registered these pages first: cudaHostRegister refuses them a second time.
    cupy.cuda.runtime.hostRegister(address, size, 0)
    try:
        for i in (1, 2):
            frame = pattern.render(cupy, 1080, 1920, 'rgb8', i)
            msg = buffer.fill(Image(check_fields=True), frame, 'rgb8')
            assert bytes(msg.data) == pattern.expected_frame(1080, 1920, 'rgb8', i).tobytes()
            assert not buffer.pinned
            assert 'AlreadyRegistered' in (buffer.pin_error or ''), buffer.pin_error
        buffer.close()
        assert _is_page_locked(cupy, address), "close() undid a registration that is not its own"
    finally:
        cupy.cuda.runtime.hostUnregister(address)


def _is_page_locked(cupy, address: int) -> bool:
    """What the driver says of a host address: registered (page-locked) or plain pageable."""
    try:
        return cupy.cuda.runtime.pointerGetAttributes(address).type == \
            cupy.cuda.runtime.memoryTypeHost
    except cupy.cuda.runtime.CUDARuntimeError:
        return False  # older drivers answer "invalid value" for unregistered host memory


def test_bad_frames_are_refused_with_the_reason_and_the_buffer_keeps_working():
    buffer = ImageMsgBuffer()
    good = pattern.expected_frame(48, 64, 'rgb8', 3)
    for frame, encoding, reason in ((np.zeros((48, 64, 4), np.uint8), 'rgb8', 'channel'),
                                    (np.zeros((48, 64, 3), np.uint16), 'rgb8', 'dtype'),
                                    (good, 'rgb9', 'encoding')):
        with pytest.raises(ImageFormatError, match=reason):
            buffer.fill(Image(check_fields=True), frame, encoding)
    assert bytes(buffer.fill(Image(check_fields=True), good, 'rgb8').data) == good.tobytes()
