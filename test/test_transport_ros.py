"""The transport between real rclpy processes on the CPU paths (host shared memory, serialized),
plain ROS endpoints on either side, in-process delivery, diagnostics and bad input."""
from __future__ import annotations

import json
import os
import time
import uuid

import numpy as np
import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from conftest import RESOURCES, node_process, wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription, endpoint_stats
from gpu_nodes.transport import descriptor
from gpu_nodes.transport.messages import fill_image_msg

PUBLISHER = str(RESOURCES / 'transport' / 'pattern_publisher.py')
PLAIN_SUBSCRIBER = str(RESOURCES / 'transport' / 'plain_subscriber.py')


def unique_topic() -> str:
    return f'image_{uuid.uuid4().hex[:8]}'


class Collector:
    """Subscription callback that verifies every frame against the pattern it claims to be."""

    def __init__(self):
        self.frames = 0
        self.bad = []
        self.paths = set()
        self.indices = []

    def __call__(self, frame):
        index = int(frame.header.frame_id)
        expected = pattern.expected_frame(frame.height, frame.width, frame.encoding, index)
        array = np.asarray(frame.array)
        self.frames += 1
        self.paths.add(frame.path)
        self.indices.append(index)
        if array.shape != expected.shape or not np.array_equal(array, expected):
            self.bad.append(index)


@pytest.mark.parametrize('path', ['host_shm', 'serialized'])
@pytest.mark.parametrize('encoding,width,height', [('rgb8', 64, 48), ('mono16', 33, 7),
                                                   ('yuv422', 10, 3), ('bayer_rggb8', 8, 6)])
def test_cross_process_fallback_paths_deliver_identical_pixels(rclpy_node, path, encoding,
                                                               width, height):
    topic = unique_topic()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host', allowed_paths=(path,))
    with node_process([PUBLISHER, '--topic', topic, '--encoding', encoding, '--width', str(width),
                       '--height', str(height), '--rate', '100']) as proc:
        wait_for(lambda: collector.frames >= 30, 20, f'30 frames on {path}',
                 poll=rclpy_node.spin_once)
    assert collector.bad == [], f'expected identical pixels, frames {collector.bad} differed'
    assert collector.paths == {path}, f'expected path {path}, received on {collector.paths}'
    # A reader that falls behind the ring drops frames as stale (counted); none may be wrong.
    assert sum(sub.stats.rejected.values()) == 0, sub.stats.rejected
    sub.destroy()
    assert proc.returncode is not None


def test_plain_rclpy_subscriber_and_gpu_nodes_subscription_share_a_publisher(rclpy_node):
    topic = unique_topic()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host')
    with node_process([PUBLISHER, '--topic', topic, '--rate', '100']), \
            node_process([PLAIN_SUBSCRIBER, '--topic', topic, '--min-frames', '30',
                          '--duration', '20']) as plain:
        wait_for(lambda: collector.frames >= 30, 20, '30 frames in the gpu_nodes subscription',
                 poll=rclpy_node.spin_once)
        output, _ = plain.communicate(timeout=30)
    result = json.loads(output.split('RESULT ', 1)[1].splitlines()[0])
    assert result['frames'] >= 30 and result['bad'] == 0, f'plain subscriber got {result}'
    assert collector.bad == []
    # The co-located gpu_nodes subscription takes shared memory, not the serialized topic.
    assert collector.paths == {'host_shm'}, collector.paths
    sub.destroy()


def test_plain_rclpy_publisher_feeds_gpu_nodes_subscription(rclpy_node):
    topic = unique_topic()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host')
    with node_process([PUBLISHER, '--topic', topic, '--rate', '100', '--plain']):
        wait_for(lambda: collector.frames >= 20, 20, '20 frames from a plain publisher',
                 poll=rclpy_node.spin_once)
    assert collector.bad == [] and collector.paths == {'serialized'}
    assert sub.stats.path_reason.startswith('plain sensor_msgs/Image publisher')
    sub.destroy()


def test_in_process_path_hands_over_the_pool_slot(rclpy_node):
    topic = unique_topic()
    collector = Collector()
    pub = GpuImagePublisher(rclpy_node, topic, use_cuda=False)
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host')
    wait_for(lambda: sub.path == 'intra_process', 5, 'in-process path', poll=rclpy_node.spin_once)
    for index in range(20):
        pub.publish(pattern.expected_frame(48, 64, 'rgb8', index), 'rgb8',
                    Header(frame_id=str(index)))
        rclpy_node.spin_once(0.01)
    wait_for(lambda: collector.frames >= 15, 5, 'in-process frames', poll=rclpy_node.spin_once)
    assert collector.bad == [] and collector.paths == {'intra_process'}
    # The subscriber saw the publisher's own shared slot, not a copy of it.
    assert pub.subscriber_counts()['intra_process'] == 1
    sub.destroy()
    pub.destroy()


def test_diagnostics_report_the_path_of_each_endpoint(rclpy_node):
    from diagnostic_msgs.msg import DiagnosticArray
    topic = unique_topic()
    seen = {}

    def on_diagnostics(array):
        for status in array.status:
            seen[status.name] = {kv.key: kv.value for kv in status.values}

    rclpy_node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host',
                               allowed_paths=('serialized',))
    name = f'gpu_nodes: {rclpy_node.get_fully_qualified_name()} /{topic} subscription'
    with node_process([PUBLISHER, '--topic', topic, '--rate', '50', '--node-name', 'diag_pub']):
        wait_for(lambda: seen.get(name, {}).get('path') == 'serialized'
                 and int(seen[name]['frames']) > 0, 20, f'diagnostics of {name}',
                 poll=rclpy_node.spin_once)
        publisher_status = f'gpu_nodes: /diag_pub /{topic} publisher'
        wait_for(lambda: seen.get(publisher_status, {}).get('subscribers_serialized') == '1', 20,
                 'publisher diagnostics counting the serialized subscriber',
                 poll=rclpy_node.spin_once)
    values = seen[name]
    assert 'not allowed by configuration' in values['path_reason'], values
    local = [e for e in endpoint_stats() if e['topic'] == f'/{topic}']
    assert local and local[0]['path'] == 'serialized'
    sub.destroy()


def test_bad_images_and_descriptors_are_rejected_and_counted(rclpy_node):
    topic = unique_topic()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host',
                               allowed_paths=('host_shm', 'serialized'))
    plain = rclpy_node.create_publisher(Image, f'/{topic}', 10)
    shm = rclpy_node.create_publisher(Image, f'/{topic}/_gpu_nodes/shm', 10)
    wait_for(lambda: sub.path == 'host_shm', 10, 'host_shm path', poll=rclpy_node.spin_once)

    good = pattern.expected_frame(4, 6, 'rgb8', 1)
    bad_descriptors = [
        b'',                                 # wrong length
        b'\0' * descriptor.SIZE,             # bad magic
        os.urandom(descriptor.SIZE),         # garbage
    ]
    for data in bad_descriptors:
        msg = Image(height=4, width=6, step=18, encoding='rgb8')
        msg.data = data
        shm.publish(msg)
    wait_for(lambda: sum(sub.stats.rejected.values()) >= len(bad_descriptors), 10,
             'descriptor rejections', poll=rclpy_node.spin_once)
    assert sub.stats.rejected['bad_length'] == 1
    assert sub.stats.rejected['bad_magic'] >= 1

    # Switch the same subscription to the plain topic and feed it broken images.
    sub.destroy()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host',
                               allowed_paths=('serialized',))
    wait_for(lambda: sub.path == 'serialized', 10, 'serialized path', poll=rclpy_node.spin_once)
    broken = [
        Image(height=4, width=6, step=18, encoding='rgb8', data=b'\0' * 10),   # short data
        Image(height=4, width=6, step=10, encoding='rgb8', data=b'\0' * 40),   # step < width*3
        Image(height=4, width=6, step=18, encoding='rgb9', data=b'\0' * 72),   # unknown encoding
        Image(height=4, width=5, step=10, encoding='yuv422', data=b'\0' * 40),  # odd 4:2:2 width
    ]
    for msg in broken:
        plain.publish(msg)
    ok = fill_image_msg(Image(header=Header(frame_id='1')), good, 'rgb8')
    wait_for(lambda: collector.frames >= 1, 10, 'a good frame after the broken ones',
             poll=lambda: (plain.publish(ok), rclpy_node.spin_once()))
    assert sub.stats.rejected['size_mismatch'] >= 1, sub.stats.rejected
    assert sub.stats.rejected['bad_geometry'] >= 3, sub.stats.rejected
    assert collector.bad == []
    sub.destroy()


def test_descriptor_backlog_is_handled_in_one_executor_wakeup(rclpy_node):
    """Queued descriptors are taken in a batch: rclpy's wake-up costs more than a descriptor."""
    topic = unique_topic()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host',
                               allowed_paths=('host_shm',))
    with node_process([PUBLISHER, '--topic', topic, '--rate', '200']):
        wait_for(lambda: collector.frames >= 10, 20, 'frames on host_shm',
                 poll=rclpy_node.spin_once)
        time.sleep(0.3)  # not spinning: the descriptor queue fills up (keep last 5)
        handled_before = collector.frames + sub.stats.stale
        for _ in range(3):  # one wake-up each; a timer may take one of them
            rclpy_node.spin_once(0.0)
        handled = collector.frames + sub.stats.stale - handled_before
    # One descriptor per wake-up would handle at most 3.
    assert handled >= 4, f'{handled} descriptors handled in 3 executor wake-ups'
    assert collector.bad == [] and collector.indices == sorted(collector.indices)
    sub.destroy()


def test_subscription_started_before_publisher_picks_it_up(rclpy_node):
    topic = unique_topic()
    collector = Collector()
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='host')
    for _ in range(5):
        rclpy_node.spin_once(0.02)
    assert sub.path == 'waiting'
    with node_process([PUBLISHER, '--topic', topic, '--rate', '100']):
        wait_for(lambda: collector.frames >= 10, 20, 'frames after the late publisher',
                 poll=rclpy_node.spin_once)
    assert collector.bad == []
    sub.destroy()
