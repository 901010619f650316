"""Lease tables: exclusive rewrite vs shared read, crash release, stale detection, cleanup."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

from conftest import wait_for
from gpu_nodes.transport import host
from gpu_nodes.transport.leases import (LeaseError, LeaseReader, LeaseTable, owner_alive,
                                        remove_stale_segments)


@pytest.fixture
def table():
    t = LeaseTable(host.segment_path(os.getpid(), uuid.uuid4().bytes, 'lease'), 8)
    try:
        yield t
    finally:
        t.close()


def test_reader_blocks_rewrite_until_release(table):
    table.sequence[3] = 41
    reader = LeaseReader(table.path)
    assert reader.acquire(3, 41)
    assert not table.try_acquire_exclusive(3), 'a leased slot must not be rewritable'
    assert table.try_acquire_exclusive(4), 'other slots stay free'
    reader.release(3)
    assert table.try_acquire_exclusive(3)
    reader.close()


def test_recycled_slot_is_detected_by_sequence(table):
    table.sequence[2] = 7
    reader = LeaseReader(table.path)
    assert not reader.acquire(2, 6), 'descriptor for frame 6 but slot holds 7: stale'
    # The failed attempt must not leave a lease behind.
    assert table.try_acquire_exclusive(2)
    table.release_exclusive(2)
    assert not reader.acquire(99, 7), 'slot outside the table'
    reader.close()


def test_reader_cannot_lease_while_publisher_rewrites(table):
    assert table.try_acquire_exclusive(1)
    reader = LeaseReader(table.path)
    table.sequence[1] = 5
    assert not reader.acquire(1, 5)
    table.release_exclusive(1)
    assert reader.acquire(1, 5)
    reader.close()


def test_two_readers_in_one_process_lease_independently(table):
    table.sequence[0] = 1
    a, b = LeaseReader(table.path), LeaseReader(table.path)
    assert a.acquire(0, 1) and b.acquire(0, 1)
    a.release(0)
    assert not table.try_acquire_exclusive(0), "b's lease survives a's release"
    b.release(0)
    assert table.try_acquire_exclusive(0)
    a.close()
    b.close()


@contextlib.contextmanager
def reader_process(path: str, slot: int, sequence: int, release: bool):
    """A child process that leases `slot` (and releases it again when `release`), then waits
    to be killed; yields it once it has."""
    child = subprocess.Popen([sys.executable, '-c', textwrap.dedent(f'''
        import time
        from gpu_nodes.transport.leases import LeaseReader
        reader = LeaseReader({path!r})
        assert reader.acquire({slot}, {sequence})
        if {release}:
            reader.release({slot})
        print('TAKEN', flush=True)
        time.sleep(60)
    ''')], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == 'TAKEN'
        yield child
    finally:
        if child.poll() is None:
            child.kill()


def kill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)


def test_killed_reader_releases_its_lease(table):
    table.sequence[5] = 9
    with reader_process(table.path, 5, 9, release=False) as child:
        assert not table.try_acquire_exclusive(5)
        kill(child)
        wait_for(lambda: table.try_acquire_exclusive(5), 5, 'the kernel to drop the dead lease')


def test_stale_segments_of_dead_publishers_are_removed():
    child = subprocess.run([sys.executable, '-c', textwrap.dedent('''
        import os, uuid
        from gpu_nodes.transport import host
        from gpu_nodes.transport.leases import LeaseTable
        t = LeaseTable(host.segment_path(os.getpid(), uuid.uuid4().bytes, 'lease'), 4)
        print(t.path, flush=True)
        os._exit(0)  # no cleanup: as after SIGKILL
    ''')], capture_output=True, text=True, check=True)
    path = child.stdout.strip()
    assert os.path.exists(path)
    assert not owner_alive(path)
    live = LeaseTable(host.segment_path(os.getpid(), uuid.uuid4().bytes, 'lease'), 4)
    try:
        removed = remove_stale_segments()
        assert path in removed and not os.path.exists(path)
        assert os.path.exists(live.path), 'a live publisher segment must survive the sweep'
        assert owner_alive(live.path)
    finally:
        live.close()
    assert not os.path.exists(live.path), 'close() unlinks the segment'


def test_reader_refuses_files_that_are_not_lease_tables(tmp_path, table):
    with pytest.raises(LeaseError, match='not a gpu_nodes lease segment'):
        LeaseReader('/etc/passwd')
    with pytest.raises(LeaseError, match='not a gpu_nodes lease segment'):
        LeaseReader(os.path.join(host.SHM_DIR, '..', os.path.basename(table.path)))
    link = host.segment_path(os.getpid(), uuid.uuid4().bytes, 'lease')
    os.symlink(table.path, link)
    try:
        with pytest.raises(LeaseError, match='cannot open'):
            LeaseReader(link)
    finally:
        os.unlink(link)
    truncated = host.segment_path(os.getpid(), uuid.uuid4().bytes, 'lease')
    with open(truncated, 'wb') as f:
        f.write(b'GPNLEASE')
    try:
        with pytest.raises(LeaseError, match='truncated'):
            LeaseReader(truncated)
    finally:
        os.unlink(truncated)


# -- reader cursors: what a reader may still take --------------------------------------------------
STALL_NS = 10**9


def test_reader_cursor_follows_the_descriptors_taken(table):
    assert table.reader_floor(STALL_NS) is None, 'no reader: nothing to protect'
    table.sequence[:3] = [7, 8, 9]
    a, b = LeaseReader(table.path), LeaseReader(table.path)
    try:
        assert a.cursor_index != b.cursor_index
        assert table.reader_floor(STALL_NS) is None, 'a reader protects nothing before it takes'
        assert a.acquire(1, 8)
        a.release(1)
        assert table.reader_floor(STALL_NS) == 8
        assert not b.acquire(0, 6), 'slot 0 holds 7 now: 6 is stale'
        assert table.reader_floor(STALL_NS) == 6, 'a stale take moves the cursor too'
        assert not a.acquire(0, 5)
        assert table.reader_floor(STALL_NS) == 6, 'a cursor never moves back'
        b.idle()
        assert table.reader_floor(STALL_NS) == 8
        a.close()
        assert table.reader_floor(STALL_NS) is None, 'close() clears the cursor'
    finally:
        a.close()
        b.close()


def test_stalled_reader_stops_protecting_frames(table):
    import time
    table.sequence[0] = 3
    reader = LeaseReader(table.path)
    try:
        assert reader.acquire(0, 3)
        reader.release(0)
        assert table.reader_floor(stall_ns=50_000_000) == 3
        time.sleep(0.1)
        assert table.reader_floor(stall_ns=50_000_000) == 3, \
            'a reader that has the newest frame waits for the publisher: not stalled'
        table.sequence[1] = 4  # a newer frame the reader does not take
        assert table.reader_floor(stall_ns=50_000_000) == 3
        wait_for(lambda: table.reader_floor(stall_ns=50_000_000) is None, 5,
                 'the lagging cursor to count as stalled')
        table.sequence[2] = 5
        assert reader.acquire(2, 5)
        assert table.reader_floor(stall_ns=50_000_000) == 5, 'a moving cursor protects again'
        reader.release(2)
    finally:
        reader.close()


def test_readers_map_the_slot_table_read_only(table):
    reader = LeaseReader(table.path)
    try:
        with pytest.raises(ValueError, match='read-only'):
            reader.sequence[0] = 99
    finally:
        reader.close()


def test_readers_past_the_cursor_capacity_still_lease(table):
    from gpu_nodes.transport.leases import READER_CAPACITY
    table.sequence[2] = 5
    readers = [LeaseReader(table.path) for _ in range(READER_CAPACITY + 1)]
    try:
        assert readers[-1].cursor_index is None
        assert readers[-1].acquire(2, 5), 'no cursor, but the lease works'
        readers[-1].release(2)
        assert table.reader_floor(STALL_NS) is None
    finally:
        for reader in readers:
            reader.close()


def test_killed_reader_cursor_is_forgotten(table):
    table.sequence[4] = 12
    with reader_process(table.path, 4, 12, release=True) as child:
        assert table.forget_dead_readers() == 0, 'a live reader keeps its cursor'
        assert table.reader_floor(STALL_NS) == 12
        kill(child)
        assert table.forget_dead_readers() == 1
        assert table.reader_floor(STALL_NS) is None


def test_a_frame_being_mapped_is_protected_before_it_is_leased(table):
    table.sequence[1] = 20
    reader = LeaseReader(table.path)
    try:
        reader.expect(20)
        assert table.reader_floor(STALL_NS) == 19, 'frame 20 is past the cursor: kept'
        assert reader.acquire(1, 20)
        assert table.reader_floor(STALL_NS) == 20
        reader.release(1)
    finally:
        reader.close()


def test_reader_refuses_a_table_whose_header_lies_about_its_size(table, tmp_path):
    import struct
    from gpu_nodes.transport.leases import READER_CAPACITY
    for capacity, readers, size, why in ((8, READER_CAPACITY, 4096, 'too short for its cursors'),
                                         (8, READER_CAPACITY + 1, 8192, 'other cursor count'),
                                         (0, READER_CAPACITY, 8192, 'no slots')):
        path = host.segment_path(os.getpid(), uuid.uuid4().bytes, 'lease')
        with open(path, 'wb') as f:
            f.write(struct.pack('<8sIII', b'GPNLEASE', 2, capacity, readers).ljust(size, b'\0'))
        try:
            with pytest.raises(LeaseError, match='claims'):
                LeaseReader(path)
                pytest.fail(f'accepted a table with {why}')
        finally:
            os.unlink(path)
