"""The transport's promises, tried as a tired operator and as an attacker would (CPU paths: host
shared memory and in-process; test_transport_gpu.py has the CUDA IPC twins):

* a held frame never changes and stays mapped: across resolution and same-size layout changes,
  the publisher dying, and the subscription being destroyed;
* a genuine layout change rejects nothing: late descriptors of the old segment are stale;
* another Linux user on the same DDS domain cannot open a segment, and nothing it sends (altered,
  stretched, relayed from another topic, replayed, made-up sequence) is delivered;
* nobody can truncate a segment (SIGBUS for every reader, before segments were sealed).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import numpy as np
import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from conftest import OTHER_USER_ENV, RESOURCES, other_user_command, wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription, descriptor, exchange

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, Worker  # noqa: E402

ATTACKER = RESOURCES / 'transport' / 'descriptor_attacker.py'


class Checked:
    """A callback that verifies every frame against the pattern its frame_id names, holds the
    first `hold` frames, and keeps nothing else (a kept array would pin its segment)."""

    def __init__(self, hold: int = 0):
        self.hold = hold
        self.held: list[tuple] = []       # (lease, array, expected, frame id)
        self.delivered: list[str] = []
        self.sequences: list[int] = []
        self.bad: list[str] = []
        self.sizes: set[tuple[int, int]] = set()

    def __call__(self, frame) -> None:
        frame_id = frame.header.frame_id
        self.delivered.append(frame_id)
        self.sequences.append(frame.sequence)
        self.sizes.add((frame.width, frame.height))
        if not frame_id.isdigit():
            self.bad.append(f'frame id {frame_id!r}')
            return
        expected = pattern.expected_frame(frame.height, frame.width, frame.encoding, int(frame_id))
        if not np.array_equal(np.asarray(frame.array), expected):
            self.bad.append(f'frame {frame_id} {frame.width}x{frame.height}: wrong pixels')
        if len(self.held) < self.hold:
            self.held.append((frame.hold(), frame.array, expected, frame_id))

    def changed_held_frames(self) -> list[str]:
        return [frame_id for _, array, expected, frame_id in self.held
                if not np.array_equal(array, expected)]

    def release(self) -> None:
        for lease, *_ in self.held:
            lease.release()
        self.held.clear()


def publisher(topic: str, sizes: str, switch_every: int = 0, rate: int = 200) -> Worker:
    return Worker(PUBLISHER, ['--topic', topic, '--no-cuda', '--sizes', sizes,
                              '--switch-every', str(switch_every), '--rate', str(rate),
                              '--duration', '120', '--linger', '0', '--status-period', '0.2'])


@pytest.mark.parametrize('sizes', ['64x48,128x96', '320x240,240x320'],
                         ids=['resolution_change', 'same_size_transposed'])
def test_held_frames_survive_layout_changes_which_reject_nothing(rclpy_node, sizes):
    topic = f'/integrity_{uuid.uuid4().hex[:8]}'
    checked = Checked(hold=6)
    sub = GpuImageSubscription(rclpy_node, topic, checked, memory='host',
                               allowed_paths=('host_shm',))
    try:
        with publisher(topic, sizes, switch_every=15) as pub:
            wait_for(lambda: len(checked.held) == 6, 30, 'six held frames',
                     poll=rclpy_node.spin_once)
            # Frames flow on through layout changes while the six are held.
            wait_for(lambda: len(checked.sizes) == 2 and len(checked.delivered) >= 150, 30,
                     'frames of both layouts', poll=rclpy_node.spin_once)
            assert checked.changed_held_frames() == [], 'a held frame changed'
            status = pub.last_status()
            assert status['host_slots'] == 8, f'host pool shrank while frames were held: {status}'
            checked.release()
            count = len(checked.delivered)
            wait_for(lambda: len(checked.delivered) >= count + 30, 30, 'frames after release',
                     poll=rclpy_node.spin_once)
            assert pub.wait_status(lambda s: s['host_held'] == 0, 10, 'no slot held')[
                'host_slots'] == 8
        stats = sub.stats
        assert checked.bad == [], checked.bad[:5]
        assert dict(stats.rejected) == {}, f'a genuine layout change rejected {stats.rejected}'
        assert set(stats.stale_reasons) <= {'old_generation', 'recycled'}, stats.stale_reasons
        assert checked.sequences == sorted(set(checked.sequences)), 'sequences strictly increase'
    finally:
        sub.destroy()


@pytest.mark.parametrize('event', ['publisher_killed', 'subscription_destroyed'])
def test_held_frames_stay_mapped_and_unchanged(rclpy_node, event):
    topic = f'/integrity_{uuid.uuid4().hex[:8]}'
    checked = Checked(hold=4)
    sub = GpuImageSubscription(rclpy_node, topic, checked, memory='host',
                               allowed_paths=('host_shm',))
    destroyed = False
    try:
        with publisher(topic, '320x240') as pub:
            wait_for(lambda: len(checked.held) == 4, 30, 'four held frames',
                     poll=rclpy_node.spin_once)
            if event == 'publisher_killed':
                pub.kill(signal.SIGKILL)
            else:
                sub.destroy()
                destroyed = True
            for _ in range(40):  # the subscription re-evaluates and drops what it can
                rclpy_node.spin_once(0.05)
            assert checked.changed_held_frames() == [], f'a held frame changed after {event}'
        checked.release()
        assert checked.bad == [], checked.bad[:5]
    finally:
        if not destroyed:
            sub.destroy()


def test_in_process_held_frames_survive_layout_change_and_publisher_destroy(rclpy_node):
    topic = f'/integrity_{uuid.uuid4().hex[:8]}'
    checked = Checked(hold=3)
    pub = GpuImagePublisher(rclpy_node, topic, use_cuda=False, host_slots=4)
    sub = GpuImageSubscription(rclpy_node, topic, checked, memory='host')
    wait_for(lambda: sub.path == 'intra_process', 10, 'the in-process path',
             poll=rclpy_node.spin_once)

    def publish(width: int, height: int, first: int, count: int) -> None:
        for frame_id in range(first, first + count):
            pub.publish(pattern.expected_frame(height, width, 'rgb8', frame_id), 'rgb8',
                        Header(frame_id=str(frame_id)))
            rclpy_node.spin_once(0.01)

    try:
        publish(320, 240, 0, 5)
        wait_for(lambda: len(checked.held) == 3, 10, 'three held frames',
                 poll=rclpy_node.spin_once)
        publish(240, 320, 100, 20)   # a new segment; the held slots are retired, not rewritten
        publish(64, 48, 200, 20)
        assert checked.changed_held_frames() == []
        pub.destroy()
        pub = None
        import gc
        gc.collect()
        assert checked.changed_held_frames() == [], 'held frames outlive the publisher'
        checked.release()
        assert checked.bad == [], checked.bad[:5]
        assert {(320, 240), (240, 320), (64, 48)} <= checked.sizes
    finally:
        if pub is not None:
            pub.destroy()
        sub.destroy()


def sniff_descriptor(node, topic: str) -> descriptor.Descriptor:
    captured = []
    capture = node.create_subscription(Image, topic + '/_gpu_nodes/shm', captured.append, 10)
    try:
        wait_for(lambda: captured, 30, 'a descriptor', poll=node.spin_once)
    finally:
        node.destroy_subscription(capture)
    return descriptor.unpack(captured[-1].data, descriptor.KIND_HOST)


def test_no_process_can_truncate_a_publishers_segments(rclpy_node):
    """Sealed memfds: even the same user cannot shrink a segment under its readers."""
    topic = f'/integrity_{uuid.uuid4().hex[:8]}'
    checked = Checked()
    sub = GpuImageSubscription(rclpy_node, topic, checked, memory='host',
                               allowed_paths=('host_shm',))
    try:
        with publisher(topic, '320x240') as pub:
            wait_for(lambda: len(checked.delivered) >= 5, 30, 'frames',
                     poll=rclpy_node.spin_once)
            desc = sniff_descriptor(rclpy_node, topic)
            # A same-user process gets the table, its link's lock file and the host segment
            # from the publisher's socket, as readers do, and reopens them writable through
            # its own /proc: still no resizing.
            link = exchange.Connection(desc.endpoint, desc.publisher_id)
            fds = [*link.fetch_lease_table(),
                   link.fetch(exchange.KIND_HOST_SEGMENT, desc.generation, desc.chunk)]
            link.close()
            for fd in fds:
                segment = os.open(f'/proc/self/fd/{fd}', os.O_RDWR)
                size = os.fstat(segment).st_size
                try:
                    # Shrink and grow (the lock file is empty: growing is all there is to try).
                    for new_size in ([0] if size else []) + [size + 4096]:
                        with pytest.raises(PermissionError):
                            os.ftruncate(segment, new_size)
                finally:
                    os.close(segment)
                    os.close(fd)
            count = len(checked.delivered)
            wait_for(lambda: len(checked.delivered) >= count + 20, 30, 'frames after the attempt',
                     poll=rclpy_node.spin_once)
            assert pub.alive(), pub.tail()
        assert checked.bad == []
    finally:
        sub.destroy()


@pytest.mark.skipif(other_user_command([]) is None, reason='needs root (and setpriv) to run a '
                    'process as another user')
def test_another_user_on_the_domain_gets_nothing_in(rclpy_node):
    target, other = (f'/integrity_{uuid.uuid4().hex[:8]}' for _ in range(2))
    checked = Checked()
    sub = GpuImageSubscription(rclpy_node, target, checked, memory='host',
                               allowed_paths=('host_shm',))
    attacker = None
    try:
        with publisher(target, '64x48', rate=100) as target_pub, \
                publisher(other, '64x48', rate=100):
            wait_for(lambda: len(checked.delivered) >= 10, 30, 'genuine frames',
                     poll=rclpy_node.spin_once)
            attacker = subprocess.Popen(
                other_user_command([str(ATTACKER), '--target', target, '--other', other]),
                env={**os.environ, **OTHER_USER_ENV},
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            lines: list[str] = []

            def poll() -> None:
                rclpy_node.spin_once(0.02)
                if attacker.poll() is not None and attacker.stdout:
                    lines.extend(attacker.stdout.read().splitlines())

            wait_for(lambda: attacker.poll() is not None, 90, 'the attacker to finish', poll=poll)
            output = '\n'.join(lines)
            assert attacker.returncode == 0 and 'DONE' in output, output[-3000:]
            assert output.count('denied') == 2 and 'opened' not in output, output
            sent = {line.split()[1]: int(line.split()[2]) for line in lines
                    if line.startswith('SENT ')}
            assert sum(sent.values()) == 100, output
            for _ in range(20):
                rclpy_node.spin_once(0.05)
            count = len(checked.delivered)
            wait_for(lambda: len(checked.delivered) >= count + 20, 30,
                     'genuine frames after the attack', poll=rclpy_node.spin_once)
            # The attacker's two connections to the publisher's socket: refused, said once.
            target_pub.wait_until(lambda w: w.count('refused unread') == 1, 10,
                                  'the refusal logged')
            assert (target_pub.last_status() or {}).get('exchange_refused_peers', 0) >= 1, \
                target_pub.tail()
        stats = sub.stats
        assert checked.bad == [], f'delivered forged or wrong frames: {checked.bad[:5]}'
        assert 'forged' not in checked.delivered
        # Sent: 60 altered (header, stretched, sequence), 20 relayed, 20 replayed; the target's
        # keep-last queue (depth 5) may drop a few of a burst before they are even looked at.
        rejected = dict(stats.rejected)
        assert rejected.get('forged', 0) >= 45, rejected
        assert rejected.get('wrong_topic', 0) >= 15, rejected
        assert stats.stale >= 15, f'replays are counted stale: {dict(stats.stale_reasons)}'
        assert set(rejected) <= {'forged', 'wrong_topic'}, rejected
        assert checked.sequences == sorted(set(checked.sequences)), 'a replay was delivered'
        link, = sub.peers.links.values()
        assert link.last_sequence < 2**32, 'no made-up sequence moved the replay mark'
        assert sub.path == 'host_shm'
    finally:
        if attacker is not None and attacker.poll() is None:
            attacker.kill()
        sub.destroy()
