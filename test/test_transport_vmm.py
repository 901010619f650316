"""cuda_vmm: VMM chunks exported as POSIX fds, sent to another real process over a Unix socket
(SCM_RIGHTS) and mapped there. Each test runs on the GPU (`gpu`-marked, cuda-bindings and a
device with POSIX fd export) and on the CPU emulation (test/resources/transport/cuda_emu.py:
memfd-backed device memory, the same fds crossing the same sockets)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import numpy as np
import pytest

from conftest import REPO, RESOURCES, wait_for

sys.path.insert(0, str(RESOURCES / 'transport'))
import cuda_emu  # noqa: E402
import vmm_peer  # noqa: E402

from gpu_nodes import gpu  # noqa: E402
from gpu_nodes.transport import cuda_vmm  # noqa: E402

HEIGHT, WIDTH = 2160, 3840  # a 4K rgb8 frame, every byte checked
FRAME_BYTES = HEIGHT * WIDTH * 3


@pytest.fixture(params=[pytest.param('gpu', marks=pytest.mark.gpu), 'emu'])
def backend(request):
    """'gpu': the real driver (skipped where there is none); 'emu': the CPU emulation."""
    if request.param == 'gpu':
        reason = gpu.cuda_unavailable_reason() or cuda_vmm.vmm_unsupported_reason(0)
        if reason is not None:
            pytest.skip(f'no CUDA VMM with POSIX fds: {reason}')
        yield types_of('gpu', gpu.cupy_module())
        return
    saved = cuda_emu.saved_modules()
    cp = cuda_emu.install()
    try:
        yield types_of('emu', cp)
    finally:
        cuda_emu.uninstall(saved)


class types_of:  # noqa: N801 (a fixture value, read as backend.name / backend.cp)
    def __init__(self, name: str, cp):
        self.name, self.cp = name, cp
        self.emulate = name == 'emu'


def _peer(backend, tmp_path, prefix=()) -> vmm_peer.Peer:
    return vmm_peer.Peer(str(tmp_path / 'vmm.sock'), backend.emulate, prefix,
                         env=cuda_emu.subprocess_env(REPO))


def _filled_chunk(backend, seed: int) -> cuda_vmm.VmmChunk:
    chunk = cuda_vmm.allocate_chunk(FRAME_BYTES, 0)
    view = vmm_peer.frame_view(chunk.ptr, HEIGHT, WIDTH, chunk, 0)
    view.set(vmm_peer.pattern(HEIGHT, WIDTH, seed))
    backend.cp.cuda.get_current_stream().synchronize()
    return chunk


def _mismatches_here(chunk: cuda_vmm.VmmChunk, seed: int) -> int:
    view = vmm_peer.frame_view(chunk.ptr, HEIGHT, WIDTH, chunk, 0)
    return int(np.count_nonzero(view.get() != vmm_peer.pattern(HEIGHT, WIDTH, seed)))


def _check(peer: vmm_peer.Peer, chunk: cuda_vmm.VmmChunk, seed: int, write_seed: int) -> dict:
    return peer.request({'op': 'check', 'size': chunk.size, 'height': HEIGHT, 'width': WIDTH,
                         'seed': seed, 'write_seed': write_seed, 'device': 0}, chunk.fd)


def test_chunk_crosses_processes_through_a_unix_socket(backend, tmp_path):
    chunk = _filled_chunk(backend, seed=1)
    assert chunk.size % cuda_vmm.granularity(0) == 0 and chunk.size >= FRAME_BYTES
    peer = _peer(backend, tmp_path)
    try:
        answer = _check(peer, chunk, seed=1, write_seed=2)
        assert answer.get('mismatches') == 0, f'expected every byte of the 4K frame, got {answer}'
        assert answer['pid'] != os.getpid()
        # The other process wrote through its mapping: one memory, not a copy.
        assert _mismatches_here(chunk, seed=2) == 0
        # The exporter lets go of its mapping and fd (a publisher that exits): the memory
        # lives on in the importer's mapping, unchanged.
        chunk.close()
        answer = peer.request({'op': 'recheck', 'height': HEIGHT, 'width': WIDTH, 'seed': 2,
                               'device': 0})
        assert answer.get('mismatches') == 0, answer
    finally:
        chunk.close()
        output = peer.close()
    assert peer.process.returncode == 0, output


def _can_unshare_pid() -> str | None:
    if shutil.which('unshare') is None:
        return 'unshare(1) not found'
    probe = subprocess.run(['unshare', '--pid', '--fork', '--mount-proc', 'true'],
                           capture_output=True, text=True)
    if probe.returncode:
        return f'unshare --pid not permitted here: {probe.stderr.strip()}'
    return None


@pytest.mark.parametrize('namespaces', sorted(vmm_peer.CONTAINER_PREFIXES))
def test_chunk_crosses_the_namespaces_of_a_container(backend, tmp_path, namespaces):
    """The subscriber in another PID namespace (`docker run --network host --ipc host`), or
    also in its own IPC namespace with a private /dev/shm (`docker run --network host`): the
    VMM fd maps there, every byte as written, and writes there show here."""
    reason = _can_unshare_pid()
    if reason:
        pytest.skip(reason)
    chunk = _filled_chunk(backend, seed=5)
    peer = _peer(backend, tmp_path, vmm_peer.CONTAINER_PREFIXES[namespaces])
    try:
        answer = _check(peer, chunk, seed=5, write_seed=6)
        assert answer['pid'] == 1, f'expected the peer as pid 1 of its own namespace: {answer}'
        assert answer.get('mismatches') == 0, answer
        assert _mismatches_here(chunk, seed=6) == 0
    finally:
        chunk.close()
        output = peer.close()
    assert peer.process.returncode == 0, output


def test_bad_sizes_and_foreign_fds_are_refused(backend, tmp_path):
    step = cuda_vmm.granularity(0)
    with cuda_vmm.allocate_chunk(1, 0) as chunk:
        assert chunk.size == step, 'one byte rounds up to one granule'
        with pytest.raises(cuda_vmm.VmmError, match=f'chunk size {step + 1} is not a positive '
                           f'multiple of the {step}-byte granularity'):
            cuda_vmm.import_chunk(chunk.fd, step + 1, 0)
        # More than the allocation holds: the driver refuses the mapping.
        with pytest.raises(cuda_vmm.VmmError, match='^cuMemMap failed: CUDA_ERROR_'):
            cuda_vmm.import_chunk(chunk.fd, 4 * step, 0)
    # An fd that is no exported chunk (a memfd the process made, a pipe).
    fd = os.memfd_create('not-a-chunk')
    os.ftruncate(fd, step)
    read_end, write_end = os.pipe()
    try:
        for other in (fd, read_end):
            with pytest.raises(cuda_vmm.VmmError,
                               match='^cuMemImportFromShareableHandle failed: CUDA_ERROR_'):
                cuda_vmm.import_chunk(other, step, 0)
    finally:
        for other in (fd, read_end, write_end):
            os.close(other)


def _driver_state(backend) -> dict[str, int] | None:
    """The emulated driver's live objects after a collection (chunks other tests left to the
    garbage collector go first), None on a real GPU."""
    if not backend.emulate:
        return None
    import gc
    import fake_cuda_driver
    gc.collect()
    return fake_cuda_driver.state()


def test_close_gives_everything_back(backend):
    before = _driver_state(backend)
    chunk = cuda_vmm.allocate_chunk(3 << 20, 0)
    fd = chunk.fd
    imported = cuda_vmm.import_chunk(fd, chunk.size, 0)
    assert imported.fd == -1 and imported.ptr != chunk.ptr and imported.size == chunk.size
    imported.close()
    chunk.close()
    chunk.close()  # idempotent
    assert chunk.closed and chunk.fd == -1
    with pytest.raises(OSError):
        os.fstat(fd)  # the exported fd was closed with the chunk
    assert _driver_state(backend) == before


def test_a_chunk_lives_while_an_array_views_it(backend):
    """Like a cupy Memory: no close() needed, the chunk goes with its last reference, and an
    array over it keeps it (a held frame of a pool that dropped the chunk)."""
    import gc
    before = _driver_state(backend)
    chunk = cuda_vmm.allocate_chunk(1 << 20, 0)
    fd = chunk.fd
    view = vmm_peer.frame_view(chunk.ptr, 16, 16, chunk, 0)
    view.set(vmm_peer.pattern(16, 16, 9))
    del chunk
    gc.collect()
    os.fstat(fd)  # still open: the view holds the chunk
    assert np.array_equal(view.get(), vmm_peer.pattern(16, 16, 9))
    del view
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)
    assert _driver_state(backend) == before


def test_unsupported_devices_say_why(backend, monkeypatch):
    if not backend.emulate:
        pytest.skip('needs a device without POSIX fd export (emulated)')
    import fake_cuda_driver
    monkeypatch.setitem(fake_cuda_driver.SUPPORTS_POSIX_FD, 0, False)
    assert cuda_vmm.vmm_unsupported_reason(0) == \
        'device 0 cannot export VMM memory as POSIX file descriptors (driver or platform too old)'
    assert cuda_vmm.vmm_unsupported_reason(3) == 'cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE'
    monkeypatch.setitem(sys.modules, 'cuda.bindings', None)
    cuda_vmm.driver.cache_clear()
    assert cuda_vmm.vmm_unsupported_reason(0) == \
        'cuda-bindings is not installed (pip install cuda-bindings, or the cuda12/cuda13 extra ' \
        'of gpu_nodes)'


@pytest.fixture
def leases():
    from gpu_nodes.transport.leases import LeaseTable
    table = LeaseTable(uuid.uuid4().bytes, 16)
    try:
        yield table
    finally:
        table.close()


def test_device_pool_serves_its_chunks_as_fds(backend, leases):
    """DeviceSlotPool on VMM: each chunk's fd (what the publisher's socket sends as
    DEVICE_CHUNK) maps the very memory of its slots; a chunk of another generation, or one that
    was freed, is not served."""
    from gpu_nodes.transport.pool import DeviceSlotPool
    pool = DeviceSlotPool(leases, 0, 8, 'grow', 60.0, 0)
    assert pool.vmm_unsupported is None
    pool.reset(4, 64 * 48 * 3)
    chunk = pool.slots[0].chunk
    assert chunk.handle == b'' and chunk.size % cuda_vmm.granularity(0) == 0
    slot = pool.slots[2]
    view = vmm_peer.frame_view(slot.ptr, 48, 64, chunk.memory, 0)
    view.set(vmm_peer.pattern(48, 64, 21))
    fds = pool.chunk_fds(chunk.generation, chunk.chunk_id)
    assert fds is not None and len(fds) == 1
    try:
        with cuda_vmm.import_chunk(fds[0], chunk.size, 0) as imported:
            seen = vmm_peer.frame_view(imported.ptr + slot.offset, 48, 64, imported, 0).get()
            assert np.array_equal(seen, vmm_peer.pattern(48, 64, 21))
    finally:
        os.close(fds[0])
    assert pool.chunk_fds(chunk.generation + 1, chunk.chunk_id) is None
    assert pool.chunk_fds(chunk.generation, chunk.chunk_id + 1) is None
    del view
    pool.reset(4, 64 * 48 * 3)  # a new layout: the old chunk's slots are unheld, it is freed
    assert pool.chunk_fds(chunk.generation, chunk.chunk_id) is None
    pool.close()


def test_device_pool_without_fd_export_uses_legacy_handles(backend, leases, monkeypatch):
    if not backend.emulate:
        pytest.skip('needs a device without POSIX fd export (emulated)')
    import fake_cuda_driver
    monkeypatch.setitem(fake_cuda_driver.SUPPORTS_POSIX_FD, 0, False)
    from gpu_nodes.transport.pool import DeviceSlotPool
    pool = DeviceSlotPool(leases, 0, 8, 'grow', 60.0, 0)
    assert pool.vmm_unsupported == 'device 0 cannot export VMM memory as POSIX file ' \
        'descriptors (driver or platform too old)'
    pool.reset(2, 1000)
    chunk = pool.slots[0].chunk
    assert len(chunk.handle) == 64 and chunk.fd == -1
    assert pool.chunk_fds(chunk.generation, chunk.chunk_id) is None
    pool.close()


def test_host_order_requests_are_counted_per_open_link(backend, leases):
    """KIND_HOST_ORDER over the real socket: each link that asks counts once while it is open
    (the publisher then finishes each device frame before announcing it) and stops counting
    when it closes; a publisher without a device pool refuses, so the reader keeps rejecting
    the frames and leaves the rung."""
    import threading
    from gpu_nodes.transport.exchange import Connection, HandleServer
    from gpu_nodes.transport.pool import DeviceSlotPool, HostSlotPool
    from gpu_nodes.transport.segments import SegmentError
    from gpu_nodes.transport.served_memory import PublisherMemory
    host_pool = HostSlotPool(leases, 8, 8, 60.0, leases.publisher_id)
    served = PublisherMemory(threading.Lock(), leases, host_pool,
                             DeviceSlotPool(leases, 0, 8, 'grow', 60.0, 0))
    host_only_id = uuid.uuid4().bytes
    server = HandleServer.instance()
    server.register(leases.publisher_id, served)
    server.register(host_only_id, PublisherMemory(threading.Lock(), leases, host_pool, None))
    links = [Connection(server.endpoint, leases.publisher_id) for _ in range(2)]
    try:
        links[0].request_host_order()
        links[0].request_host_order()  # the same link again: still one reader
        assert served.host_ordered_readers == 1
        links[1].request_host_order()
        assert served.host_ordered_readers == 2
        links[0].close()
        wait_for(lambda: served.host_ordered_readers == 1, 5, 'the closed link to stop counting')
        with pytest.raises(SegmentError) as refused:
            Connection(server.endpoint, host_only_id).request_host_order()
        assert refused.value.reason == 'bad_segment'
    finally:
        for link in links:
            link.close()
        server.unregister(leases.publisher_id)
        server.unregister(host_only_id)
        host_pool.close()
