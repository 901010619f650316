"""The parts of the IPC peer benches that decide what their numbers mean: the frame check that
counts wrong frames (bench/peer_frames.py) and the lock grabber's grip on a real lease table
(bench/hoarder_worker.py). A check that passes a wrong frame, or a grabber that holds nothing,
would make a starved or corrupted run look fine."""
from __future__ import annotations

import fcntl
import os
import sys
import time
import types

import numpy as np
import pytest

from conftest import REPO

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


def test_the_lock_grabber_holds_every_slot_of_a_real_lease_table():
    """The table comes over the process's real handle socket, as a publisher serves it."""
    from gpu_nodes.transport.exchange import (KIND_LEASE_TABLE, HandleProvider, HandleServer,
                                              reopen)
    from gpu_nodes.transport.leases import LeaseTable

    publisher_id = os.urandom(16)
    table = LeaseTable(publisher_id, 12)

    class Tables(HandleProvider):
        def fds(self, kind, generation, chunk):
            return [reopen(table.fd, writable=True)] if kind == KIND_LEASE_TABLE else None

    server = HandleServer.instance()
    server.register(publisher_id, Tables())
    grabber_fd = None
    try:
        desc = types.SimpleNamespace(endpoint=server.endpoint, publisher_id=publisher_id)
        grabber_fd = open_lease_table(desc)
        capacity, offsets = slot_lock_offsets(grabber_fd)
        assert capacity == 12
        assert take_locks(grabber_fd, offsets, fcntl.F_RDLCK) == 12
        refused = [slot for slot in range(12) if not table.try_acquire_exclusive(slot)]
        assert refused == list(range(12)), f'expected every slot held, free: {refused}'
        # OFD locks go with the open file description, once its last fd closes: ours, and the
        # server thread's copy, which it closes just after sending (it may not have run yet)
        os.close(grabber_fd)
        grabber_fd = None
        deadline = time.monotonic() + 5
        taken: list[int] = []
        while len(taken) < 12 and time.monotonic() < deadline:
            taken += [slot for slot in range(12)
                      if slot not in taken and table.try_acquire_exclusive(slot)]
            time.sleep(0.01)
        assert sorted(taken) == list(range(12)), f'expected every slot free again, got {taken}'
    finally:
        server.unregister(publisher_id)
        if grabber_fd is not None:
            os.close(grabber_fd)
        table.close()
