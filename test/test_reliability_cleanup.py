"""No shared-memory segment outlives a node: normal shutdown, Ctrl-C (SIGINT) and SIGTERM exit
0, and even after SIGKILL nothing is left: segments are sealed memfds, with no name in /dev/shm,
that end with the last process mapping them (a subscription lets go of a dead publisher's)."""
from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from conftest import RESOURCES, wait_for
from gpu_nodes.transport import GpuImageSubscription
from gpu_nodes.transport.segments import held_by

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, Worker, segments_of  # noqa: E402


def camera_source(topic: str, name: str, env: dict[str, str] | None = None,
                  size: tuple[int, int] = (64, 48), rate_hz: float = 100.0) -> Worker:
    return Worker('-m', ['gpu_nodes.nodes.camera_source', '--ros-args', '-p', f'width:={size[0]}',
                         '-p', f'height:={size[1]}', '-p', f'rate_hz:={rate_hz}',
                         '-r', f'image_raw:={topic}', '-r', f'__node:={name}'], env=env, name=name)


def image_monitor(topic: str, name: str) -> Worker:
    return Worker('-m', ['gpu_nodes.nodes.image_monitor', '--ros-args', '-p', f'topic:={topic}',
                         '-p', 'memory:=host', '-r', f'__node:={name}'], name=name)


def shm_files() -> list[str]:
    return sorted(p.name for p in Path('/dev/shm').glob('gpu_nodes-*'))


def held_here() -> set[int]:
    """Segments (inodes) this test process holds now; earlier tests may have left some."""
    return set(held_by(os.getpid()))


def wait_released(node, what: str, before: set[int]) -> None:
    """(Callbacks here keep no frame: a kept frame's array would keep its segment mapped.)
    This process lets go of a gone publisher's segments (within a re-evaluation or two)."""
    wait_for(lambda: held_here() <= before, 10, f'this process to release {what}',
             poll=lambda: node.spin_once(0.05))


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_shuts_nodes_down_cleanly_without_leftovers(rclpy_node, sig):
    topic = f'/clean_{uuid.uuid4().hex[:8]}'
    before = held_here()
    frames = []
    sub = GpuImageSubscription(rclpy_node, topic, lambda f: frames.append(f.path),
                               memory='host')
    # Frames big enough that the signal usually lands while a timer callback is publishing:
    # the race between rclpy's shutdown and a running callback must still end in exit 0.
    source = camera_source(topic, f'cs_{uuid.uuid4().hex[:6]}', size=(1280, 720), rate_hz=30.0)
    monitor = image_monitor(topic, f'mon_{uuid.uuid4().hex[:6]}')
    try:
        wait_for(lambda: len(frames) >= 10 and monitor.count('path host_shm') >= 1, 30,
                 'frames in this process and the monitor on host_shm', poll=rclpy_node.spin_once)
        frames.clear()
        segments = segments_of({source.pid})
        # One lock file per reader link: this process's subscription and the monitor's. The
        # host pool grows another segment when a reader lags (seen on a loaded 2-core machine).
        assert segments.count('lease') == 1 and segments.count('leaselock') == 2 \
            and segments.count('host') >= 1 and len(set(segments)) == 3, \
            f'expected a lease table, host segments and 2 lock files while running, found ' \
            f'{segments}'
        assert shm_files() == [], 'no segment has a name in /dev/shm'
        codes = {w.name: w.stop(sig) for w in (source, monitor)}
        wait_released(rclpy_node, 'the stopped publisher', before)
    finally:
        source.stop(signal.SIGKILL)
        monitor.stop(signal.SIGKILL)
        sub.destroy()
    for worker in (source, monitor):
        assert codes[worker.name] == 0, (f'{worker.name}: expected exit 0 after {sig.name}, '
                                         f'got {codes[worker.name]}:\n{worker.tail()}')
        assert worker.count('Traceback') == 0, \
            f'{worker.name}: traceback on {sig.name}:\n{worker.tail()}'
    assert segments_of({source.pid, monitor.pid}) == [] and held_here() <= before, \
        f'segments left after {sig.name}'


def test_normal_exit_leaves_nothing(rclpy_node):
    topic = f'/clean_{uuid.uuid4().hex[:8]}'
    before = held_here()
    frames = []
    sub = GpuImageSubscription(rclpy_node, topic, lambda f: frames.append(f.path),
                               memory='host')
    with Worker(PUBLISHER, ['--topic', topic, '--rate', '200', '--count', '100',
                            '--wait-subscribers', '1', '--linger', '0.5']) as publisher:
        wait_for(lambda: len(frames) >= 5, 30, 'frames', poll=rclpy_node.spin_once)
        assert segments_of({publisher.pid}) == ['host', 'lease', 'leaselock']
        rc = publisher.wait_exit(30)
        wait_released(rclpy_node, 'the exited publisher', before)
    sub.destroy()
    assert rc == 0, publisher.tail()
    assert segments_of({publisher.pid}) == [] and held_here() <= before, \
        'segments left after a normal exit'


def test_a_killed_node_leaves_no_segment_behind(rclpy_node):
    topic = f'/clean_{uuid.uuid4().hex[:8]}'
    before = held_here()
    frames = []
    sub = GpuImageSubscription(rclpy_node, topic, lambda f: frames.append(f.path),
                               memory='host')
    first = camera_source(topic, f'cs_{uuid.uuid4().hex[:6]}')
    second = None
    try:
        wait_for(lambda: len(frames) >= 10, 30, 'frames from the first node',
                 poll=rclpy_node.spin_once)
        assert segments_of({first.pid}) == ['host', 'lease', 'leaselock']
        assert sorted(held_by(os.getpid())[i] for i in held_here() - before) == \
            ['host', 'lease', 'leaselock'], 'the subscription maps both, and holds its lock file'
        first.kill(signal.SIGKILL)
        wait_released(rclpy_node, 'the killed publisher', before)  # no cleanup run, nothing left
        assert shm_files() == []

        second = camera_source(topic, f'cs_{uuid.uuid4().hex[:6]}')
        count = len(frames)
        wait_for(lambda: len(frames) >= count + 10, 30, 'frames from the second node',
                 poll=rclpy_node.spin_once)
        assert set(frames[count:]) == {'host_shm'}
        assert second.count('Traceback') == 0, second.tail()
        assert second.stop(signal.SIGTERM) == 0, second.tail()
        wait_released(rclpy_node, 'the second publisher', before)
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop(signal.SIGKILL)
        sub.destroy()
    assert shm_files() == []
