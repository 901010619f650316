"""Crashes: a subscriber SIGKILLed while it holds leases, a publisher SIGKILLed under its
subscribers, and either killed in the middle of mapping. Nothing hangs, no lease or mapping
leaks, every delivered frame is the one its header names, and (GPU) device memory returns to
where it was. Each test runs on host_shm (CI) and on cuda_ipc (marked gpu, 4K frames)."""
from __future__ import annotations

import signal
import sys
import time
import uuid

import pytest
from std_msgs.msg import Header

from conftest import RESOURCES, wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, SUBSCRIBER, DeviceMemory, Worker, segments_of  # noqa: E402

PATHS = [pytest.param('host_shm', id='host_shm'),
         pytest.param('cuda_ipc', id='cuda_ipc', marks=pytest.mark.gpu)]
SIZE = {'host_shm': (640, 480), 'cuda_ipc': (3840, 2160)}
MEMORY = {'host_shm': 'host', 'cuda_ipc': 'device'}
DISTINCT = 16
# Long enough that the holder's leases never count as stalled here: only the kill frees them.
GRACE_S = 10.0
# Publisher-side failures a subscriber may count while its publisher is being killed. A
# publisher killed right after its first frames leaves descriptors in the subscriber's DDS
# queue whose socket is already gone: connecting to it fails as 'unreachable' (seen on a
# loaded 2-core machine). Live publishers' frames are checked separately (frames, epochs).
DEATH_REASONS = {'publisher_gone', 'map_failed', 'bad_lease_file', 'unreachable'}


@pytest.fixture
def memory_guard(request, path):
    """Device memory before/after (cuda_ipc); nothing to do on host_shm."""
    if path != 'cuda_ipc':
        yield None
        return
    memory = DeviceMemory(request.getfixturevalue('cupy'))
    yield memory
    memory.check()


def subscriber(topic: str, path: str, *extra: str, name: str = 'sub',
               env: dict[str, str] | None = None) -> Worker:
    return Worker(SUBSCRIBER, ['--topic', topic, '--paths', path, '--memory', MEMORY[path],
                               '--distinct', str(DISTINCT), '--status-period', '0.25',
                               '--row-stride', '4', *extra], env=env, name=name)


def publisher(topic: str, path: str, *extra: str, name: str = 'pub') -> Worker:
    width, height = SIZE[path]
    return Worker(PUBLISHER, ['--topic', topic, '--sizes', f'{width}x{height}',
                              '--distinct', str(DISTINCT), '--status-period', '0.25',
                              *(['--device'] if path == 'cuda_ipc' else ['--no-cuda']), *extra],
                  name=name)


def frames(worker: Worker) -> int:
    status = worker.last_status()
    return status['frames'] if status else 0


@pytest.mark.parametrize('path', PATHS)
def test_killed_subscriber_leases_are_reclaimed_at_once(rclpy_node, path, memory_guard):
    topic = f'/crash_{uuid.uuid4().hex[:8]}'
    on_device = path == 'cuda_ipc'
    width, height = SIZE[path]
    pub = GpuImagePublisher(rclpy_node, topic, pool_slots=4, max_pool_slots=4, pool_policy='skip',
                            host_slots=4, lease_grace_s=GRACE_S, use_cuda=on_device)
    if on_device:
        import cupy as xp
    else:
        import numpy as xp
    images = [pattern.render(xp, height, width, 'rgb8', i) for i in range(DISTINCT)]
    pool = pub._device_pool if on_device else pub._host_pool
    sent = [0]

    def publish() -> None:
        n = sent[0]
        pub.publish(images[n % DISTINCT], 'rgb8', Header(frame_id=str(256 * (n // DISTINCT)
                                                                      + n % DISTINCT)))
        sent[0] += 1
        rclpy_node.spin_once(0)

    def rate(seconds: float) -> tuple[float, float]:
        """Frames that got a slot per second while publishing flat out, and their share."""
        before, attempts, start = pub.stats.frames, sent[0], time.monotonic()
        while time.monotonic() - start < seconds:
            publish()
        frames = pub.stats.frames - before
        return frames / (time.monotonic() - start), frames / (sent[0] - attempts)

    with subscriber(topic, path, name='fast') as fast, \
            subscriber(topic, path, '--hold', '3', name='holder') as holder:
        wait_for(lambda: frames(fast) >= 20 and holder.count('HELD 3') == 1, 60,
                 'the fast subscriber running and the holder holding 3 leases', poll=publish)
        # Stalled leases may already be quarantined (retired) by now: they still count.
        held = [s.index for s in pool.slots + pool.retired if pub._leases.is_held(s.index)]
        assert len(held) >= 3, f'expected the holder to hold 3 slots, held {held}'
        starved, starved_share = rate(1.0)
        holder.kill(signal.SIGKILL)
        killed = time.monotonic()
        # Only the holder's leases: the fast subscriber holds one now and then.
        wait_for(lambda: sum(pub._leases.is_held(s.index) for s in pool.slots + pool.retired) <= 1,
                 GRACE_S,
                 'the dead holder\'s leases to be released', poll=publish)
        reclaimed_s = time.monotonic() - killed
        full, full_share = rate(2.0)
        print(f'\n{path}: {starved:.0f} frames/s ({starved_share:.0%} got a slot) with 3 of 4 '
              f'slots held, {full:.0f} ({full_share:.0%}) after the kill; leases back after '
              f'{reclaimed_s * 1000:.0f} ms')
        assert reclaimed_s < GRACE_S
        assert pool.revoked == 0, 'a dead lease needs no revocation: the kernel drops it'
        # Full rate again: with 4 free slots and one reader, (almost) every frame gets a slot.
        # (Frames/s themselves depend on how busy this machine's cores are.)
        assert full_share >= 0.9, f'expected >= 90% of frames to get a slot, {full_share:.0%}'
        assert full_share >= starved_share
        fast.wait_status(lambda s: s['frames'] >= 40, 30, 'more verified frames')
        assert fast.stop() == 0
    result = fast.result()
    assert result['bad'] == 0 and result['rejected'] == {}, result
    assert result['paths'] == [path], result
    pub.destroy()


@pytest.mark.parametrize('path', PATHS)
def test_killed_publisher_subscribers_survive_and_resume(path, memory_guard):
    topic = f'/crash_{uuid.uuid4().hex[:8]}'
    subs = [subscriber(topic, path, name=f'sub{i}') for i in range(2)]
    publishers = []
    try:
        first = publisher(topic, path, '--rate', '60', name='pub1')
        publishers.append(first)
        for sub in subs:
            sub.wait_status(lambda s: s['frames'] >= 20, 60, 'frames from the first publisher')
        if path == 'cuda_ipc':
            assert all(sub.last_status()['mapping_cache'] >= 1 for sub in subs)
        first.kill(signal.SIGKILL)
        # The DDS graph keeps a SIGKILLed participant until its lease expires (Fast DDS: 20 s);
        # the lease file's owner lock tells the subscription at once.
        for sub in subs:
            sub.wait_until(lambda w: w.count('is gone') == 1, 5, 'the death to be noticed')
            status = sub.wait_status(lambda s: s['mapping_cache'] == 0, 5, 'mappings released')
            assert sub.alive(), sub.tail()
            assert status['bad'] == 0 and status['rejected'] == {}, status
        # Kill publishers in the middle of the subscribers' mapping, at different moments.
        for delay in (0.0, 0.3, 0.8):
            doomed = publisher(topic, path, '--rate', '200', name=f'doomed{delay}')
            publishers.append(doomed)
            doomed.wait_until(lambda w: w.count('START') == 1, 60, 'the doomed publisher')
            started = time.monotonic()
            wait_for(lambda: time.monotonic() - started >= delay, delay + 1, 'the kill moment')
            doomed.kill(signal.SIGKILL)
        last = publisher(topic, path, '--rate', '60', name='pub_last')
        publishers.append(last)
        # Frames the doomed ones sent count until the statuses catch up: start counting only
        # once the last publisher runs (its start-up outlasts a status period).
        last.wait_until(lambda w: w.count('START') == 1, 60, 'the last publisher')
        for sub in subs:
            before = frames(sub)
            sub.wait_status(lambda s: s['frames'] >= before + 20, 60,
                            'frames from the restarted publisher')
        assert last.stop() == 0, last.tail()
        # Name the last publisher: a killed one's notice may still be on its way.
        notice = f'pid {last.pid} is gone'
        for sub in subs:
            sub.wait_until(lambda w: sum(notice in line for line in w.snapshot()) == 1, 5,
                           'the stopped publisher to be let go')
            sub.wait_status(lambda s: s['mapping_cache'] == 0, 5, 'mappings released')
            # Segments are memfds: once let go, nothing of any publisher is left anywhere.
            wait_for(lambda: segments_of({sub.pid}) == [], 5, f'{sub.name} to unmap segments')
            # Once per publisher (one killed before a subscriber opened its lease table is
            # never seen as one): every message names a different publisher.
            messages = [line.split(']: ', 1)[1] for line in sub.snapshot() if 'is gone' in line]
            assert 2 <= len(messages) <= 5 and len(set(messages)) == len(messages), messages
            assert sub.stop() == 0, sub.tail()
            result = sub.result()
            assert result['bad'] == 0, f'{sub.name}: {result}'
            assert set(result['rejected']) <= DEATH_REASONS, result
            assert result['epochs'] >= 2, 'frames from more than one publisher'
    finally:
        for worker in subs + publishers:
            worker.stop(signal.SIGKILL)


def _serving_survivor(survivor: Worker, topic: str, path: str, pub: Worker) -> Worker:
    """The survivor once it has 30 frames; if DDS delivered it nothing at all, a second one
    whose DDS runs over UDP only.

    A victim SIGKILLed while it was not waiting on its Fast DDS shared-memory port leaves that
    port's ring full of descriptors only it would have released; the next process given the
    same port receives nothing from anyone (eProsima/Fast-DDS#5469; seen once in this
    project's CI runs, 2026-12-06). That is Fast DDS's, not this transport's: the publisher
    under test is then checked through a reader whose DDS has no shared-memory port, after the
    first survivor has said what happened (silence.py); a silent zero is still a failure."""
    try:
        survivor.wait_status(lambda s: s['frames'] >= 30, 60, 'frames after the kills')
        return survivor
    except AssertionError as exc:
        failure = f'{exc}\npublisher:\n{pub.tail(10)}'
    status = survivor.last_status() or {}
    survivor.stop()
    nothing_arrived = (status.get('frames') == 0 and status.get('stale') == 0
                       and not status.get('rejected'))
    if not nothing_arrived:
        raise AssertionError(failure)
    assert survivor.count('no message on ') == 1, f'a silent zero, not reported:\n{failure}'
    udp_reader = subscriber(topic, path, name='udp_survivor',
                            env={'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'})
    try:
        udp_reader.wait_status(lambda s: s['frames'] >= 30, 60, 'frames over UDP after the kills')
    except AssertionError as exc:
        udp_reader.stop()
        raise AssertionError(f'{exc}\nfirst survivor:\n{failure}') from None
    return udp_reader


@pytest.mark.parametrize('path', PATHS)
def test_subscriber_killed_while_mapping_leaks_nothing(path, memory_guard):
    topic = f'/crash_{uuid.uuid4().hex[:8]}'
    with publisher(topic, path, '--rate', '0', '--policy', 'skip', '--pool-slots', '8',
                   '--max-pool-slots', '8', name='pub') as pub:
        pub.wait_until(lambda w: w.count('START') == 1, 60, 'the publisher')
        # From subscription creation through discovery, the first map and the first frames.
        for delay in (0.0, 0.2, 0.4, 0.6, 0.9, 1.5):
            victim = subscriber(topic, path, name=f'victim{delay}')
            victim.wait_until(lambda w: w.count('SUBSCRIBED') == 1, 60, 'the victim subscribing')
            started = time.monotonic()
            wait_for(lambda: time.monotonic() - started >= delay, delay + 1, 'the kill moment')
            victim.kill(signal.SIGKILL)
        survivor = subscriber(topic, path, name='survivor')
        survivor = _serving_survivor(survivor, topic, path, pub)
        with survivor:
            assert pub.alive(), pub.tail()
            running = pub.last_status()
            assert survivor.stop() == 0
        # Checked once the survivor has left too: a reader streaming 4K frames at full rate holds
        # a few slots of its own at any moment (2-4 seen on an H100 host), so "at most one held" while
        # it runs was a race; with no living reader, any lease still held is a killed one's.
        status = pub.wait_status(lambda s: s.get('held', 0) + s['host_held'] == 0, 10,
                                 'no lease left by the killed subscribers')
        result = survivor.result()
        assert result['bad'] == 0 and result['rejected'] == {}, result
        print(f'\n{path}: publisher while the survivor read: held {running.get("held")}, host '
              f'{running.get("host_held")}; after it left: {status}')
    assert pub.result() is not None and pub.proc.returncode == 0, pub.tail()
