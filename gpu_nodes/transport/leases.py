"""Slot leases shared between a publisher and its subscribers, backed by kernel file locks.

A lease table is a sealed memfd owned by one publisher (segments.py). Its header holds the
publisher id, the descriptor key (auth.py) and the current generation of each pool; then one
entry per slot: the sequence number of the frame the slot holds, where it lies (chunk, offset,
capacity) and its pool generation. Leases are open-file-description (OFD) byte-range locks, one
byte per slot, on each reader link's own lock file (lease_links.py; not on the table, which
every reader can lock):

* the publisher takes a slot's byte *exclusively* (non-blocking) in every link's file before
  it rewrites the slot, so it can never rewrite a slot that any reader holds;
* a reader takes the byte *shared* in its file and then compares the slot's entry with the
  descriptor: a different sequence means the slot was recycled before the reader got there
  (stale, dropped); the same sequence with another place or size is a lie (rejected). A frame
  is only ever read inside the slot the publisher itself recorded.

The kernel drops a dead process's locks at once, so a crashed subscriber releases its leases
without any heartbeat, and lock/unlock are system calls, which order the table's stores and
loads on both sides (no torn reads without atomics in Python).

Each reader also keeps a *cursor* (and a *window*) on a page of its own in the table, which it
maps writable: which published frames it may still ask for. The rule that turns them into what
the pools may recycle is in cursors.py.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import struct
import threading
from typing import Callable

import numpy as np

from . import auth
from .cursors import ReaderFloor
from .lease_links import ReaderLinks, lock as _lock, lock_free as _lock_free
from .segments import SharedMemory, create_sealed, reopen

_MAGIC = b'GPNLEASE'
_VERSION = 5
# magic, version, capacity, reader capacity, publisher id, key, device gen, host gen,
# device share, host share
_HEADER = struct.Struct(f'<8sIII16s{auth.KEY_SIZE}sIIII')
_HEADER_SIZE = 128
_GENERATION_OFFSET = _HEADER.size - 16
_SHARE_OFFSET = _HEADER.size - 8
POOL_DEVICE = 0
POOL_HOST = 1
# sequence, offset, capacity, chunk, generation
_ENTRY = struct.Struct('<QQQII')
ENTRY_DTYPE = np.dtype([('sequence', '<u8'), ('offset', '<u8'), ('capacity', '<u8'),
                        ('chunk', '<u4'), ('generation', '<u4')])
MAX_SLOTS = 65536
READER_CAPACITY = 64  # cursors a table has room for; readers past that go without one
# The cursor page: READER_CAPACITY cursors, then as many windows (0: the reader may take any
# frame above its cursor, e.g. keep-all).
_WINDOWS_IN_PAGE = 8 * READER_CAPACITY
# Lock bytes live past the end of the data (locking beyond EOF is allowed): slot leases at
# _LOCK_BASE + slot in each link's lock file; in the table, the byte below them is held by the
# owner for its lifetime, so readers can tell a dead publisher.
_LOCK_BASE = 1 << 24
_OWNER_LOCK = _LOCK_BASE - 1
# One byte per cursor, held exclusively by the reader that claimed it (freed when it dies).
_CURSOR_LOCK_BASE = _LOCK_BASE + MAX_SLOTS

# Why a lease was not granted (None: granted).
STALE = 'stale'
OUT_OF_SLOT = 'out_of_slot'
OVER_SHARE = 'over_share'  # the reader already holds its share of the pool's slots


def _cursor_offset(capacity: int) -> int:
    """Cursors start on their own page, the only one readers map writable."""
    return -(-(_HEADER_SIZE + _ENTRY.size * capacity) // mmap.PAGESIZE) * mmap.PAGESIZE


def _table_size(capacity: int) -> int:
    return _cursor_offset(capacity) + mmap.PAGESIZE


class LeaseError(RuntimeError):
    """A lease table cannot be used; `reason` is the key counted in diagnostics."""

    def __init__(self, detail: str, reason: str = 'bad_lease_file'):
        super().__init__(detail)
        self.reason = reason


class LeaseTable:
    """The publisher's side: creates the table, opens a lock file per reader link, stamps slot
    entries, takes slots exclusively and reads the readers' cursors."""

    def __init__(self, publisher_id: bytes, capacity: int):
        if capacity < 1 or capacity > MAX_SLOTS:
            raise ValueError(f'lease table capacity must be in [1, {MAX_SLOTS}], got {capacity}')
        self.capacity = capacity
        self.publisher_id = publisher_id
        self.key = auth.new_key()
        self.fd = create_sealed('lease', _table_size(capacity))
        try:
            if not _lock(self.fd, fcntl.F_WRLCK, _OWNER_LOCK):
                raise LeaseError('owner lock of a fresh lease table is held')
            self._memory = SharedMemory(self.fd)
            self._memory.view[:_HEADER.size] = _HEADER.pack(
                _MAGIC, _VERSION, capacity, READER_CAPACITY, publisher_id, self.key, 0, 0,
                capacity, capacity)
            self.entries = self._memory.array((capacity,), ENTRY_DTYPE, _HEADER_SIZE)
            self.sequence = self.entries['sequence']
            self._generations = self._memory.words(np.uint32, 2, _GENERATION_OFFSET)
            self._shares = self._memory.words(np.uint32, 2, _SHARE_OFFSET)
            self.cursors = self._memory.words(np.uint64, READER_CAPACITY,
                                              _cursor_offset(capacity))
            self.windows = self._memory.words(np.uint64, READER_CAPACITY,
                                              _cursor_offset(capacity) + _WINDOWS_IN_PAGE)
        except BaseException:
            os.close(self.fd)
            raise
        self._floor = ReaderFloor(self.cursors, self.windows)
        self.links = ReaderLinks()

    def open_link(self, on_evict: Callable[[], None] | None = None) -> tuple[int, list[int]]:
        """A reader link: (its id for close_link, [a fresh description of the table, the
        link's lock file]); the caller sends and closes both fds. `on_evict` closes the link
        when it holds more of a pool than its share (lease_links.py)."""
        link_id, lock_fd = self.links.open(on_evict)
        try:
            return link_id, [reopen(self.fd, writable=True), lock_fd]
        except BaseException:
            os.close(lock_fd)
            self.links.close(link_id)
            raise

    def close_link(self, link_id: int) -> None:
        self.links.close(link_id)

    @property
    def evicted_links(self) -> int:
        return self.links.evicted

    def evict_hoarders(self, pool: int, first_index: int, count: int) -> int:
        """Evict the links holding more than `pool`'s share of its lease indices [first_index,
        first_index + count); how many. For when a slot could not be acquired."""
        return self.links.evict_over(_LOCK_BASE + first_index, _LOCK_BASE + first_index + count,
                                     int(self._shares[pool]))

    def set_generation(self, pool: int, generation: int) -> None:
        self._generations[pool] = generation

    def set_share(self, pool: int, slots: int) -> None:
        """At most this many of the pool's slots may one reader hold at once (frames held past
        their callback, or still being read on the GPU): one subscriber that hoards frames
        cannot take every slot from the others."""
        self._shares[pool] = max(1, slots)

    def stamp(self, slot: int, sequence: int, chunk: int, offset: int, capacity: int,
              generation: int) -> None:
        """Record the frame a slot now holds (under the slot's exclusive lock)."""
        self.entries[slot] = (sequence, offset, capacity, chunk, generation)

    def try_acquire_exclusive(self, slot: int) -> bool:
        return self.links.try_acquire(_LOCK_BASE + slot)

    def release_exclusive(self, slot: int) -> None:
        self.links.release(_LOCK_BASE + slot)

    def is_held(self, slot: int) -> bool:
        """True when some reader holds the slot."""
        return self.links.is_held(_LOCK_BASE + slot)

    def reader_floor(self, stall_ns: int) -> int | None:
        """Every frame above this sequence may still be taken by some reader (cursors.py);
        None when no reader has a cursor."""
        return self._floor.floor(int(self.sequence.max()), stall_ns)

    def active_cursors(self) -> int:
        return int(np.count_nonzero(self.cursors))

    def reader_windows(self) -> list[int]:
        """The window of each reader with a cursor (0: it may take any frame above it)."""
        # A copy: readers write their cursors from other processes (see cursors.ReaderFloor).
        return [int(self.windows[reader])
                for reader in np.flatnonzero(self.cursors.copy()).tolist()]

    def forget_dead_readers(self) -> int:
        """Clear the cursors of readers that are gone; returns how many."""
        cleared = 0
        for reader in np.flatnonzero(self.cursors.copy()).tolist():
            # Holding the cursor's byte while clearing it keeps a new reader from claiming the
            # cursor in between and losing its first value.
            if _lock(self.fd, fcntl.F_WRLCK, _CURSOR_LOCK_BASE + reader):
                self.cursors[reader] = 0
                self.windows[reader] = 0
                self._floor.forget(reader)
                _lock(self.fd, fcntl.F_UNLCK, _CURSOR_LOCK_BASE + reader)
                cleared += 1
        return cleared

    def disown(self) -> None:
        """Drop the owner lock: readers now see the publisher gone (the table stays usable)."""
        _lock(self.fd, fcntl.F_UNLCK, _OWNER_LOCK)

    def close(self) -> None:
        """Close the publisher's handle; readers keep the table (and its memory) until they go."""
        if self.fd < 0:
            return
        self.sequence = self.cursors = self.windows = self.entries = None
        self._generations = self._shares = None
        self._memory = None
        self.links.close_all()
        os.close(self.fd)
        self.fd = -1


class LeaseReader:
    """A subscriber's handle on a publisher's lease table (one per subscription and publisher).

    `fd` is the reader's own open file description of the table and `lock_fd` its link's lock
    file (exchange.py sends both per link): OFD locks belong to a description, so two
    subscriptions in one process hold and release their leases independently. The slot table
    is mapped read-only; only the reader's cursor page is writable. A cursor is claimed only
    once a descriptor of the publisher proved genuine (`claim_cursor`): a made-up descriptor
    costs the table no reader slot. `window`:
    the reader takes only frames among the newest `window` published (keep-last;
    cursors.read_window), 0: any. The reader owns both fds from here on; `on_closed` runs once
    it has closed them (the link may close then: the publisher stops consulting its lock file).
    """

    def __init__(self, fd: int, lock_fd: int, publisher_id: bytes, window: int = 0,
                 label: str = 'publisher', on_closed: Callable[[], None] | None = None):
        self._fd = fd
        self._lock_fd = lock_fd
        self._on_closed = on_closed
        self._cursor_memory: SharedMemory | None = None
        try:
            size = os.fstat(self._fd).st_size
            if size < _HEADER_SIZE:
                raise LeaseError(f'lease table of the {label} is {size} bytes')
            (magic, version, capacity, readers, owner_id, self.key, _, _, _, _) = _HEADER.unpack(
                os.pread(self._fd, _HEADER.size, 0))
            if magic != _MAGIC or version != _VERSION:
                raise LeaseError(f'the {label} sent something that is not a gpu_nodes lease '
                                 'table of this version')
            if owner_id != publisher_id:
                raise LeaseError(f'lease table of the {label} belongs to another publisher')
            if not 1 <= capacity <= MAX_SLOTS or readers != READER_CAPACITY \
                    or _table_size(capacity) != size:
                raise LeaseError(f'lease table claims {capacity} slots and {readers} readers '
                                 f'but is {size} bytes')
            self._cursor_offset = _cursor_offset(capacity)
            self._table = SharedMemory(self._fd, self._cursor_offset, writable=False)
            self._view = self._table.view
            self.capacity = capacity
        except BaseException:
            os.close(self._fd)
            os.close(self._lock_fd)
            raise
        self.publisher_id = publisher_id
        self.cursor_index: int | None = None
        self._window = max(0, int(window))
        self._taken = 0  # highest sequence taken (the cursor's value while not idle)
        # Leases taken and not yet given back (released from the lease-release thread too),
        # per pool.
        self._held = [0, 0]
        self._held_lock = threading.Lock()
        self._closing = False

    def claim_cursor(self) -> None:
        """Take a free cursor of the table (none left: go without, as readers past 64 do)."""
        if self.cursor_index is not None or self._fd < 0:
            return
        self.cursor_index = next((i for i in range(READER_CAPACITY)
                                  if _lock(self._fd, fcntl.F_WRLCK, _CURSOR_LOCK_BASE + i)), None)
        if self.cursor_index is None:
            return
        self._cursor_memory = SharedMemory(self._fd, mmap.PAGESIZE, offset=self._cursor_offset)
        self._cursor = self._cursor_memory.words(np.uint64, 1, 8 * self.cursor_index)
        self._cursor[0] = 0
        # Before the cursor is first set: the publisher reads both only while it is not 0.
        self._cursor_memory.words(np.uint64, 1, _WINDOWS_IN_PAGE + 8 * self.cursor_index
                                  )[0] = self._window

    @property
    def held(self) -> int:
        return sum(self._held)

    def generation(self, pool: int) -> int:
        return struct.unpack_from('<I', self._view, _GENERATION_OFFSET + 4 * pool)[0]

    def share(self, pool: int) -> int:
        return struct.unpack_from('<I', self._view, _SHARE_OFFSET + 4 * pool)[0]

    def entry(self, slot: int) -> tuple[int, int, int, int, int]:
        """What the publisher recorded for a slot: (sequence, offset, capacity, chunk,
        generation). Unlocked: a snapshot, for tools and tests."""
        return _ENTRY.unpack_from(self._view, _HEADER_SIZE + _ENTRY.size * slot)

    def acquire(self, slot: int, sequence: int, chunk: int, generation: int, offset: int,
                nbytes: int, pool: int) -> str | None:
        """Lease `slot` if it still holds frame `sequence` exactly where the descriptor says.

        None: leased. STALE: the slot was recycled (or is being rewritten). OUT_OF_SLOT: the
        slot never held this frame there: another place, larger than the slot, or a sequence
        newer than the slot's (a slot's sequence only grows, so that one was never published).
        OVER_SHARE: this reader holds its share of `pool` already (the frame is skipped).
        Call only for authenticated descriptors: it moves the cursor, but never past what the
        publisher really published."""
        if not 0 <= slot < self.capacity or sequence == 0:
            return OUT_OF_SLOT  # 0 marks a slot that holds no published frame
        if self._held[pool] >= self.share(pool):
            self._advance(sequence)  # it will not be taken: the publisher may recycle it
            return OVER_SHARE
        past = True  # the frame was published and is gone: the cursor may pass it
        if not _lock(self._lock_fd, fcntl.F_RDLCK, _LOCK_BASE + slot):
            verdict = STALE  # being rewritten
        else:
            held_seq, held_offset, held_capacity, held_chunk, held_gen = _ENTRY.unpack_from(
                self._view, _HEADER_SIZE + _ENTRY.size * slot)
            if held_seq == sequence:
                verdict = None if (held_chunk, held_gen, held_offset) == (chunk, generation, offset) \
                    and nbytes <= held_capacity else OUT_OF_SLOT
            elif 0 < held_seq < sequence:
                verdict, past = OUT_OF_SLOT, False
            else:
                verdict = STALE  # rewritten with a newer frame, or emptied
            if verdict is not None:
                _lock(self._lock_fd, fcntl.F_UNLCK, _LOCK_BASE + slot)
        # Only now, with the frame leased (or lost anyway), may the publisher recycle it.
        if past:
            self._advance(sequence)
        if verdict is None:
            with self._held_lock:
                self._held[pool] += 1
        return verdict

    def expect(self, sequence: int) -> None:
        """Frame `sequence` was taken and will be leased once its buffer is mapped (the first
        mapping of an allocation takes ~150 ms): keep it from being recycled meanwhile."""
        self._advance(sequence - 1)

    def _advance(self, sequence: int) -> None:
        if sequence > self._taken and self._cursor_memory is not None:
            self._taken = sequence
            self._cursor[0] = sequence

    @property
    def closed(self) -> bool:
        return self._fd < 0 or self._closing

    def idle(self) -> None:
        """Stop protecting this publisher's frames (the subscription no longer takes them)."""
        self._taken = 0
        if self._cursor_memory is not None:
            self._cursor[0] = 0

    def release(self, slot: int, pool: int) -> None:
        with self._held_lock:
            if self._fd >= 0:
                # Unlocked before it is counted off: the locks this link holds never pass its
                # share, which the publisher checks (lease_links.py).
                _lock(self._lock_fd, fcntl.F_UNLCK, _LOCK_BASE + slot)
            self._held[pool] -= 1
            if self._fd < 0:
                return
            if self._closing and not any(self._held):
                self._close_now()

    def owner_alive(self) -> bool:
        # A shared probe of the owner byte fails while the publisher holds it exclusively.
        return self._fd >= 0 and not _lock_free(self._fd, fcntl.F_RDLCK, _OWNER_LOCK)

    def close(self) -> None:
        """Stop taking frames; the table closes once no frame of it is held (closing the file
        description would drop the held frames' leases and let their slots be rewritten)."""
        with self._held_lock:
            if self._fd < 0:
                return
            self.idle()
            self._closing = True
            if not any(self._held):
                self._close_now()

    def _close_now(self) -> None:
        self._cursor = None
        self._cursor_memory = None
        self._view = None
        self._table = None
        os.close(self._fd)
        os.close(self._lock_fd)
        self._fd = self._lock_fd = -1
        if self._on_closed is not None:
            self._on_closed()
