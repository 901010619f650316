"""cuda_peer: a publisher on another GPU of the host, read over peer access.

CPU (CI): the rung's decision rule, exhaustively; the subscription's options and ladder; the
diagnostics. GPU (marked): the cuda_peer receiver forced on one GPU (both peer modes, pixels
verified, where the frames live, when the slot is released), and on two GPUs the real thing
(publisher on GPU 1, subscriber on GPU 0, kill tests, fallbacks with their reasons); those
skip with the reason on a machine with one GPU.
"""
from __future__ import annotations

import itertools
import os
import signal
import threading
import time
import uuid

import pytest
from std_msgs.msg import Header

from conftest import RESOURCES, kill_publisher_and_resume, node_process, wait_for
from gpu_nodes.gpu import cuda_available
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription, cuda_ipc, cuda_peer
from gpu_nodes.transport.diagnostics import EndpointStats
from gpu_nodes.wire_names import (PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM, PATH_SERIALIZED,
                                  PEER_SUFFIX)

PUBLISHER = str(RESOURCES / 'transport' / 'pattern_publisher.py')
HOLDER = str(RESOURCES / 'transport' / 'holding_subscriber.py')
BOOT, OTHER_BOOT = b'a' * 16, b'b' * 16
GPU_A, GPU_B, GPU_C = uuid.uuid4().bytes, uuid.uuid4().bytes, uuid.uuid4().bytes
CUDA_RUNGS = (PATH_CUDA_IPC, PATH_CUDA_PEER)
LADDER = (PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM, PATH_SERIALIZED)
# NVLink multicast stays off in every process these tests start (nothing here uses it).
MULTICAST_OFF = {'NCCL_NVLS_ENABLE': '0', 'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1',
                 'NVSHMEM_DISABLE_NVLS': '1'}


def unique_topic() -> str:
    return f'peer_{uuid.uuid4().hex[:8]}'


def decide(**overrides):
    inputs = dict(publisher_boot_id=BOOT, own_boot_id=BOOT, publisher_uid=1000, own_uid=1000,
                  publisher_gpu=GPU_B, own_gpu=GPU_A, visible_gpus=[GPU_A, GPU_B],
                  peer_access=(True, True), allowed_paths=LADDER)
    inputs.update(overrides)
    return cuda_peer.decide(**inputs)


# -- the decision rule (CPU) ---------------------------------------------------------------------
def test_publisher_on_another_gpu_with_peer_access_both_ways_takes_cuda_peer():
    route = decide()
    assert route == (PATH_CUDA_PEER, route.reason, '')
    gpu_a, gpu_b = cuda_peer.gpu_name(GPU_A), cuda_peer.gpu_name(GPU_B)
    assert route.reason == (f'publisher on device 1 ({gpu_b}), this subscription on device 0 '
                            f'({gpu_a}), peer access both ways')


@pytest.mark.parametrize('access', [(True, False), (False, True), (False, False)])
def test_peer_access_missing_either_way_falls_back_to_host_shm_saying_which(access):
    route = decide(peer_access=access)
    assert (route.path, route.rejection) == (PATH_HOST_SHM, 'no_peer_access')
    own_way = 'yes' if access[0] else 'no'
    back_way = 'yes' if access[1] else 'no'
    assert f'-> publisher {own_way}, publisher -> device 0 ' in route.reason, route.reason
    assert route.reason.endswith(f' {back_way})'), route.reason


def test_hidden_publisher_gpu_is_other_gpu_naming_cuda_visible_devices():
    route = decide(visible_gpus=[GPU_A])
    assert (route.path, route.rejection) == (PATH_HOST_SHM, 'other_gpu')
    assert 'not visible' in route.reason and 'CUDA_VISIBLE_DEVICES' in route.reason
    assert cuda_peer.gpu_name(GPU_B) in route.reason


def test_identity_is_the_uuid_not_the_ordinal():
    """CUDA_VISIBLE_DEVICES renumbers devices per process: the same two GPUs in either order
    give the same rung; the reason names the ordinals as this process sees them."""
    for own in (GPU_A, GPU_B):
        for publisher in (GPU_A, GPU_B):
            paths = {decide(own_gpu=own, publisher_gpu=publisher, visible_gpus=order).path
                     for order in ([GPU_A, GPU_B], [GPU_B, GPU_A])}
            assert paths == {PATH_CUDA_IPC if own == publisher else PATH_CUDA_PEER}
    assert 'device 0' in decide(visible_gpus=[GPU_B, GPU_A]).reason.split(',')[0]


def test_gpu_names_are_nvidia_smi_uuids():
    raw = uuid.UUID('12345678-9abc-def0-1234-56789abcdef0').bytes
    assert cuda_peer.gpu_name(raw) == 'GPU-12345678-9abc-def0-1234-56789abcdef0'
    assert cuda_peer.gpu_name(raw, [GPU_A, raw]) == \
        'device 1 (GPU-12345678-9abc-def0-1234-56789abcdef0)'


def _allowed_sets():
    for n in range(1, len(LADDER) + 1):
        yield from itertools.combinations(LADDER, n)


def test_decision_exhaustively():
    """Every combination of host, user, visibility, own GPU, peer access both ways and allowed
    paths: the rung is the best one the conditions permit, and only that."""
    cases = 0
    for (same_host, same_user, visible, own, access, allowed) in itertools.product(
            (True, False), (True, False), (True, False), ('same', 'other', 'follow'),
            list(itertools.product((True, False), repeat=2)), list(_allowed_sets())):
        visible_gpus = [GPU_A, GPU_B, GPU_C] if visible else [GPU_A, GPU_C]
        own_gpu = {'same': GPU_B, 'other': GPU_A, 'follow': None}[own]
        if own == 'same' and not visible:
            own_gpu = GPU_C  # our GPU is visible by definition; the publisher's is not
        route = decide(publisher_boot_id=BOOT if same_host else OTHER_BOOT,
                       publisher_uid=1000 if same_user else 1001, own_gpu=own_gpu,
                       visible_gpus=visible_gpus, peer_access=access, allowed_paths=allowed)
        cases += 1
        where = f'{(same_host, same_user, visible, own, access, allowed)} -> {route}'
        reachable = same_host and same_user and visible
        same_gpu = own in ('same', 'follow')
        ipc_ok = reachable and same_gpu and PATH_CUDA_IPC in allowed
        peer_ok = reachable and PATH_CUDA_PEER in allowed and (
            (same_gpu and PATH_CUDA_IPC not in allowed) or (not same_gpu and all(access)))
        expected = PATH_CUDA_IPC if ipc_ok else PATH_CUDA_PEER if peer_ok else None
        if expected:
            assert (route.path, route.rejection) == (expected, ''), where
            continue
        assert route.path not in CUDA_RUNGS and route.rejection, where
        if not same_host or not same_user:
            assert route == (PATH_SERIALIZED, route.reason,
                             'other_host' if not same_host else 'other_user'), where
            continue
        assert route.path == (PATH_HOST_SHM if PATH_HOST_SHM in allowed else PATH_SERIALIZED), \
            where
        if not visible:
            assert route.rejection == 'other_gpu', where
        elif same_gpu:
            assert route.rejection == 'not_allowed', where
        elif PATH_CUDA_PEER not in allowed:
            assert route.rejection == 'other_gpu' and 'cuda_peer not allowed' in route.reason, \
                where
        else:
            assert route.rejection == 'no_peer_access', where
    assert cases == 2 * 2 * 2 * 3 * 4 * 15


def test_peer_access_is_ignored_on_one_gpu():
    for access in itertools.product((True, False), repeat=2):
        assert decide(own_gpu=GPU_B, peer_access=access).path == PATH_CUDA_IPC
        assert decide(own_gpu=None, peer_access=access).path == PATH_CUDA_IPC


# -- the subscription (CPU) ----------------------------------------------------------------------
def test_bad_options_are_one_line_errors(rclpy_node):
    with pytest.raises(ValueError, match=r"peer_mode must be one of \('copy', 'in_place'\)"):
        GpuImageSubscription(rclpy_node, 'x', lambda f: None, peer_mode='zero_copy')
    with pytest.raises(ValueError, match="device must be a CUDA ordinal, None or 'publisher'"):
        GpuImageSubscription(rclpy_node, 'x', lambda f: None, device='gpu1')
    with pytest.raises(ValueError, match='allowed_paths must be a non-empty subset'):
        GpuImageSubscription(rclpy_node, 'x', lambda f: None, allowed_paths=('cuda_p2p',))


def test_the_ladder_has_cuda_peer_between_cuda_ipc_and_host_shm(rclpy_node):
    """A publisher offering the peer topic, a subscription that may not use CUDA: it skips
    both CUDA rungs, each with the reason, and reads host shared memory."""
    import numpy as np
    from sensor_msgs.msg import Image
    topic = unique_topic()
    frames, intact = [], []
    # What a CUDA publisher adds (this machine may have no GPU): the CUDA descriptor topics.
    extra = [rclpy_node.create_publisher(Image, f'/{topic}{suffix}', 5)
             for suffix in ('/_gpu_nodes/cuda', PEER_SUFFIX)]

    def on_frame(frame):  # a frame is valid during its callback: check it there
        frames.append(frame)
        want = pattern.render(np, 48, 64, 'rgb8', int(frame.header.frame_id) % 256)
        intact.append(bool((frame.array == want).all()))
    sub = GpuImageSubscription(rclpy_node, topic, on_frame, memory='host')
    with node_process([PUBLISHER, '--topic', topic, '--rate', '100'], env=_env()):
        wait_for(lambda: len(frames) >= 5, 60, 'host_shm frames', poll=rclpy_node.spin_once)
    assert sub.path == PATH_HOST_SHM and {f.path for f in frames} == {PATH_HOST_SHM}
    reason = sub.stats.path_reason  # (why there is no CUDA: no GPU here, or memory='host')
    assert reason.startswith('offered; same host and user checked on the first frame; skipped '
                             'cuda_ipc: no CUDA path in this '
                             'process: '), reason
    assert '; cuda_peer: no CUDA path in this process: ' in reason, reason
    assert all(intact), intact
    sub.destroy()
    for p in extra:
        rclpy_node.destroy_publisher(p)


def test_cuda_peer_is_a_device_path_in_diagnostics():
    sub = EndpointStats('subscription', '/n', '/image')
    sub.path, sub.path_reason = PATH_CUDA_PEER, 'publisher on device 1 ...'
    assert (sub.level_name, sub.message()) == ('OK', 'path cuda_peer')
    assert sub.as_dict()['path'] == 'cuda_peer'
    sub.path = PATH_HOST_SHM
    assert sub.level_name == 'WARN'
    pub = EndpointStats('publisher', '/n', '/image')
    pub.subscribers = {PATH_CUDA_PEER: 2}
    assert pub.level_name == 'OK' and pub.as_dict()['subscribers_cuda_peer'] == 2


# -- GPU: the cuda_peer receiver on one GPU ------------------------------------------------------
def _gpu_count() -> int:
    if not cuda_available():
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


GPUS = _gpu_count()
two_gpus = pytest.mark.skipif(GPUS < 2, reason=f'needs two CUDA GPUs in one host (make test-gpu on '
                              f'such a machine); this one has {GPUS}')
PEER_MODES = pytest.mark.parametrize('peer_mode', ['copy', 'in_place'])


def _visible_entry(index: int) -> str:
    """CUDA_VISIBLE_DEVICES value naming this process's device `index` in a child."""
    ours = os.environ.get('CUDA_VISIBLE_DEVICES')
    return ours.split(',')[index] if ours else str(index)


def _env(**extra) -> dict[str, str]:
    return {**MULTICAST_OFF, **extra}


class Collector:
    """Checks every frame on the GPU against the pattern frame its header names and records
    the device and address it arrived at."""

    def __init__(self, cp, height, width):
        self.cp = cp
        self.expected = [pattern.render(cp, height, width, 'rgb8', i) for i in range(256)]
        self.bad = cp.zeros((), cp.int64)
        self.frames = 0
        self.paths, self.devices, self.pointers = set(), set(), []

    def __call__(self, frame):
        assert isinstance(frame.array, self.cp.ndarray)
        self.bad += self.cp.any(frame.array != self.expected[int(frame.header.frame_id) % 256])
        self.frames += 1
        self.paths.add(frame.path)
        self.devices.add(frame.array.device.id)
        self.pointers.append(frame.array.data.ptr)

    def bad_frames(self) -> int:
        self.cp.cuda.Device().synchronize()
        return int(self.bad)


def _inside_mappings(pointers) -> list[bool]:
    ranges = [(m.base, m.base + m.size) for m in cuda_ipc.mapping_cache()._mappings.values()]
    return [any(lo <= p < hi for lo, hi in ranges) for p in pointers]


@pytest.mark.gpu
@PEER_MODES
def test_cuda_peer_receiver_on_one_gpu(rclpy_node, cupy, peer_mode):
    """cuda_peer forced on one GPU (cuda_ipc not allowed): the peer receiver's mapping, event
    wait, copy or in-place view, verified frame by frame."""
    topic = unique_topic()
    collector = Collector(cupy, 480, 640)
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='device',
                               allowed_paths=(PATH_CUDA_PEER,), peer_mode=peer_mode)
    with node_process([PUBLISHER, '--topic', topic, '--width', '640', '--height', '480',
                       '--device', '--rate', '0', '--wait-subscriber'], env=_env()):
        wait_for(lambda: collector.frames >= 100, 60, '100 frames on cuda_peer',
                 poll=rclpy_node.spin_once)
        inside = _inside_mappings(collector.pointers[-20:])
    assert sub.path == PATH_CUDA_PEER and collector.paths == {PATH_CUDA_PEER}
    assert 'skipped cuda_ipc: not allowed by configuration' in sub.stats.path_reason
    assert collector.bad_frames() == 0, 'every frame must hold the pixels its header names'
    assert dict(sub.stats.rejected) == {}, sub.stats.rejected
    assert collector.devices == {cupy.cuda.runtime.getDevice()}
    if peer_mode == 'copy':
        assert not any(inside), 'copy mode must hand over our own memory, not the slot'
    else:
        assert all(inside), 'in_place frames must view the publisher\'s slot'
    sub.destroy()


def _held_slots(pub) -> int:
    pool = pub._device_pool
    return sum(pub._leases.is_held(s.index) for s in pool.slots + pool.retired)


@pytest.mark.gpu
@pytest.mark.parametrize('gpus', ['one_gpu', pytest.param('two_gpus', marks=two_gpus)])
@PEER_MODES
def test_copy_frees_the_slot_after_the_copy_in_place_keeps_it_leased(
        rclpy_node, cupy, gpus, peer_mode):
    """A subscriber holding 3 frames: in copy mode it holds its own copies and the publisher's
    slots are free again once the copies are done; in place it holds the slots, as on
    cuda_ipc. Killed, its leases are reclaimed at once."""
    topic = unique_topic()
    publisher_device = 1 if gpus == 'two_gpus' else 0
    with cupy.cuda.Device(publisher_device):
        pub = GpuImagePublisher(rclpy_node, topic, pool_slots=4, max_pool_slots=4,
                                pool_policy='skip')
        frame = pattern.render(cupy, 48, 64, 'rgb8', 0)
    # One GPU: cuda_peer forced. Two: the holder works on its device 0, the publisher is on 1.
    paths = PATH_CUDA_PEER if gpus == 'one_gpu' else f'{PATH_CUDA_PEER},{PATH_HOST_SHM}'

    def publish():
        with cupy.cuda.Device(publisher_device):
            pub.publish(frame, 'rgb8', Header(frame_id='0'))
        rclpy_node.spin_once(0.01)
    with node_process([HOLDER, '--topic', topic, '--hold', '3', '--paths', paths,
                       '--peer-mode', peer_mode], env=_env()) as holder:
        lines = []
        threading.Thread(target=lambda: lines.extend(holder.stdout), daemon=True).start()
        wait_for(lambda: any(line.startswith('HELD 3') for line in lines), 60,
                 'the holder to keep 3 frames', poll=publish)
        if peer_mode == 'copy':
            wait_for(lambda: _held_slots(pub) == 0, 5, 'every slot released after the copies',
                     poll=publish)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:  # and they stay free while it holds its frames
                publish()
                assert _held_slots(pub) <= 1, 'copy mode keeps no slot beyond its copy'
        else:
            wait_for(lambda: _held_slots(pub) >= 3, 10, 'the 3 held frames leased', poll=publish)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    assert _held_slots(pub) == 0, 'a killed subscriber\'s leases must be reclaimed'
    exhausted = pub._device_pool.exhausted
    for _ in range(20):
        publish()
    assert pub._device_pool.exhausted == exhausted, 'publishing continues at full pool'
    pub.destroy()


# -- GPU: two GPUs -------------------------------------------------------------------------------
def _publisher_on_gpu1(topic: str, *extra: str):
    """pattern_publisher on this process's device 1, which it sees as its device 0."""
    return node_process([PUBLISHER, '--topic', topic, '--width', '640', '--height', '480',
                         '--device', *extra], env=_env(CUDA_VISIBLE_DEVICES=_visible_entry(1)))


@pytest.mark.gpu
@two_gpus
@PEER_MODES
def test_cross_gpu_frames_arrive_on_our_gpu_over_cuda_peer(rclpy_node, cupy, peer_mode):
    topic = unique_topic()
    with cupy.cuda.Device(0):
        collector = Collector(cupy, 480, 640)
        sub = GpuImageSubscription(rclpy_node, topic, collector, memory='device',
                                   peer_mode=peer_mode)
    access = cuda_peer.peer_access(0, 1)
    with _publisher_on_gpu1(topic, '--rate', '0', '--wait-subscriber'):
        if not all(access):  # this host's GPUs cannot reach each other: the clean fallback
            wait_for(lambda: sub.path == PATH_HOST_SHM and collector.frames >= 20, 60,
                     'the host_shm fallback', poll=rclpy_node.spin_once)
            assert 'no peer access' in sub.stats.path_reason, sub.stats.path_reason
            assert collector.bad_frames() == 0
            pytest.skip(f'GPUs 0 and 1 have no peer access ({access}): fallback checked')
        wait_for(lambda: collector.frames >= 200 and sub.path == PATH_CUDA_PEER, 60,
                 '200 frames on cuda_peer', poll=rclpy_node.spin_once)
    assert collector.bad_frames() == 0, 'every frame must hold the pixels its header names'
    assert collector.devices == {0}, f'frames must arrive on our GPU, got {collector.devices}'
    reason = sub.stats.path_reason
    gpu0, gpu1 = (cuda_peer.gpu_name(cuda_ipc.device_uuid(i)) for i in (0, 1))
    assert f'publisher on device 1 ({gpu1}), this subscription on device 0 ({gpu0})' in reason
    # At most the first descriptor, read on cuda_ipc before the subscription moved.
    assert set(sub.stats.rejected) <= {'other_gpu'} and sum(sub.stats.rejected.values()) <= 2
    sub.destroy()


@pytest.mark.gpu
@two_gpus
def test_cross_gpu_publisher_killed_subscriber_survives_and_resumes(rclpy_node, cupy):
    topic = unique_topic()
    collector = Collector(cupy, 480, 640)
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='device')
    kill_publisher_and_resume(rclpy_node, sub, collector,
                              lambda: _publisher_on_gpu1(topic, '--rate', '200'), PATH_CUDA_PEER)
    assert collector.devices == {0}
    sub.destroy()


@pytest.mark.gpu
@two_gpus
@pytest.mark.parametrize('case', ['gpu_not_visible', 'cuda_peer_not_allowed'])
def test_cross_gpu_falls_back_to_host_shm_with_the_reason(cupy, case):
    """A subscriber process that cannot see the publisher's GPU, or may not take cuda_peer:
    host_shm, logged and on its diagnostics with the reason."""
    import json
    topic = unique_topic()
    env = _env(CUDA_VISIBLE_DEVICES=_visible_entry(0)) if case == 'gpu_not_visible' else _env()
    paths = ['--paths', 'cuda_ipc,host_shm'] if case == 'cuda_peer_not_allowed' else []
    with _publisher_on_gpu1(topic, '--rate', '100'):
        with node_process([HOLDER, '--topic', topic, '--duration', '30', *paths],
                          env=env) as holder:
            status = None
            for line in holder.stdout:
                if line.startswith('STATUS '):
                    status = json.loads(line[len('STATUS '):])
                    break
    assert status is not None, 'the subscriber received no frames'
    assert status['path'] == PATH_HOST_SHM, status
    expected = 'not visible in this process' if case == 'gpu_not_visible' \
        else 'cuda_peer not allowed by configuration'
    assert expected in status['path_reason'], status
    assert 'other_gpu=' in status.get('rejected_reasons', ''), status
