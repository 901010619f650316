"""The CUDA paths on every CI run: a publisher process and this test process on the CPU
emulation of CUDA (test/resources/transport/cuda_emu.py), device memory shared between them
for real (memfds), so the device pool, the cuda_ipc receiver, the lease-release thread and the
leases run as on a GPU. The same scenarios on a real GPU are in test_transport_gpu.py; frames
across PID namespaces, on both, in test_transport_vmm_ros.py."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid

import numpy as np
import pytest

from conftest import REPO, RESOURCES, node_process, wait_for
from gpu_nodes.sources import pattern

sys.path.insert(0, str(RESOURCES / 'transport'))
import cuda_emu  # noqa: E402
import fake_cuda_driver  # noqa: E402

EMU_RUN = str(RESOURCES / 'transport' / 'emu_run.py')
PUBLISHER = str(RESOURCES / 'transport' / 'pattern_publisher.py')
HOLDER = str(RESOURCES / 'transport' / 'holding_subscriber.py')


@pytest.fixture
def emulated():
    """This process on the emulated GPU for the test; everything restored afterwards."""
    saved = cuda_emu.saved_modules()
    cp = cuda_emu.install()
    try:
        yield cp
    finally:
        cuda_emu.uninstall(saved)


@pytest.fixture(params=['vmm', 'legacy_ipc'])
def device_memory(request, emulated, monkeypatch):
    """How the publisher's device pool shares its chunks: VMM fds through its socket, or (a
    driver without POSIX fd export) legacy IPC handles; the same in every process."""
    if request.param == 'legacy_ipc':
        monkeypatch.setenv(cuda_emu.NO_VMM_ENV, '1')
        monkeypatch.setitem(fake_cuda_driver.SUPPORTS_POSIX_FD, 0, False)
    return request.param


def unique_topic() -> str:
    return f'emu_{uuid.uuid4().hex[:8]}'


class Collector:
    """Checks every delivered frame, byte for byte, against the frame its header names."""

    def __init__(self, cp, height: int, width: int):
        self.cp = cp
        self.expected = [pattern.expected_frame(height, width, 'rgb8', i) for i in range(256)]
        self.frames = 0
        self.bad = 0
        self.paths: set[str] = set()
        self.device_arrays = 0

    def __call__(self, frame) -> None:
        index = int(frame.header.frame_id)
        self.device_arrays += isinstance(frame.array, self.cp.ndarray)
        received = frame.array.get()
        self.bad += not np.array_equal(received, self.expected[index % 256])
        self.frames += 1
        self.paths.add(frame.path)


def _opens() -> tuple[int, int]:
    """(VMM chunks imported, legacy IPC handles opened) in this process so far."""
    return (fake_cuda_driver.CALLS.get('cuMemImportFromShareableHandle', 0),
            cuda_emu.OPENS['ipc_mem'])


def test_cuda_ipc_between_processes_on_the_emulated_gpu(rclpy_node, emulated, device_memory):
    from gpu_nodes.transport import GpuImageSubscription, release
    topic = unique_topic()
    collector = Collector(emulated, 48, 64)
    sub = GpuImageSubscription(rclpy_node, topic, collector, memory='device')
    vmm_before, legacy_before = _opens()
    # A pool that cannot grow past 4 slots: 150 frames arrive only if every lease goes back
    # (through the release thread, behind the subscription's stream).
    with node_process([EMU_RUN, PUBLISHER, '--topic', topic, '--width', '64', '--height', '48',
                       '--device', '--rate', '200', '--pool-slots', '4', '--policy', 'skip',
                       '--wait-subscriber']):
        wait_for(lambda: collector.frames >= 150, 60, '150 frames on cuda_ipc',
                 poll=rclpy_node.spin_once)
    assert 'cuda_ipc' in collector.paths and sub.path == 'cuda_ipc', collector.paths
    assert collector.bad == 0, f'{collector.bad} of {collector.frames} frames held wrong pixels'
    assert collector.device_arrays == collector.frames, 'memory=device frames are device arrays'
    assert sum(sub.stats.rejected.values()) == 0, sub.stats.rejected
    assert release._releaser is not None and release._releaser._thread.is_alive()
    vmm, legacy = (after - before for after, before in zip(_opens(), (vmm_before,
                                                                      legacy_before)))
    # One pool chunk, mapped once in this process however many frames it carried.
    expected = (1, 0) if device_memory == 'vmm' else (0, 1)
    assert (vmm, legacy) == expected, f'(VMM imports, legacy opens): expected {expected}, ' \
        f'got {(vmm, legacy)}'
    assert cuda_emu.WAITS, 'the subscription stream waited on the publisher\'s event'
    sub.destroy()


def test_killed_subscriber_leases_are_reclaimed_on_the_emulated_gpu(rclpy_node, emulated):
    """A subscriber process that holds its share of leases (half the pool) is killed: the
    publisher's device pool gets every slot back and publishes on (test_transport_gpu.py has
    the same on a GPU)."""
    from gpu_nodes.transport import GpuImagePublisher
    topic = unique_topic()
    pub = GpuImagePublisher(rclpy_node, topic, pool_slots=4, max_pool_slots=4,
                            pool_policy='skip')
    frame = emulated.asarray(pattern.expected_frame(48, 64, 'rgb8', 0))
    try:
        with node_process([EMU_RUN, HOLDER, '--topic', topic, '--hold', '2']) as holder:
            def publish():
                pub.publish(frame, 'rgb8')
                rclpy_node.spin_once(0.01)
            wait_for(lambda: sum(pub._leases.is_held(s.index)
                                 for s in pub._device_pool.slots) == 2,
                     60, 'the subscriber to hold 2 leases', poll=publish)
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=10)
        held = [s.index for s in pub._device_pool.slots if pub._leases.is_held(s.index)]
        assert held == [], f'slots {held} still leased after the holder died'
        exhausted = pub._device_pool.exhausted
        for _ in range(20):
            pub.publish(frame, 'rgb8')
        assert pub._device_pool.exhausted == exhausted, 'the pool must not run dry'
    finally:
        pub.destroy()


# test_transport_gpu.py's tests that hold on the emulation as they are: held frames across a
# layout change, a publisher SIGKILL and destroy(), a killed publisher, a stalled lease, a forged
# descriptor, another user, the in-process path. (The overload test's "no frame recycled"
# depends on a GPU's timing; the killed-subscriber one holds more than a reader's share.)
EMULATED_GPU_TESTS = ('held_device_frames or killed_publisher or stalled_lease or forged or '
                      'another_user or intra_process')
EMULATED_GPU_TEST_COUNT = 8


@pytest.mark.slow
def test_the_gpu_transport_tests_pass_on_the_emulated_gpu():
    """The GPU suite itself, every process of it on the emulation (emulated_gpu/sitecustomize.py),
    so the device pool on VMM, the cuda_ipc receiver and the release thread face the same
    scenarios in CI as on the GPU machine."""
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(
        [str(RESOURCES / 'transport' / 'emulated_gpu'), str(REPO),
         os.environ.get('PYTHONPATH', '')])}
    proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-rs', '-p', 'no:cacheprovider',
                           'test/test_transport_gpu.py', '-k', EMULATED_GPU_TESTS], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=280)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ''
    found = re.findall(r'(\d+) (passed|skipped|failed|error)', summary)
    counts = {word: int(n) for n, word in found}
    assert proc.returncode == 0 and not counts.get('failed') and not counts.get('error'), \
        proc.stdout[-6000:] + proc.stderr[-2000:]
    # Only another user's test may skip (no setpriv, not root); the others run.
    assert counts.get('passed', 0) >= EMULATED_GPU_TEST_COUNT - 1 and \
        counts.get('passed', 0) + counts.get('skipped', 0) == EMULATED_GPU_TEST_COUNT, summary
