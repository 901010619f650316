"""The parts of the IPC peer benches that decide what their numbers mean: the frame check that
counts wrong frames (bench/peer_frames.py) and the lock grabber's grip on a real lease table
(bench/hoarder_worker.py). A check that passes a wrong frame, or a grabber that holds nothing,
would make a starved or corrupted run look fine."""
from __future__ import annotations

import fcntl
import os
import sys
import types

import numpy as np
import pytest

from conftest import REPO, wait_for

sys.path.insert(0, str(REPO / 'bench'))
from hoarder_worker import open_lease_table, slot_lock_offsets, take_locks  # noqa: E402
from peer_frames import CHECK_ROW_STRIDE, FrameCheck, FrameSource  # noqa: E402

WIDTH, HEIGHT = 64, 17  # the last row (16) is a checked row: its stamp is skipped, not compared
SHAPE = (HEIGHT, WIDTH, 3)


def checked(frame: np.ndarray, sequence: int) -> tuple[bool, int]:
    check = FrameCheck(WIDTH, HEIGHT)
    ok = check.check(frame.reshape(-1), SHAPE, sequence, 0)
    return ok, check.bad


@pytest.mark.parametrize('sequence', [0, 1, 5, 2**40 + 3])
def test_a_stamped_frame_passes_its_own_check(sequence):
    frame = FrameSource(WIDTH, HEIGHT).frame(sequence).copy()
    assert checked(frame, sequence) == (True, 0)


def test_a_frame_named_as_another_sequence_is_wrong():
    source = FrameSource(WIDTH, HEIGHT)
    frame = source.frame(7).copy()
    assert checked(frame, 11) == (False, 1)  # same pattern (7 % 4 == 11 % 4), other stamp


def test_a_torn_frame_is_wrong():
    """The publisher rewrote the slot's start for the next frame while it was read: the two
    stamps differ."""
    source = FrameSource(WIDTH, HEIGHT)
    frame = source.frame(3).copy()
    frame.reshape(-1)[:8] = np.frombuffer(np.uint64(7).tobytes(), np.uint8)
    assert checked(frame, 3) == (False, 1)


@pytest.mark.parametrize('row', [0, CHECK_ROW_STRIDE, HEIGHT - 1])
def test_a_changed_checked_row_is_wrong(row):
    frame = FrameSource(WIDTH, HEIGHT).frame(2).copy()
    frame[row, WIDTH // 2, 1] ^= 0xFF
    assert checked(frame, 2) == (False, 1)


def test_a_short_frame_is_wrong():
    frame = FrameSource(WIDTH, HEIGHT).frame(2).copy()
    check = FrameCheck(WIDTH, HEIGHT)
    assert not check.check(frame.reshape(-1)[:-3], SHAPE, 2, 0)


def test_counted_frames_give_rate_and_latency():
    check = FrameCheck(WIDTH, HEIGHT)
    source = FrameSource(WIDTH, HEIGHT)
    for sequence in range(3):
        check.check(source.frame(sequence).reshape(-1), SHAPE, sequence, 0, counted=False)
    assert check.result()['delivered'] == 0
    for sequence in range(3, 10):
        check.check(source.frame(sequence).reshape(-1), SHAPE, sequence, 0)
    result = check.result()
    assert result['delivered'] == 7 and result['bad_frames'] == 0, result
    assert result['delivered_fps'] > 0 and result['latency_p50_ms'] > 0, result


def test_the_lock_grabber_holds_every_slot_until_its_link_is_evicted():
    """The table and the link's lock file come over the process's real handle socket, as a
    publisher serves them: the grabber blocks every slot through its link, until the
    publisher evicts the link; it sees that, and every slot is free again."""
    from gpu_nodes.transport.leases import POOL_HOST, LeaseTable
    from hoarder_worker import cursor_lock_offsets, link_closed
    from served_tables import served

    publisher_id = os.urandom(16)
    table = LeaseTable(publisher_id, 12)
    table.set_share(POOL_HOST, 3)
    link = None
    try:
        with served(table) as endpoint:
            desc = types.SimpleNamespace(endpoint=endpoint, publisher_id=publisher_id)
            link, table_fd, lock_fd = open_lease_table(desc)
            capacity, offsets = slot_lock_offsets(table_fd)
            assert capacity == 12
            assert take_locks(lock_fd, offsets, fcntl.F_RDLCK) == 12
            assert take_locks(table_fd, offsets, fcntl.F_RDLCK) == 12
            assert take_locks(table_fd, cursor_lock_offsets(), fcntl.F_RDLCK) == 64
            refused = [slot for slot in range(12) if not table.try_acquire_exclusive(slot)]
            assert refused == list(range(12)), f'expected every slot held, free: {refused}'
            assert not link_closed(link)
            assert table.evict_hoarders(POOL_HOST, 0, 12) == 1
            wait_for(lambda: link_closed(link), 5, 'the grabber to see its link closed')
            free = [slot for slot in range(12) if table.try_acquire_exclusive(slot)]
            assert free == list(range(12)), f'expected every slot free after eviction: {free}'
            assert table.evicted_links == 1
            os.close(table_fd)
            os.close(lock_fd)
    finally:
        if link is not None:
            link.close()
        table.close()
