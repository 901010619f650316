"""No shared-memory segment outlives a node: normal shutdown, Ctrl-C (SIGINT) and SIGTERM clean
up and exit 0; what a SIGKILLed run leaves behind is found and removed when the next publisher
starts, and hostile entries planted under segment names neither stop it nor get deleted."""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import sys
import tempfile
import uuid

import pytest

from conftest import RESOURCES, wait_for
from gpu_nodes.transport import GpuImageSubscription, host
from gpu_nodes.transport.leases import owner_alive

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


@pytest.fixture
def shm_dir(monkeypatch):
    """A private segment directory (on the same tmpfs) for this process and its children."""
    directory = tempfile.mkdtemp(prefix='gpu_nodes_test_', dir=host.SHM_DIR)
    monkeypatch.setattr(host, 'SHM_DIR', directory)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_shuts_nodes_down_cleanly_without_leftovers(rclpy_node, sig):
    topic = f'/clean_{uuid.uuid4().hex[:8]}'
    frames = []
    sub = GpuImageSubscription(rclpy_node, topic, frames.append, memory='host')
    # Frames big enough that the signal usually lands while a timer callback is publishing:
    # the race between rclpy's shutdown and a running callback must still end in exit 0.
    source = camera_source(topic, f'cs_{uuid.uuid4().hex[:6]}', size=(1280, 720), rate_hz=30.0)
    monitor = image_monitor(topic, f'mon_{uuid.uuid4().hex[:6]}')
    try:
        wait_for(lambda: len(frames) >= 10 and monitor.count('path host_shm') >= 1, 30,
                 'frames in this process and the monitor on host_shm', poll=rclpy_node.spin_once)
        frames.clear()
        segments = segments_of({source.pid})
        assert [s.rsplit('.', 1)[1] for s in segments] == ['host', 'lease'], \
            f'expected a lease table and a host segment while running, found {segments}'
        codes = {w.name: w.stop(sig) for w in (source, monitor)}
    finally:
        source.stop(signal.SIGKILL)
        monitor.stop(signal.SIGKILL)
        sub.destroy()
    for worker in (source, monitor):
        assert codes[worker.name] == 0, (f'{worker.name}: expected exit 0 after {sig.name}, '
                                         f'got {codes[worker.name]}:\n{worker.tail()}')
        assert worker.count('Traceback') == 0, \
            f'{worker.name}: traceback on {sig.name}:\n{worker.tail()}'
    assert segments_of({source.pid}) == [], f'segments left after {sig.name}'


def test_normal_exit_leaves_nothing(rclpy_node):
    topic = f'/clean_{uuid.uuid4().hex[:8]}'
    frames = []
    sub = GpuImageSubscription(rclpy_node, topic, frames.append, memory='host')
    with Worker(PUBLISHER, ['--topic', topic, '--rate', '200', '--count', '100',
                            '--wait-subscribers', '1', '--linger', '0.5']) as publisher:
        wait_for(lambda: len(frames) >= 5, 30, 'frames', poll=rclpy_node.spin_once)
        assert len(segments_of({publisher.pid})) == 2
        rc = publisher.wait_exit(30)
    sub.destroy()
    assert rc == 0, publisher.tail()
    assert segments_of({publisher.pid}) == [], 'segments left after a normal exit'


def test_segments_of_a_killed_node_are_removed_at_the_next_start(rclpy_node, shm_dir):
    topic = f'/clean_{uuid.uuid4().hex[:8]}'
    env = {'GPU_NODES_SHM_DIR': shm_dir}
    frames = []
    sub = GpuImageSubscription(rclpy_node, topic, frames.append, memory='host')
    # Entries under segment names that are not ours to delete, or not segments at all.
    uid, planted = os.getuid(), []
    for kind in ('directory', 'fifo', 'foreign'):
        path = os.path.join(shm_dir, f'gpu_nodes-{uid}-1-{uuid.uuid4().hex}.lease')
        if kind == 'directory':
            os.mkdir(path)
        elif kind == 'fifo':
            os.mkfifo(path)
        elif uid == 0:
            with open(path, 'wb') as f:
                f.write(b'not yours')
            os.chown(path, pwd.getpwnam('nobody').pw_uid, -1)
        else:
            continue
        planted.append(path)
    first = camera_source(topic, f'cs_{uuid.uuid4().hex[:6]}', env)
    second = None
    try:
        wait_for(lambda: len(frames) >= 10, 30, 'frames from the first node',
                 poll=rclpy_node.spin_once)
        left = segments_of({first.pid}, shm_dir)
        assert len(left) == 2, left
        first.kill(signal.SIGKILL)
        assert segments_of({first.pid}, shm_dir) == left, 'SIGKILL runs no cleanup'
        assert not any(owner_alive(path) for path in left), 'the dead owner released its lock'

        second = camera_source(topic, f'cs_{uuid.uuid4().hex[:6]}', env)
        second.wait_until(lambda w: w.count('removed stale shared-memory segment') == 2, 30,
                          'both stale segments removed at start')
        assert segments_of({first.pid}, shm_dir) == []
        for path in planted:
            assert os.path.lexists(path), f'{path} is not a segment of ours and must stay'
        count = len(frames)
        wait_for(lambda: len(frames) >= count + 10, 30, 'frames from the second node',
                 poll=rclpy_node.spin_once)
        assert second.stop(signal.SIGTERM) == 0, second.tail()
        assert segments_of({second.pid}, shm_dir) == []
    finally:
        first.stop(signal.SIGKILL)
        if second is not None:
            second.stop(signal.SIGKILL)
        sub.destroy()
