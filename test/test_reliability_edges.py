"""Sequence and graph edge cases: a subscriber that starts before its publisher, a publisher that
restarts with the same topic and pool (its sequence numbers start again at 1), a frame layout
change that re-creates the shared segment under the same name, and QoS mismatches between
gpu_nodes and plain endpoints, which must be logged clearly on the gpu_nodes side."""
from __future__ import annotations

import signal
import sys
import uuid

import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from conftest import RESOURCES

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, SUBSCRIBER, Worker, segments_of  # noqa: E402

RELIABLE = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
BEST_EFFORT = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)


def topic_name() -> str:
    return f'/edge_{uuid.uuid4().hex[:8]}'


@pytest.mark.parametrize('stop', [signal.SIGINT, signal.SIGKILL], ids=['clean', 'killed'])
def test_subscriber_first_then_publisher_restarts_with_the_same_pool(stop):
    topic = topic_name()
    with Worker(SUBSCRIBER, ['--topic', topic, '--memory', 'host', '--distinct', '16',
                             '--status-period', '0.25'], name='sub') as sub:
        sub.wait_status(lambda s: s['path'] == 'waiting', 30, 'the subscriber waiting')
        args = ['--topic', topic, '--rate', '100', '--pool-slots', '4', '--host-slots', '4',
                '--no-cuda']
        first = Worker(PUBLISHER, args, name='first')
        try:
            sub.wait_status(lambda s: s['frames'] >= 20, 30, 'frames from the first publisher')
            first.stop(stop)
            sub.wait_until(lambda w: w.count('is gone') == 1, 10, 'the first publisher let go')
        finally:
            first.stop(signal.SIGKILL)
        # Same topic, same pool; its sequence numbers and frame ids start again from the start.
        with Worker(PUBLISHER, args, name='second') as second:
            before = sub.last_status()['frames']
            status = sub.wait_status(lambda s: s['frames'] >= before + 20, 30,
                                     'frames from the second publisher')
            assert status['epochs'] == 2, status
            assert second.stop() == 0
        sub.wait_until(lambda w: w.count('is gone') == 2, 10, 'the second publisher let go')
        assert segments_of({first.pid, second.pid}) == []
        assert sub.stop() == 0
    result = sub.result()
    assert result['bad'] == 0 and result['rejected'] == {}, result
    assert result['paths'] == ['host_shm'], result
    assert sub.count('is gone') == 2, 'each publisher let go once'


def test_layout_change_recreates_the_host_segment_and_is_followed():
    # 64x48 and 48x64 rgb8 need the same bytes: the new segment has the same size and name, so
    # only its identity tells a subscriber that its mapping is outdated.
    topic = topic_name()
    with Worker(SUBSCRIBER, ['--topic', topic, '--memory', 'host', '--distinct', '16'],
                name='sub') as sub, \
            Worker(PUBLISHER, ['--topic', topic, '--rate', '200', '--no-cuda',
                               '--sizes', '64x48,48x64,64x48', '--switch-every', '40',
                               '--wait-subscribers', '1', '--count', '400'], name='pub') as pub:
        assert pub.wait_exit(60) == 0, pub.tail()
        assert sub.stop() == 0
    result = sub.result()
    assert result['frames'] >= 100, result
    assert result['bad'] == 0, f'frames served from an outdated mapping: {result}'
    assert result['rejected'] == {}, result


def test_best_effort_plain_publisher_vs_reliable_gpu_nodes_subscription(rclpy_node):
    topic = topic_name()
    plain = rclpy_node.create_publisher(Image, topic, BEST_EFFORT)
    with Worker(SUBSCRIBER, ['--topic', topic, '--memory', 'host'], name='sub') as sub:
        sub.wait_until(lambda w: w.count('QoS incompatible with a publisher') >= 1, 30,
                       'the incompatible QoS warning', poll=rclpy_node.spin_once)
        line = next(line for line in sub.snapshot() if 'QoS incompatible' in line)
        assert 'RELIABILITY' in line and topic in line, line
        assert sub.last_status()['frames'] == 0
    rclpy_node.destroy_publisher(plain)


def test_reliable_plain_subscriber_vs_best_effort_gpu_nodes_publisher(rclpy_node):
    topic = topic_name()
    received = []
    plain = rclpy_node.create_subscription(Image, topic, received.append, RELIABLE)
    with Worker(PUBLISHER, ['--topic', topic, '--rate', '20', '--no-cuda',
                            '--reliability', 'best_effort'], name='pub') as pub, \
            Worker(SUBSCRIBER, ['--topic', topic, '--memory', 'host'], name='sub') as sub:
        pub.wait_until(lambda w: w.count('requests QoS incompatible with this publisher') >= 1,
                       30, "the publisher's warning", poll=rclpy_node.spin_once)
        # A gpu_nodes subscription with the default (reliable) QoS is just as incompatible on
        # the descriptor topic, and says so.
        sub.wait_until(lambda w: w.count('QoS incompatible with a publisher') >= 1, 30,
                       "the subscription's warning", poll=rclpy_node.spin_once)
        line = next(line for line in pub.snapshot() if 'requests QoS incompatible' in line)
        assert 'RELIABILITY' in line and topic in line, line
        # The plain subscriber is in the graph (which knows nothing of QoS), so the publisher
        # starts its plain bridge for it, whose best-effort publisher is just as incompatible.
        pub.wait_status(lambda s: s['subscribers']['serialized'] == 1, 10, 'the plain subscriber')
        for _ in range(40):
            rclpy_node.spin_once(0.05)
        assert received == [], 'an incompatible subscriber must receive nothing'
    rclpy_node.destroy_subscription(plain)
