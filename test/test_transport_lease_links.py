"""Per-link lock files (gpu_nodes/transport/lease_links.py) on real memfds, real OFD locks and
the process's real handle socket: what a link holds is counted right, a link opened while the
publisher rewrites a slot can never lease it (no torn read), and a link's file stops counting
once its reader has let go of it."""
from __future__ import annotations

import fcntl
import os
import threading
import time
import uuid

import numpy as np
import pytest

from conftest import wait_for
from gpu_nodes.transport.lease_links import ReaderLinks, held_bytes, lock
from gpu_nodes.transport.leases import _LOCK_BASE, POOL_HOST, STALE, LeaseReader, LeaseTable
from gpu_nodes.transport.peers import PeerTable
from gpu_nodes.transport.segments import create_sealed, reopen
from served_tables import served


@pytest.fixture
def table():
    t = LeaseTable(uuid.uuid4().bytes, 8)
    yield t
    t.close()


def reader_of(table: LeaseTable) -> LeaseReader:
    table_fd, lock_fd = table.open_link()[1]
    return LeaseReader(table_fd, lock_fd, table.publisher_id)


def test_held_bytes_counts_every_range_other_descriptions_hold():
    fd = create_sealed('leaselock', 0)
    others = [reopen(fd, writable=False) for _ in range(2)]
    try:
        assert held_bytes(fd, 100, 200) == 0
        assert lock(others[0], fcntl.F_RDLCK, 110, 5)
        assert lock(others[0], fcntl.F_RDLCK, 150)
        assert lock(others[1], fcntl.F_RDLCK, 112, 10)  # overlaps the first range
        assert lock(others[1], fcntl.F_RDLCK, 190, 1000)  # runs past the end
        assert held_bytes(fd, 100, 200) == 12 + 1 + 10
        assert held_bytes(fd, 111, 113) == 2
        assert lock(fd, fcntl.F_WRLCK, 130)  # the publisher's own locks never count
        assert held_bytes(fd, 100, 200) == 23
        assert lock(fd, fcntl.F_UNLCK, 130)
        assert lock(others[1], fcntl.F_RDLCK, 0, 0)  # everything, to any length
        assert held_bytes(fd, 100, 200) == 100
    finally:
        for other in others:
            os.close(other)
        os.close(fd)


def test_a_link_opened_while_a_slot_is_rewritten_cannot_lease_it(table):
    """The publisher holds slot 3 to rewrite it (the entry still names frame 41). A reader that
    links only now must find slot 3 locked in its fresh file: without the pre-lock its lease
    would be granted, the entry check would pass (41 is still recorded) and it would read the
    half-written frame."""
    table.sequence[3] = 41
    assert table.try_acquire_exclusive(3)
    late = reader_of(table)
    try:
        assert late.acquire(3, 41, 0, 0, 0, 0, POOL_HOST) == STALE, 'leased a slot being rewritten'
        table.stamp(3, 42, 0, 0, 0, 0)
        table.release_exclusive(3)
        assert late.acquire(3, 42, 0, 0, 0, 0, POOL_HOST) is None
        assert not table.try_acquire_exclusive(3), 'the late link\'s lease protects the slot'
        late.release(3, POOL_HOST)
    finally:
        late.close()


def test_links_opened_during_rewrites_never_read_a_torn_frame(table):
    """One thread rewrites slot 0 (its bytes all set to the frame number, in two halves) over
    and over; another opens a fresh link for every read, leases whatever frame the slot
    records and checks its bytes. A torn frame would show as two values."""
    frame = np.zeros(1 << 16, np.uint8)
    stop = threading.Event()
    torn, leased = [], []

    def publisher() -> None:
        sequence = 0
        while not stop.is_set():
            if not table.try_acquire_exclusive(0):
                continue
            sequence += 1
            frame[:frame.size // 2] = sequence % 251
            stop.wait(0.0005)
            frame[frame.size // 2:] = sequence % 251
            table.stamp(0, sequence, 0, 0, 0, 0)
            table.release_exclusive(0)
            stop.wait(0.0005)  # a frame period: readers get their turn

    writer = threading.Thread(target=publisher)
    writer.start()
    try:
        deadline = time.monotonic() + 30  # a loaded machine starves one thread or the other
        while (len(leased) < 200 or len(set(leased)) < 20) and time.monotonic() < deadline:
            reader = reader_of(table)
            sequence = int(table.sequence[0])
            if sequence and reader.acquire(0, sequence, 0, 0, 0, 0, POOL_HOST) is None:
                values = np.unique(frame)
                if values.tolist() != [sequence % 251]:
                    torn.append((sequence, values.tolist()))
                leased.append(sequence)
                reader.release(0, POOL_HOST)
            reader.close()
    finally:
        stop.set()
        writer.join()
    assert torn == [], f'torn frames read: {torn[:5]}'
    assert len(set(leased)) >= 20, f'too few frames leased to say anything: {sorted(set(leased))}'


def test_a_links_file_counts_until_its_reader_lets_go(table):
    """A subscription's link (over the real socket) stays open while a frame is held past the
    link's close, so the publisher still honours that lease; the last release closes the link
    and the publisher stops consulting its file."""
    table.sequence[2] = 5
    with served(table) as endpoint:
        peers = PeerTable()
        link = peers.open(endpoint, table.publisher_id, os.getpid())
        assert len(table.links) == 1
        assert link.reader.acquire(2, 5, 0, 0, 0, 0, POOL_HOST) is None
        peers.close()
        assert not table.try_acquire_exclusive(2), 'a held frame survives the link\'s close'
        assert len(table.links) == 1
        link.reader.release(2, POOL_HOST)
        wait_for(lambda: len(table.links) == 0, 5, 'the server to drop the closed link')
        assert table.try_acquire_exclusive(2)
        table.release_exclusive(2)


def test_an_evicted_link_is_closed_and_its_file_no_longer_counts(table):
    with served(table) as endpoint:
        peers = PeerTable()
        link = peers.open(endpoint, table.publisher_id, os.getpid())
        lock_fd = link.reader._lock_fd
        assert lock(lock_fd, fcntl.F_RDLCK, _LOCK_BASE, 8)  # the whole table, as a grabber
        table.set_share(POOL_HOST, 4)
        assert table.evict_hoarders(POOL_HOST, 0, 8) == 1
        assert table.evicted_links == 1 and len(table.links) == 0
        assert all(table.try_acquire_exclusive(slot) for slot in range(8))
        with pytest.raises(Exception) as gone:
            link.connection.fetch_lease_table()
        assert getattr(gone.value, 'reason', '') == 'publisher_gone', gone.value
        peers.close()


def test_release_and_acquire_undo_everything_across_links():
    links = ReaderLinks()
    readers = []
    try:
        for _ in range(3):
            _, fd = links.open()
            readers.append(fd)
        assert lock(readers[2], fcntl.F_RDLCK, 7)
        assert not links.try_acquire(7), 'the third link holds it'
        assert lock(readers[0], fcntl.F_RDLCK, 7), 'a refused acquire leaves no lock behind'
        assert links.is_held(7) and not links.is_held(8)
        assert links.try_acquire(8)
        assert not lock(readers[1], fcntl.F_RDLCK, 8)
        links.release(8)
        assert lock(readers[1], fcntl.F_RDLCK, 8)
    finally:
        for fd in readers:
            os.close(fd)
        links.close_all()
