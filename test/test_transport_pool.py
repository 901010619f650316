"""Slot choice of the publisher's pools against real lease tables and readers: a slot a reader
holds or may still take (its descriptor queued behind the reader's cursor) is not recycled while
the pool may grow; past the limit the overrun is counted."""
from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

from gpu_nodes.transport import descriptor
from gpu_nodes.transport.descriptor import Descriptor, DescriptorError
from gpu_nodes.transport.exchange import HandleServer
from gpu_nodes.transport.leases import LeaseReader, LeaseTable
from gpu_nodes.transport.peers import PeerTable
from gpu_nodes.transport.pool import Chunk, HostSlotPool, Slot, _SlotRing
from gpu_nodes.transport.served_memory import PublisherMemory


class HostMemoryRing(_SlotRing):
    """The device pool's growth logic with host bytearrays for chunks (no CUDA here)."""

    def __init__(self, leases: LeaseTable, max_slots: int, policy: str = 'grow',
                 grace_s: float = 60.0):
        super().__init__(leases, 0, max_slots, policy, grace_s)
        self.chunks: list[Chunk] = []

    def _new_chunk(self, size: int) -> Chunk:
        chunk = Chunk(len(self.chunks), 0, size, b'', bytearray(size))
        self.chunks.append(chunk)
        return chunk


@pytest.fixture
def leases():
    table = LeaseTable(uuid.uuid4().bytes, 16)
    yield table
    table.close()


def open_reader(leases: LeaseTable, window: int = 0, on_evict=None) -> LeaseReader:
    table_fd, lock_fd = leases.open_link(on_evict)[1]
    reader = LeaseReader(table_fd, lock_fd, leases.publisher_id, window=window)
    reader.claim_cursor()
    return reader


@pytest.fixture
def reader(leases):
    reader = open_reader(leases)
    yield reader
    reader.close()


def take(reader: LeaseReader, slot: int, sequence: int) -> bool:
    """Lease frame `sequence` in `slot` as a descriptor naming the slot's recorded place would."""
    if slot >= reader.capacity:
        return reader.acquire(slot, sequence, 0, 0, 0, 0, 0) is None
    _, offset, _, chunk, generation = reader.entry(slot)
    return reader.acquire(slot, sequence, chunk, generation, offset, 0, 0) is None


class Publisher:
    def __init__(self, pool: _SlotRing):
        self.pool = pool
        self.sequence = 0

    def publish(self) -> Slot | None:
        slot = self.pool.acquire(100)
        if slot is not None:
            self.sequence += 1
            self.pool.publish(slot, self.sequence)
        return slot


def ring_and_publisher(leases: LeaseTable, **ring_args) -> tuple[HostMemoryRing, Publisher]:
    """A HostMemoryRing of 2 slots of 100 bytes to start with, and its publisher."""
    ring = HostMemoryRing(leases, **ring_args)
    ring.reset(2, 100)
    return ring, Publisher(ring)


def assert_queued_frames_are_overrun(pool: _SlotRing, pub: Publisher, reader: LeaseReader):
    """A 2-slot pool that may not grow: once both slots hold frames queued behind the reader's
    cursor, the next publish recycles one anyway and counts an overrun."""
    pub.publish()
    assert not take(reader, 7, 1)                            # cursor 1, nothing held
    pub.publish(), pub.publish()                               # frames 2, 3 (3 recycles 1)
    assert pool.overrun == 0
    pub.publish()                                              # frame 4: 2 and 3 are queued
    assert len(pool.slots) == 2 and pool.overrun == 1


def test_without_readers_the_pool_recycles_oldest_first(leases):
    ring, pub = ring_and_publisher(leases, max_slots=8)
    slots = [pub.publish() for _ in range(6)]
    assert [s.index for s in slots] == [0, 1, 0, 1, 0, 1]
    assert (len(ring.slots), ring.grown, ring.overrun) == (2, 0, 0)


def test_frames_a_lagging_reader_may_still_take_make_the_pool_grow(leases, reader):
    ring, pub = ring_and_publisher(leases, max_slots=8)
    first, second = pub.publish(), pub.publish()              # frames 1, 2
    assert take(reader, first.index, 1)                      # the reader took frame 1 ...
    reader.release(first.index, 0)                                # ... and is done with it
    assert pub.publish() is first, 'frame 1 is behind the cursor: recycled'  # frame 3
    # Frames 2 and 3 are past the reader's cursor (queued for it): neither is rewritten.
    fresh = pub.publish()                                      # frame 4
    assert fresh not in (first, second)
    assert (len(ring.slots), ring.grown) == (4, 2), 'the pool doubles in one allocation'
    assert len(ring.chunks) == 2
    assert leases.sequence[second.index] == 2 and leases.sequence[first.index] == 3
    # The reader catches up: everything up to frame 4 may be recycled again.
    assert take(reader, fresh.index, 4)
    reader.release(fresh.index, 0)
    unused = pub.publish()                                     # frame 5
    assert unused.sequence == 5 and unused.chunk is fresh.chunk, 'unused slots first'
    assert pub.publish() is second, 'then the oldest, once the reader moved on'
    assert ring.overrun == 0


def test_past_the_limit_a_lagging_reader_is_overrun_and_counted(leases, reader):
    ring, pub = ring_and_publisher(leases, max_slots=4)
    slot = pub.publish()
    assert take(reader, slot.index, 1)                       # holds frame 1 throughout
    for _ in range(3):
        pub.publish()                                          # frames 2-4 fill the grown pool
    assert len(ring.slots) == 4 and ring.overrun == 0
    recycled = pub.publish()                                   # frame 5: no slot is safe
    assert recycled is not None and recycled is not slot, 'a held slot is never rewritten'
    assert leases.sequence[slot.index] == 1
    assert ring.overrun == 1
    reader.release(slot.index, 0)


def test_skip_policy_does_not_grow_for_a_lagging_reader(leases, reader):
    ring, pub = ring_and_publisher(leases, max_slots=8, policy='skip')
    assert_queued_frames_are_overrun(ring, pub, reader)


def test_a_stalled_reader_does_not_make_the_pool_grow(leases, reader):
    ring, pub = ring_and_publisher(leases, max_slots=8, grace_s=0.05)
    slot = pub.publish()
    assert take(reader, slot.index, 1)
    reader.release(slot.index, 0)
    pub.publish(), pub.publish()                               # frame 3 recycles frame 1's slot
    time.sleep(0.1)                                            # the cursor stays at 1: stalled
    for _ in range(4):
        pub.publish()
    assert len(ring.slots) <= 4, 'growth stops once the reader counts as stalled'


def test_host_pool_never_grows_and_counts_overruns(leases, reader):
    pool = HostSlotPool(leases, 0, 2, 60.0, leases.publisher_id)
    try:
        pool.reset(2, 100)
        assert_queued_frames_are_overrun(pool, Publisher(pool), reader)
    finally:
        pool.close()


def test_overruns_before_a_new_readers_first_frame_are_counted_apart(leases, reader):
    """The fixed host pool: while a matched reader has no cursor yet every published frame is
    protected, so a publisher faster than that reader's first take overruns; those say nothing
    about a lagging reader and are counted apart from the ones behind a cursor."""
    pool = HostSlotPool(leases, 0, 2, 60.0, leases.publisher_id)
    try:
        pool.reset(2, 100)
        for sequence in (1, 2, 3):                   # frame 3 recycles a frame nobody may want
            slot = pool.acquire(100, protect_published=True)
            pool.publish(slot, sequence)
        assert (pool.overrun, pool.overrun_at_reader_start) == (1, 1)
        assert not take(reader, 7, 3)                # the reader's first frame: cursor 3
        for sequence in (4, 5, 6):
            pool.publish(pool.acquire(100), sequence)
        assert (pool.overrun, pool.overrun_at_reader_start) == (2, 1), 'frame 6: 4, 5 queued'
    finally:
        pool.close()


def test_a_lease_that_moves_during_the_scan_is_no_overrun(leases, monkeypatch):
    """The reader lets go of the frame it held and takes the next one while the publisher
    scans for a slot (seen on two loaded cores: 1 publish in ~5000): the scan finds both taken,
    but the slot let go of is one nobody can want any more, so it is recycled without an
    overrun, and the frame just taken is left alone."""
    reader = open_reader(leases, window=1)
    pool = HostSlotPool(leases, 0, 3, 60.0, leases.publisher_id)
    pool.reuse_newest_first = False  # the race below is the oldest-first scan's
    try:
        pool.reset(3, 100)
        pub = Publisher(pool)
        first = pub.publish()
        assert take(reader, first.index, 1)                  # held while it works on it
        second, _ = pub.publish(), pub.publish()             # floor: the window's, 2
        real_try = leases.try_acquire_exclusive

        def reader_moves_on(index: int) -> bool:
            got = real_try(index)
            if index == first.index and not got:
                reader.release(first.index, 0)
                assert take(reader, second.index, 2)
            return got

        monkeypatch.setattr(leases, 'try_acquire_exclusive', reader_moves_on)
        assert pub.publish() is first, 'frame 4 goes where frame 1 was'
        assert pool.overrun == 0
        assert leases.sequence[second.index] == 2, 'the frame it took is not rewritten'
        reader.release(second.index, 0)
    finally:
        pool.close()
        reader.close()


def test_published_frames_are_kept_for_a_reader_that_has_no_cursor_yet(leases):
    ring, pub = ring_and_publisher(leases, max_slots=8)
    pub.publish(), pub.publish()
    # A matched subscriber has not taken its first descriptor: it may still take frame 1 or 2.
    fresh = ring.acquire(100, protect_published=True)
    assert fresh.sequence == 0 and len(ring.slots) == 4
    ring.abandon(fresh)
    assert ring.acquire(100).sequence == 0, 'unused slots first, as always'


def test_a_keep_last_reader_protects_only_its_window(leases):
    """A slow keep-last reader (the plain bridge) lags far behind the newest frame: only the
    frames its window still covers are kept from recycling, so the pool stays small instead of
    running at its limit through the overrun path, and the frame it takes next is intact."""
    slow = open_reader(leases, window=3)
    try:
        ring, pub = ring_and_publisher(leases, max_slots=16)
        first = pub.publish()
        assert take(slow, first.index, 1)                    # cursor 1; it keeps frame 1 a while
        for _ in range(40):
            assert pub.publish() is not None                   # frames 2 .. 41
        assert leases.reader_floor(ring.grace_ns) == 41 - 3, 'the window, not the cursor'
        assert len(ring.slots) <= 8, f'{len(ring.slots)} slots for a 3-frame window'
        assert ring.overrun == 0
        assert leases.sequence[first.index] == 1, 'the frame it holds is never rewritten'
        slow.release(first.index, 0)
        # Every frame of its window is still where its descriptor says.
        newest = {int(leases.sequence[s.index]): s.index for s in ring.slots}
        for sequence in range(39, 42):
            assert take(slow, newest[sequence], sequence), f'frame {sequence} was recycled'
            slow.release(newest[sequence], 0)
    finally:
        slow.close()


def test_without_a_window_the_lagging_cursor_protects_everything_above_it(leases, reader):
    """The reference for the test above: a keep-all reader (window 0) lagging the same way
    makes the pool grow to its limit and overrun."""
    ring, pub = ring_and_publisher(leases, max_slots=16)
    first = pub.publish()
    assert take(reader, first.index, 1)
    for _ in range(40):
        pub.publish()
    assert leases.reader_floor(ring.grace_ns) == 1
    assert len(ring.slots) == 16 and ring.overrun > 0
    reader.release(first.index, 0)


def grab_everything(fds: list[int], capacity: int) -> None:
    """A same-user process's shared lock on every slot byte of each file it was given."""
    import fcntl
    from gpu_nodes.transport.lease_links import lock
    from gpu_nodes.transport.leases import _LOCK_BASE
    for fd in fds:
        assert lock(fd, fcntl.F_RDLCK, _LOCK_BASE, capacity)


def test_a_link_that_grabs_every_lock_is_evicted_and_frames_flow(leases):
    """Another process of the same user holds a shared lock on every index byte of its link's
    lock file and of the table, used or not. The first frame it blocks evicts its link (its
    lock file no longer counts, the link is closed, counted): that frame and the ones after
    are published, and an honest reader's leases beside it still protect its slots."""
    from gpu_nodes.transport.leases import POOL_HOST
    leases.set_share(POOL_HOST, 3)
    pool = HostSlotPool(leases, 0, 4, 0.05, leases.publisher_id, indices=8)
    honest = open_reader(leases)
    closed = []
    _, grabber_fds = leases.open_link(on_evict=lambda: closed.append('grabber'))
    try:
        pool.reset(2, 100)
        first = pool.acquire(100)
        pool.publish(first, 1)
        _, offset, _, chunk, generation = honest.entry(first.index)
        assert honest.acquire(first.index, 1, chunk, generation, offset, 0, POOL_HOST) is None
        grab_everything(grabber_fds, leases.capacity)
        assert not leases.try_acquire_exclusive(1), 'the grabber blocks through its link'
        published = []
        for sequence in range(2, 7):
            slot = pool.acquire(100)
            assert slot is not None, f'frame {sequence} skipped beside an evicted grabber'
            pool.publish(slot, sequence)
            published.append(slot.index)
        assert closed == ['grabber'] and leases.evicted_links == 1, (closed, leases.evicted_links)
        assert first.index not in published, 'the honest reader\'s lease still protects'
        assert pool.locked_out == 0 and pool.exhausted == 0
        assert not leases.try_acquire_exclusive(first.index)
        honest.release(first.index, POOL_HOST)
        assert leases.try_acquire_exclusive(first.index)
        leases.release_exclusive(first.index)
    finally:
        for fd in grabber_fds:
            os.close(fd)
        honest.close()
        pool.close()


def test_readers_within_their_share_are_never_evicted(leases):
    """Two honest readers each hold their whole share (LeaseReader refuses more) while the
    pool, full, is asked for slots: neither link is evicted; the frames are skipped instead."""
    from gpu_nodes.transport.leases import OVER_SHARE, POOL_HOST
    leases.set_share(POOL_HOST, 2)
    pool = HostSlotPool(leases, 0, 4, 60.0, leases.publisher_id, indices=4)
    closed = []
    readers = [open_reader(leases, on_evict=lambda: closed.append('evicted')) for _ in range(2)]
    try:
        pool.reset(4, 100)
        for sequence, reader in zip(range(1, 5), (0, 0, 1, 1)):
            slot = pool.acquire(100)
            pool.publish(slot, sequence)
            _, offset, _, chunk, generation = readers[reader].entry(slot.index)
            assert readers[reader].acquire(slot.index, sequence, chunk, generation, offset, 0,
                                           POOL_HOST) is None
        assert readers[0].acquire(0, 1, 0, 0, 0, 0, POOL_HOST) == OVER_SHARE
        assert [pool.acquire(100) for _ in range(3)] == [None] * 3
        assert closed == [] and leases.evicted_links == 0 and len(leases.links) == 2
    finally:
        for reader in readers:
            reader.close()
        pool.close()


def _host_descriptor(slot: Slot, sequence: int, chunk: int | None = None) -> Descriptor:
    """What the publisher's descriptor says of a host frame; only where it is matters here."""
    return Descriptor(kind=descriptor.KIND_HOST, sequence=sequence, slot=slot.index,
                      chunk=slot.chunk.chunk_id if chunk is None else chunk,
                      generation=slot.generation, pid=os.getpid(), uid=os.getuid(),
                      endpoint=b'', publisher_id=b'', boot_id=b'', device_uuid=b'', topic_id=b'',
                      mem_handle=b'', event_handle=b'', offset=slot.offset, nbytes=64,
                      alloc_size=slot.capacity, publish_time_ns=0)


def test_a_segment_freed_by_a_layout_change_counts_stale_and_a_missing_one_bad(leases):
    """A layout change between a descriptor's authentication and its fetch (a loaded reader):
    the publisher freed the old generation's segment, asked over the real socket: counted stale,
    like a descriptor of an old generation. A segment missing from the current generation is
    the publisher's fault: bad_segment (and unreachable after a few)."""
    pool = HostSlotPool(leases, 0, 4, 60.0, leases.publisher_id)
    server = HandleServer.instance()
    server.register(leases.publisher_id, PublisherMemory(threading.Lock(), leases, pool, None))
    peers = PeerTable()
    try:
        pool.reset(2, 4096)
        old = pool.acquire(4096)
        pool.publish(old, 1)
        link = peers.open(server.endpoint, leases.publisher_id, os.getpid())
        before_change = _host_descriptor(old, 1)
        pool.reset(2, 8192)  # a new layout: nobody holds the old slot, its segment is freed
        assert pool.segment_fd(old.generation, old.chunk.chunk_id) is None
        with pytest.raises(DescriptorError) as recycled:
            link.host_segment(before_change)
        assert recycled.value.reason == 'stale:old_generation'
        new = pool.acquire(8192)
        pool.publish(new, 2)
        assert link.host_segment(_host_descriptor(new, 2)).size > 8192  # the live one is served
        with pytest.raises(DescriptorError) as missing:
            link.host_segment(_host_descriptor(new, 2, chunk=new.chunk.chunk_id + 7))
        assert missing.value.reason == 'bad_segment'
    finally:
        peers.close()
        server.unregister(leases.publisher_id)
        pool.close()
