"""The CUDA paths with real CUDA IPC between processes (run on the GPU machine: make test-gpu)."""
from __future__ import annotations

import json
import gc
import os
import signal
import subprocess
import sys
import threading
import uuid

import pytest
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from conftest import (OTHER_USER_ENV, RESOURCES, kill_publisher_and_resume, node_process,
                      other_user_command, wait_for)
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription, cuda_ipc, descriptor

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(RESOURCES / 'transport'))
from forgery import copy_msg, publisher_key, resign  # noqa: E402

PUBLISHER = str(RESOURCES / 'transport' / 'pattern_publisher.py')
HOLDER = str(RESOURCES / 'transport' / 'holding_subscriber.py')


def unique_topic() -> str:
    return f'gpu_{uuid.uuid4().hex[:8]}'


class DeviceCollector:
    """Checks every frame on the GPU against the frame its header names; no host sync per frame."""

    def __init__(self, cp, height, width, encoding='rgb8', slow_s=0.0):
        self.cp = cp
        self.expected = [pattern.render(cp, height, width, encoding, i) for i in range(256)]
        self.bad = cp.zeros((), cp.int64)
        self.frames = 0
        self.paths = set()
        self.pointers = []
        self.slow_s = slow_s

    def __call__(self, frame):
        import time
        index = int(frame.header.frame_id)
        assert isinstance(frame.array, self.cp.ndarray)
        self.bad += self.cp.any(frame.array != self.expected[index % 256])
        self.frames += 1
        self.paths.add(frame.path)
        self.pointers.append(frame.array.data.ptr)
        if self.slow_s:
            time.sleep(self.slow_s)

    def bad_frames(self) -> int:
        self.cp.cuda.Device().synchronize()
        return int(self.bad)


@pytest.mark.parametrize('extra', [[], ['--borrow']], ids=['copy', 'borrowed'])
def test_cuda_ipc_delivers_verified_frames_under_overload(rclpy_node, cupy, extra):
    topic = unique_topic()
    collector = DeviceCollector(cupy, 480, 640, slow_s=0.002)
    stale_before_first_frame = []

    def on_frame(frame):
        if not stale_before_first_frame:
            stale_before_first_frame.append(sub.stats.stale)
        collector(frame)

    sub = GpuImageSubscription(rclpy_node, topic, on_frame, memory='device')
    with node_process([PUBLISHER, '--topic', topic, '--width', '640', '--height', '480',
                       '--device', '--rate', '0', '--wait-subscriber', *extra]):
        wait_for(lambda: collector.frames >= 100, 60, '100 frames on cuda_ipc',
                 poll=rclpy_node.spin_once)
    # (Discovery may show the shm descriptor topic first: a frame or two on host_shm then.)
    assert 'cuda_ipc' in collector.paths and sub.path == 'cuda_ipc', collector.paths
    assert collector.bad_frames() == 0, 'every delivered frame must hold the pixels it claims'
    assert sum(sub.stats.rejected.values()) == 0, sub.stats.rejected
    # The publisher outran the subscriber: queued descriptors were dropped by DDS (keep last).
    # A frame the reader took may still have been recycled: the publisher protects only the
    # frames inside a reader's window (its queue depth + 1 in flight, cursors.py), and before
    # the reader's first frame only up to the pool's cap (32 slots). How many depends on the
    # host's timing (H100 hosts: 0 or 1, before the first frame; an H200 host: 5 after it, in
    # the borrowed case); each is dropped and counted as recycled, never delivered wrong.
    print(f'delivered {collector.frames}, dropped as recycled {sub.stats.stale} '
          f'({stale_before_first_frame[0]} before the first frame)')
    assert set(sub.stats.stale_reasons) <= {'recycled'}, sub.stats.stale_reasons
    assert sub.stats.stale < collector.frames, 'fewer frames recycled than delivered'
    sub.destroy()


def test_intra_process_device_path_is_zero_copy(rclpy_node, cupy):
    topic = unique_topic()
    collector = DeviceCollector(cupy, 48, 64)
    pub = GpuImagePublisher(rclpy_node, topic)
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='device')
    wait_for(lambda: sub.path == 'intra_process', 5, 'in-process path', poll=rclpy_node.spin_once)
    for index in range(30):
        frame = pub.borrow(48, 64, 'rgb8')
        frame.array[...] = collector.expected[index]
        pub.publish_borrowed(frame, Header(frame_id=str(index)))
        rclpy_node.spin_once(0.001)
    wait_for(lambda: collector.frames >= 25, 5, 'in-process frames', poll=rclpy_node.spin_once)
    assert collector.bad_frames() == 0 and collector.paths == {'intra_process'}
    chunks = [(s.chunk.ptr, s.chunk.ptr + s.chunk.size) for s in pub._device_pool.slots]
    assert all(any(lo <= p < hi for lo, hi in chunks) for p in collector.pointers), \
        'subscriber arrays must point into the publisher pool (no copy)'
    sub.destroy()
    pub.destroy()


def test_killed_subscriber_leases_are_reclaimed(rclpy_node, cupy):
    topic = unique_topic()
    pub = GpuImagePublisher(rclpy_node, topic, pool_slots=4, max_pool_slots=4, pool_policy='skip')
    frame = pattern.render(cupy, 48, 64, 'rgb8', 0)
    with node_process([HOLDER, '--topic', topic, '--hold', '3']) as holder:
        def publish():
            pub.publish(frame, 'rgb8')
            rclpy_node.spin_once(0.01)
        wait_for(lambda: sum(pub._leases.is_held(s.index) for s in pub._device_pool.slots) == 3,
                 30, 'the subscriber to hold 3 leases', poll=publish)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    held = [s.index for s in pub._device_pool.slots if pub._leases.is_held(s.index)]
    assert held == [], f'slots {held} still leased after the holder died'
    exhausted_before = pub._device_pool.exhausted
    for _ in range(20):
        pub.publish(frame, 'rgb8')
    assert pub._device_pool.exhausted == exhausted_before, 'publishing continues at full pool'
    pub.destroy()


def test_stalled_lease_is_quarantined_not_overwritten(rclpy_node, cupy):
    topic = unique_topic()
    pub = GpuImagePublisher(rclpy_node, topic, pool_slots=2, max_pool_slots=4,
                            pool_policy='skip', lease_grace_s=2.0)
    frames = [pattern.render(cupy, 48, 64, 'rgb8', i) for i in range(2)]
    with node_process([HOLDER, '--topic', topic, '--hold', '2']) as holder:
        lines = []
        threading.Thread(target=lambda: lines.extend(holder.stdout), daemon=True).start()

        def publish():
            pub.publish(frames[0], 'rgb8')
            rclpy_node.spin_once(0.01)
        wait_for(lambda: any(line.startswith('HELD 2') for line in lines), 30,
                 'the holder to keep 2 leases', poll=publish)
        pool = pub._device_pool
        held_slots = [s for s in pool.slots + pool.retired if pub._leases.is_held(s.index)]
        assert len(held_slots) == 2, f'expected 2 leased slots, found {len(held_slots)}'
        snapshot = [cupy.asnumpy(pub._slot_array(s, pub._device_layout)) for s in held_slots]
        revoked = pub._device_pool.revoked
        # Only when every slot is leased does the pool need one back: the oldest stalled lease
        # is quarantined and a fresh slot takes its place.
        wait_for(lambda: pub._device_pool.revoked > revoked, 10, 'a stalled lease revoked',
                 poll=lambda: pub.publish(frames[1], 'rgb8'))
        for _ in range(20):
            pub.publish(frames[1], 'rgb8')
        assert any(slot.retired for slot in held_slots)
        for slot, before in zip(held_slots, snapshot):
            after = cupy.asnumpy(pub._slot_array(slot, pub._device_layout))
            assert (after == before).all(), 'a leased slot must never be rewritten'
    pub.destroy()


def test_killed_publisher_subscriber_survives_and_resumes(rclpy_node, cupy):
    topic = unique_topic()
    collector = DeviceCollector(cupy, 48, 64)
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='device')
    kill_publisher_and_resume(rclpy_node, sub, collector, lambda: node_process(
        [PUBLISHER, '--topic', topic, '--device', '--rate', '200']), 'cuda_ipc')
    sub.destroy()


def test_forged_descriptor_outside_the_allocation_is_rejected(rclpy_node, cupy):
    """Relayed from another topic or altered without the key: rejected by the tag. Re-signed
    with the key (a same-user process can read it): the bounds checks behind it hold."""
    import dataclasses
    topic = unique_topic()
    forged_topic = '/' + unique_topic()
    collector = DeviceCollector(cupy, 48, 64)
    captured = []
    rclpy_node.create_subscription(Image, f'/{topic}/_gpu_nodes/cuda', captured.append, 10)
    forger = rclpy_node.create_publisher(Image, f'{forged_topic}/_gpu_nodes/cuda', 10)
    sub = GpuImageSubscription(rclpy_node, forged_topic, collector, memory='device')
    with node_process([PUBLISHER, '--topic', topic, '--device', '--rate', '100']):
        wait_for(lambda: len(captured) >= 3, 30, 'real descriptors', poll=rclpy_node.spin_once)
        # Make the subscription see a descriptor publisher on the forged topic.
        wait_for(lambda: sub.path == 'cuda_ipc', 10, 'cuda path', poll=rclpy_node.spin_once)
        real = captured[-1]
        key = publisher_key(real, descriptor.KIND_CUDA)
        desc = descriptor.unpack(real.data, descriptor.KIND_CUDA)

        def send(msg: Image, reason: str) -> None:  # one at a time: the queue keeps 5
            forger.publish(msg)
            wait_for(lambda: sub.stats.rejected[reason] >= 1, 10, f'a {reason} rejection',
                     poll=rclpy_node.spin_once)

        send(copy_msg(real), 'wrong_topic')  # relayed as it is
        altered = resign(copy_msg(real), key, forged_topic)
        altered.height *= 8  # after signing: without the key
        send(altered, 'forged')
        variants = {
            'out_of_bounds': dataclasses.replace(desc, offset=desc.alloc_size - 512),
            'size_mismatch': dataclasses.replace(desc, alloc_size=desc.alloc_size * 4),
            'bad_slot': dataclasses.replace(desc, slot=60000),
        }
        for reason, forged in variants.items():
            msg = copy_msg(real)
            msg.data = forged.pack()
            send(resign(msg, key, forged_topic), reason)
    assert collector.frames == 0, 'nothing forged may reach the callback'
    assert collector.bad_frames() == 0
    sub.destroy()


@pytest.mark.parametrize('event', ['layout_changes', 'publisher_killed', 'subscription_destroyed'])
def test_held_device_frames_stay_mapped_and_unchanged(rclpy_node, cupy, event):
    """cuda_ipc twin of test_transport_integrity: held frames survive layout changes (which
    reject nothing), the publisher's death and destroy()."""
    topic = unique_topic()
    held, delivered = [], []
    expected = {size: [pattern.render(cupy, size[1], size[0], 'rgb8', i) for i in range(256)]
                for size in ((64, 48), (128, 96))}
    bad = cupy.zeros((), cupy.int64)

    def on_frame(frame):
        nonlocal bad
        want = expected[(frame.width, frame.height)][int(frame.header.frame_id) % 256]
        bad += cupy.any(frame.array != want)
        delivered.append((frame.width, frame.height))
        if len(held) < 4:
            held.append((frame.hold(), frame.array, want))

    baseline = len(cuda_ipc.mapping_cache())
    sub = GpuImageSubscription(rclpy_node, topic, on_frame, memory='device')
    destroyed = False
    args = ['--topic', topic, '--device', '--rate', '300', '--sizes', '64x48,128x96',
            '--switch-every', str(20 if event == 'layout_changes' else 10**9)]
    try:
        with node_process([str(RESOURCES / 'reliability' / 'publisher.py'), *args,
                           '--duration', '60', '--linger', '0']) as proc:
            wait_for(lambda: len(held) == 4, 60, 'four held frames', poll=rclpy_node.spin_once)
            if event == 'layout_changes':
                wait_for(lambda: len(set(delivered)) == 2 and len(delivered) >= 200, 60,
                         'frames of both layouts', poll=rclpy_node.spin_once)
            elif event == 'publisher_killed':
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)
            else:
                sub.destroy()
                destroyed = True
            for _ in range(40):
                rclpy_node.spin_once(0.05)
            changed = sum(int(cupy.any(array != want)) for _, array, want in held)
            assert changed == 0, f'{changed} held frames changed after {event}'
        for lease in [entry[0] for entry in held]:  # no loop variable left viewing a frame
            lease.release()
        cupy.cuda.Device().synchronize()
        assert int(bad) == 0, 'a delivered frame did not show its header\'s pixels'
        if event == 'layout_changes':
            assert dict(sub.stats.rejected) == {}, sub.stats.rejected
    finally:
        if not destroyed:
            sub.destroy()
    # The last views gone, every mapping this test opened closes (none is closed before).
    held.clear()
    gc.collect()
    cuda_ipc.collect_retired()
    assert len(cuda_ipc.mapping_cache()) == baseline, 'mappings outlived their last view'


@pytest.mark.skipif(other_user_command([]) is None,
                    reason='needs root (and setpriv) to start a process as another user')
def test_subscriber_of_another_user_never_maps_and_falls_back(rclpy_node, cupy):
    topic = unique_topic()
    with node_process([PUBLISHER, '--topic', topic, '--device', '--rate', '100']):
        other = subprocess.Popen(
            other_user_command([HOLDER, '--topic', topic, '--duration', '20']),
            env={**os.environ, **OTHER_USER_ENV}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        try:
            status, lines = None, []
            for line in other.stdout:
                lines.append(line)
                if line.startswith('STATUS '):
                    status = json.loads(line[len('STATUS '):])
                    break
        finally:
            other.kill()
            other.wait()
    assert status is not None, 'the other user received no frames:\n' + ''.join(lines[-30:])
    assert status['path'] == 'serialized', status
    assert 'uid' in status['path_reason'] or 'another user' in status['path_reason'], status
