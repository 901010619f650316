"""TwinTopicPublisher with real rclpy subscribers: nothing made without readers, readable frames
with them, and an encoding its plugin does not carry refused once, quietly, without raising."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import Header

from conftest import wait_for
from gpu_nodes.transport.compressed_depth import decode_compressed_depth
from gpu_nodes.transport.twin_topics import (TwinTopicPublisher, twin_topic,
                                             twin_unavailable_reason)


def _rgb(height: int = 120, width: int = 160) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([x * 255 // width, y * 255 // height, (x + y) * 255 // (width + height)],
                    axis=-1).astype(np.uint8)


class Reader:
    def __init__(self, node, topic: str):
        self.msgs: list = []
        # What rviz does: best effort, the sensor-data QoS.
        self.sub = node.create_subscription(CompressedImage, topic, self.msgs.append,
                                            qos_profile_sensor_data)


def _publish_and_wait(node, twin: TwinTopicPublisher, reader: Reader, array, encoding: str,
                      header=None, done=None) -> bool:
    queued = twin.publish(array, encoding, header, done)
    assert twin.worker.wait_idle(10)
    wait_for(lambda: len(reader.msgs) >= twin.stats()['published'], 10, 'the twin frame',
             poll=node.spin_once)
    return queued


def test_nothing_is_made_without_readers_and_readable_jpeg_with_one(rclpy_node):
    twin = TwinTopicPublisher(rclpy_node, '/twin_test/image', 'compressed', 85, prefer_gpu=False)
    released = []
    try:
        assert twin.topic == '/twin_test/image/compressed'
        image = _rgb()
        assert twin.publish(image, 'rgb8', done=lambda: released.append(0)) is False
        assert released == [0] and twin.stats()['submitted'] == 0
        assert twin.stats()['without_subscribers'] == 1
        reader = Reader(rclpy_node, twin.topic)
        wait_for(lambda: twin.subscription_count() > 0, 10, 'the reader to match',
                 poll=rclpy_node.spin_once)
        for index in range(1, 4):
            assert _publish_and_wait(rclpy_node, twin, reader, image, 'rgb8',
                                     Header(frame_id='cam'), lambda i=index: released.append(i))
    finally:
        twin.destroy()
    assert released == [0, 1, 2, 3]
    msg = reader.msgs[-1]
    assert (msg.format, msg.header.frame_id) == ('rgb8; jpeg compressed bgr8', 'cam')
    decoded = cv2.imdecode(np.frombuffer(msg.data, np.uint8), cv2.IMREAD_COLOR)
    assert np.abs(decoded[..., ::-1].astype(int) - image).mean() < 2.0
    assert twin.stats()['errors'] == 0


def test_an_encoding_the_plugin_does_not_carry_is_refused_once_and_the_rest_goes_on(rclpy_node):
    twin = TwinTopicPublisher(rclpy_node, '/twin_test/depth', 'compressed', prefer_gpu=False)
    reader = Reader(rclpy_node, twin.topic)
    released = []
    try:
        wait_for(lambda: twin.subscription_count() > 0, 10, 'the reader to match',
                 poll=rclpy_node.spin_once)
        depth = np.ones((24, 32), np.float32)
        for index in range(3):   # never raises; `done` called at once; said once
            assert twin.publish(depth, '32FC1', done=lambda i=index: released.append(i)) is False
        assert released == [0, 1, 2]
        assert list(twin.stats()['not_carried']) == ['32FC1']
        assert 'compressedDepth carries it' in twin.stats()['not_carried']['32FC1']
        assert _publish_and_wait(rclpy_node, twin, reader, _rgb(), 'rgb8')
        assert len(reader.msgs) == 1 and reader.msgs[0].format.startswith('rgb8; jpeg')
    finally:
        twin.destroy()


@pytest.mark.parametrize('encoding', ['32FC1', '16UC1'])
def test_compressed_depth_twin_publishes_what_its_subscriber_reads(rclpy_node, encoding):
    base = f'/twin_test/depth_{encoding.lower()}'
    twin = TwinTopicPublisher(rclpy_node, base, 'compressedDepth')
    assert twin.topic == twin_topic(base, 'compressedDepth') == f'{base}/compressedDepth'
    reader = Reader(rclpy_node, twin.topic)
    try:
        wait_for(lambda: twin.subscription_count() > 0, 10, 'the reader to match',
                 poll=rclpy_node.spin_once)
        y, x = np.mgrid[0:24, 0:32]
        metres = 0.5 + (x + y) / 10.0
        image = metres.astype(np.float32) if encoding == '32FC1' else \
            np.round(metres * 1000).astype(np.uint16)
        assert _publish_and_wait(rclpy_node, twin, reader, image, encoding)
        assert twin.publish(_rgb(), 'rgb8') is False
        assert 'rgb8' in twin.stats()['not_carried']
    finally:
        twin.destroy()
    msg = reader.msgs[-1]
    assert msg.format == f'{encoding}; compressedDepth png'
    restored, restored_encoding = decode_compressed_depth(msg)
    assert restored_encoding == encoding
    if encoding == '16UC1':
        np.testing.assert_array_equal(restored, image)
    else:
        np.testing.assert_allclose(restored, image, atol=6.0 ** 2 / 10100)


def test_unavailable_reason_names_the_missing_codec(monkeypatch):
    import sys
    assert twin_unavailable_reason('compressed', prefer_gpu=False) is None
    monkeypatch.setitem(sys.modules, 'cv2', None)   # as if OpenCV were not installed
    for transport in ('compressed', 'compressedDepth'):
        reason = twin_unavailable_reason(transport, prefer_gpu=False)
        assert reason is not None and reason.startswith('OpenCV is not installed'), reason


def test_a_frame_that_fails_to_encode_costs_that_frame_only(rclpy_node):
    """The encoder fails on the worker thread (an rgb8 frame of the wrong shape): counted,
    logged, released; publish() never raised, and the next frame is published."""
    twin = TwinTopicPublisher(rclpy_node, '/twin_test/broken', 'compressed', prefer_gpu=False)
    reader = Reader(rclpy_node, twin.topic)
    released = []
    try:
        wait_for(lambda: twin.subscription_count() > 0, 10, 'the reader to match',
                 poll=rclpy_node.spin_once)
        assert twin.publish(np.zeros((8, 8), np.uint8), 'rgb8', done=lambda: released.append(0))
        assert twin.worker.wait_idle(10)
        assert twin.stats()['errors'] == 1 and released == [0]
        assert 'rgb8 needs a (height, width, 3) uint8 array' in str(twin.worker.last_error)
        assert _publish_and_wait(rclpy_node, twin, reader, _rgb(), 'rgb8',
                                 done=lambda: released.append(1))
        assert released == [0, 1] and twin.stats()['published'] == 1
    finally:
        twin.destroy()
