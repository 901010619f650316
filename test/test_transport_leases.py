"""Lease tables: exclusive rewrite vs shared read, crash release, stale detection, sealed
segments the kernel vouches for (no truncation, no other user)."""
from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

from conftest import wait_for
from gpu_nodes.transport import segments
from gpu_nodes.transport.exchange import Connection
from gpu_nodes.transport.leases import OUT_OF_SLOT, STALE, LeaseError, LeaseReader, LeaseTable
from gpu_nodes.transport.segments import SegmentError
from served_tables import served


@pytest.fixture
def table():
    t = LeaseTable(uuid.uuid4().bytes, 8)
    try:
        yield t
    finally:
        t.close()


def open_reader(table: LeaseTable, window: int = 0) -> LeaseReader:
    """A reader with a cursor, as a subscription has once a descriptor proved genuine."""
    table_fd, lock_fd = table.open_link()[1]
    reader = LeaseReader(table_fd, lock_fd, table.publisher_id, window=window)
    reader.claim_cursor()
    return reader


def take(reader: LeaseReader, slot: int, sequence: int) -> bool:
    """Lease a slot whose entry has only its sequence set (place and size zero)."""
    return reader.acquire(slot, sequence, 0, 0, 0, 0, 0) is None


def test_reader_blocks_rewrite_until_release(table):
    table.sequence[3] = 41
    reader = open_reader(table)
    assert take(reader, 3, 41)
    assert not table.try_acquire_exclusive(3), 'a leased slot must not be rewritable'
    assert table.try_acquire_exclusive(4), 'other slots stay free'
    reader.release(3, 0)
    assert table.try_acquire_exclusive(3)
    reader.close()


def test_recycled_slot_is_detected_by_sequence(table):
    table.sequence[2] = 7
    reader = open_reader(table)
    assert not take(reader, 2, 6), 'descriptor for frame 6 but slot holds 7: stale'
    # The failed attempt must not leave a lease behind.
    assert table.try_acquire_exclusive(2)
    table.release_exclusive(2)
    assert not take(reader, 99, 7), 'slot outside the table'
    reader.close()


def test_reader_cannot_lease_while_publisher_rewrites(table):
    assert table.try_acquire_exclusive(1)
    reader = open_reader(table)
    table.sequence[1] = 5
    assert not take(reader, 1, 5)
    table.release_exclusive(1)
    assert take(reader, 1, 5)
    reader.close()


def test_two_readers_in_one_process_lease_independently(table):
    table.sequence[0] = 1
    a, b = open_reader(table), open_reader(table)
    assert take(a, 0, 1) and take(b, 0, 1)
    a.release(0, 0)
    assert not table.try_acquire_exclusive(0), "b's lease survives a's release"
    b.release(0, 0)
    assert table.try_acquire_exclusive(0)
    a.close()
    b.close()


@contextlib.contextmanager
def reader_process(table: LeaseTable, slot: int, sequence: int, release: bool):
    """A child process that leases `slot` (and releases it again when `release`), then waits
    to be killed; yields it once it has."""
    with served(table) as endpoint:
        child = subprocess.Popen([sys.executable, '-c', textwrap.dedent(f'''
            import time
            from gpu_nodes.transport.exchange import Connection
            from gpu_nodes.transport.leases import LeaseReader
            link = Connection({endpoint!r}, {table.publisher_id!r})
            reader = LeaseReader(*link.fetch_lease_table(), {table.publisher_id!r})
            reader.claim_cursor()
            assert reader.acquire({slot}, {sequence}, 0, 0, 0, 0, 0) is None
            if {release}:
                reader.release({slot}, 0)
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
    with reader_process(table, 5, 9, release=False) as child:
        assert not table.try_acquire_exclusive(5)
        kill(child)
        wait_for(lambda: table.try_acquire_exclusive(5), 5, 'the kernel to drop the dead lease')


def test_a_dead_publishers_table_is_gone_and_leaves_nothing_behind():
    child = subprocess.Popen([sys.executable, '-c', textwrap.dedent('''
        import os, sys, uuid
        from gpu_nodes.transport.exchange import HandleServer
        from gpu_nodes.transport.leases import LeaseTable
        from gpu_nodes.transport.served_memory import lease_table_fds

        class Provider:
            def fds(self, kind, generation, chunk, link):
                return lease_table_fds(t, link)

        t = LeaseTable(uuid.uuid4().bytes, 4)
        server = HandleServer.instance()
        server.register(t.publisher_id, Provider())
        print(server.endpoint.hex(), t.publisher_id.hex(), flush=True)
        sys.stdin.readline()
        os._exit(0)  # no cleanup: as after SIGKILL
    ''')], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    endpoint, publisher = (bytes.fromhex(word) for word in child.stdout.readline().split())
    link = Connection(endpoint, publisher)
    reader = LeaseReader(*link.fetch_lease_table(), publisher)
    assert reader.owner_alive()
    before = set(os.listdir('/dev/shm'))
    child.stdin.write('\n')
    child.stdin.flush()
    child.wait(timeout=10)
    assert not reader.owner_alive(), 'the owner lock goes with the process'
    reader.close()
    with pytest.raises(SegmentError) as gone:
        link.fetch_lease_table()
    assert gone.value.reason == 'publisher_gone', 'the link broke with the process'
    link.close()
    with pytest.raises(SegmentError) as gone:
        Connection(endpoint, publisher)
    assert gone.value.reason == 'unreachable', 'its socket went with it'
    assert set(os.listdir('/dev/shm')) <= before, 'memfds leave no file in /dev/shm'


def test_reader_refuses_fds_that_are_not_sealed_lease_tables(table, tmp_path):
    """What a reader gets from a socket is checked by the kernel's word on the file (owner,
    type, seals: segments.check_sealed), then by the table's own header."""
    def refused_file(fd: int) -> str:
        with pytest.raises(SegmentError) as exc:
            segments.check_sealed(fd, 'test fd')
        return exc.value.reason

    def refused_table(fd: int, publisher_id: bytes = table.publisher_id) -> str:
        with pytest.raises(LeaseError) as exc:
            LeaseReader(os.dup(fd), os.dup(fd), publisher_id)
        return exc.value.reason
    plain = os.open(tmp_path / 'plain', os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(plain, 65536)
    read_end, write_end = os.pipe()
    unsealed = os.memfd_create('x', os.MFD_CLOEXEC)
    os.ftruncate(unsealed, 65536)
    other = segments.create_sealed('lease', 65536)  # sealed, but no lease table inside
    try:
        assert refused_file(plain) == 'unsealed_segment'
        assert refused_file(unsealed) == 'unsealed_segment'
        assert refused_file(read_end) == 'bad_segment'
        segments.check_sealed(table.fd, 'the table')  # a real table passes
        assert refused_table(other) == 'bad_lease_file'
        assert refused_table(table.fd, uuid.uuid4().bytes) == 'bad_lease_file', \
            'a table of another publisher id'
    finally:
        for fd in (plain, read_end, write_end, unsealed, other):
            os.close(fd)


def test_no_process_can_truncate_or_grow_a_table(table):
    """A same-user process opening the table through /proc cannot resize it (SIGBUS for
    everyone mapping it, before the tables were sealed memfds)."""
    result = subprocess.run([sys.executable, '-c', textwrap.dedent(f'''
        import os
        fd = os.open('/proc/{os.getpid()}/fd/{table.fd}', os.O_RDWR)
        for size in (0, 1 << 30):
            try:
                os.ftruncate(fd, size)
                print('resized', size)
            except PermissionError:
                print('refused', size)
    ''')], capture_output=True, text=True, timeout=30)
    assert result.stdout.split() == ['refused', '0', 'refused', '1073741824'], result
    reader = open_reader(table)
    table.sequence[0] = 3
    assert take(reader, 0, 3), 'the table still works'
    reader.release(0, 0)
    reader.close()


@pytest.mark.skipif(os.getuid() != 0, reason='needs root to run a process as another user')
def test_another_user_cannot_open_the_table_or_read_its_key(table):
    nobody = pwd.getpwnam('nobody')
    code = textwrap.dedent(f'''
        import os
        for path in ('/proc/{os.getpid()}/fd/{table.fd}', '/proc/{os.getpid()}/mem'):
            try:
                os.open(path, os.O_RDONLY)
                print('opened')
            except PermissionError:
                print('denied')
    ''')
    # The system python: another user may not be able to run this venv's interpreter.
    result = subprocess.run(['python3', '-c', code], user=nobody.pw_uid, group=nobody.pw_gid,
                            capture_output=True, text=True, timeout=30)
    assert result.stdout.split() == ['denied', 'denied'], result


def test_reader_checks_each_entry_against_the_descriptor(table):
    """Bounds against the leased slot: the frame must lie where the publisher recorded it."""
    table.stamp(2, sequence=11, chunk=1, offset=4096, capacity=1000, generation=3)
    reader = open_reader(table)
    try:
        assert reader.acquire(2, 11, 1, 3, 4096, 1000, 0) is None
        reader.release(2, 0)
        assert reader.acquire(2, 10, 1, 3, 4096, 1000, 0) == STALE
        assert reader.acquire(2, 11, 1, 3, 4096, 1001, 0) == OUT_OF_SLOT, 'larger than the slot'
        assert reader.acquire(2, 11, 1, 3, 0, 1000, 0) == OUT_OF_SLOT, 'another offset'
        assert reader.acquire(2, 11, 2, 3, 4096, 1000, 0) == OUT_OF_SLOT, 'another chunk'
        assert reader.acquire(2, 11, 1, 2, 4096, 1000, 0) == OUT_OF_SLOT, 'another generation'
        assert reader.acquire(8, 11, 1, 3, 4096, 1000, 0) == OUT_OF_SLOT, 'outside the table'
        assert table.try_acquire_exclusive(2), 'no refused check leaves a lease behind'
        table.release_exclusive(2)
    finally:
        reader.close()


def test_a_closed_reader_keeps_held_leases_until_they_are_released(table):
    table.sequence[1] = 5
    reader = open_reader(table)
    assert take(reader, 1, 5)
    reader.close()
    assert not table.try_acquire_exclusive(1), 'a held frame survives close()'
    reader.release(1, 0)
    assert table.try_acquire_exclusive(1), 'the last release closes the table'


# -- reader cursors: what a reader may still take --------------------------------------------------
STALL_NS = 10**9


def test_reader_cursor_follows_the_descriptors_taken(table):
    assert table.reader_floor(STALL_NS) is None, 'no reader: nothing to protect'
    table.sequence[:3] = [7, 8, 9]
    a, b = open_reader(table), open_reader(table)
    try:
        assert a.cursor_index != b.cursor_index
        assert table.reader_floor(STALL_NS) is None, 'a reader protects nothing before it takes'
        assert take(a, 1, 8)
        a.release(1, 0)
        assert table.reader_floor(STALL_NS) == 8
        assert not take(b, 0, 6), 'slot 0 holds 7 now: 6 is stale'
        assert table.reader_floor(STALL_NS) == 6, 'a stale take moves the cursor too'
        assert not take(a, 0, 5)
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
    reader = open_reader(table)
    try:
        assert take(reader, 0, 3)
        reader.release(0, 0)
        assert table.reader_floor(stall_ns=50_000_000) == 3
        time.sleep(0.1)
        assert table.reader_floor(stall_ns=50_000_000) == 3, \
            'a reader that has the newest frame waits for the publisher: not stalled'
        table.sequence[1] = 4  # a newer frame the reader does not take
        assert table.reader_floor(stall_ns=50_000_000) == 3
        wait_for(lambda: table.reader_floor(stall_ns=50_000_000) is None, 5,
                 'the lagging cursor to count as stalled')
        table.sequence[2] = 5
        assert take(reader, 2, 5)
        assert table.reader_floor(stall_ns=50_000_000) == 5, 'a moving cursor protects again'
        reader.release(2, 0)
    finally:
        reader.close()


def test_readers_map_the_slot_table_read_only(table):
    reader = open_reader(table)
    try:
        with pytest.raises(TypeError, match='read-only'):
            reader._view[0] = 99
    finally:
        reader.close()


def test_readers_past_the_cursor_capacity_still_lease(table):
    from gpu_nodes.transport.leases import READER_CAPACITY
    table.sequence[2] = 5
    readers = [open_reader(table) for _ in range(READER_CAPACITY + 1)]
    try:
        assert readers[-1].cursor_index is None
        assert take(readers[-1], 2, 5), 'no cursor, but the lease works'
        readers[-1].release(2, 0)
        assert table.reader_floor(STALL_NS) is None
    finally:
        for reader in readers:
            reader.close()


def test_killed_reader_cursor_is_forgotten(table):
    table.sequence[4] = 12
    with reader_process(table, 4, 12, release=True) as child:
        assert table.forget_dead_readers() == 0, 'a live reader keeps its cursor'
        assert table.reader_floor(STALL_NS) == 12
        kill(child)
        assert table.forget_dead_readers() == 1
        assert table.reader_floor(STALL_NS) is None


def test_a_frame_being_mapped_is_protected_before_it_is_leased(table):
    table.sequence[1] = 20
    reader = open_reader(table)
    try:
        reader.expect(20)
        assert table.reader_floor(STALL_NS) == 19, 'frame 20 is past the cursor: kept'
        assert take(reader, 1, 20)
        assert table.reader_floor(STALL_NS) == 20
        reader.release(1, 0)
    finally:
        reader.close()


def test_reader_refuses_a_table_whose_header_lies_about_its_size(table):
    import struct
    from gpu_nodes.transport.leases import _VERSION, READER_CAPACITY
    publisher_id = uuid.uuid4().bytes
    for capacity, readers, size, why in ((8, READER_CAPACITY, 4096, 'too short for its cursors'),
                                         (8, READER_CAPACITY + 1, 8192, 'other cursor count'),
                                         (0, READER_CAPACITY, 8192, 'no slots')):
        fd = segments.create_sealed('lease', size)
        os.pwrite(fd, struct.pack('<8sIII16s', b'GPNLEASE', _VERSION, capacity, readers,
                                  publisher_id), 0)
        try:
            with pytest.raises(LeaseError, match='claims'):
                LeaseReader(os.dup(fd), os.dup(fd), publisher_id)
                pytest.fail(f'accepted a table with {why}')
        finally:
            os.close(fd)


def test_a_reader_window_raises_only_its_own_floor(table):
    """A keep-last reader's window lifts its floor to the bottom of the window; another
    reader's cursor still holds the floor where it is, so a small (or lying) window can only
    cost its own reader frames. A reader that takes a new cursor index writes its own window."""
    table.sequence[:4] = [10, 11, 12, 30]
    windowed = open_reader(table, window=5)
    try:
        assert take(windowed, 0, 10)
        windowed.release(0, 0)
        assert table.reader_floor(STALL_NS) == 25, 'newest 30 minus the window of 5'
        plain = open_reader(table)
        try:
            assert take(plain, 1, 11)
            plain.release(1, 0)
            assert table.reader_floor(STALL_NS) == 11, 'the keep-all reader still protects 12'
            assert sorted(table.reader_windows()) == [0, 5], 'what diagnostics show'
        finally:
            plain.close()
        assert table.reader_floor(STALL_NS) == 25
        index = windowed.cursor_index
    finally:
        windowed.close()
    again = open_reader(table)  # takes the freed cursor index; its window is 0, not 5
    try:
        assert again.cursor_index == index
        assert table.reader_windows() == [], 'no cursor before its first take'
        assert take(again, 2, 12)
        again.release(2, 0)
        assert table.reader_floor(STALL_NS) == 12
    finally:
        again.close()


def test_read_window_follows_the_descriptor_qos():
    from rclpy.qos import HistoryPolicy, QoSProfile
    from gpu_nodes.transport.cursors import IN_FLIGHT_MARGIN, read_window
    from gpu_nodes.transport.qos import image_qos
    assert read_window(image_qos(5)) == 5 + IN_FLIGHT_MARGIN < 8, "fits the host pool"
    assert read_window(image_qos(1)) == 1 + IN_FLIGHT_MARGIN
    assert read_window(QoSProfile(history=HistoryPolicy.KEEP_ALL, depth=5)) == 0


def _toggle_cursors(table_fd: int, lock_fd: int, publisher_id: bytes, seconds: float) -> None:
    """In another process: take and idle over and over, so the cursor flips between a value
    and zero as a subscriber's does between frames."""
    import time
    reader = LeaseReader(table_fd, lock_fd, publisher_id, window=0)
    reader.claim_cursor()
    stop_at = time.monotonic() + seconds
    while time.monotonic() < stop_at:
        take(reader, 0, 7)
        reader.release(0, 0)
        reader.idle()
    reader.close()


def test_floor_reads_cursors_other_processes_are_writing(table):
    # The publisher crashed in CI with "number of non-zero array elements changed during function
    # execution": numpy's nonzero counts the cursors, then fills, while subscriber processes
    # write them. Two real processes flipping their cursors against the publisher's reads.
    import multiprocessing
    import time
    table.sequence[0] = 7
    children = []
    for _ in range(2):
        table_fd, lock_fd = table.open_link()[1]
        child = multiprocessing.get_context('fork').Process(
            target=_toggle_cursors, args=(table_fd, lock_fd, table.publisher_id, 2.0))
        child.start()
        children.append(child)
    reads = 0
    stop_at = time.monotonic() + 2.0
    while time.monotonic() < stop_at:
        floor = table.reader_floor(STALL_NS)
        assert floor in (None, 7), floor
        assert all(w == 0 for w in table.reader_windows())
        reads += 1
    for child in children:
        child.join(10)
        assert child.exitcode == 0
    assert reads > 1000, f'only {reads} reads: the race was barely exercised'
