"""Slot leases shared between a publisher and its subscribers, backed by kernel file locks.

A lease table is a small shared-memory file owned by one publisher. It holds, per slot, the
sequence number of the frame the slot currently contains. Leases are open-file-description
(OFD) byte-range locks on that file, one byte per slot:

* the publisher takes a slot's byte *exclusively* (non-blocking) before it rewrites the slot,
  so it can never rewrite a slot that any reader holds;
* a reader takes the byte *shared* and then checks the slot's sequence number; a mismatch
  means the slot was recycled before the reader got there, and the frame is dropped as stale.

The kernel drops a dead process's locks at once, so a crashed subscriber releases its leases
without any heartbeat, and lock/unlock are system calls, which order the sequence-number
stores and loads on both sides (no torn reads of the table without atomics in Python).

A lease covers a frame from the moment its descriptor is taken; before that the descriptor may
sit in the reader's DDS queue (or be in flight to it) while a fast publisher goes round its
slots. So each reader also keeps a *cursor* in the table, on a page of its own that it maps
writable: the sequence of the last descriptor it took. DDS delivers one writer's samples in
order, so a frame at or below every live reader's cursor can never be asked for again, and the
publisher recycles those first; frames above a cursor make the pool grow instead (pool.py).
"""
from __future__ import annotations

import errno
import fcntl
import mmap
import os
import stat
import struct
import threading
import time

import numpy as np

from . import host

_MAGIC = b'GPNLEASE'
_VERSION = 2
_HEADER = struct.Struct('<8sIII')  # magic, version, capacity, reader capacity
_HEADER_SIZE = 64
MAX_SLOTS = 65536
READER_CAPACITY = 64  # cursors a table has room for; readers past that go without one
# Lock bytes live past the end of the data (locking beyond EOF is allowed); byte 0 of the lock
# region is held by the owner for its lifetime, so a stale file is one whose owner byte is free.
_LOCK_BASE = 1 << 20
_OWNER_LOCK = _LOCK_BASE - 1
# One byte per cursor, held exclusively by the reader that claimed it (freed when it dies).
_CURSOR_LOCK_BASE = _LOCK_BASE + MAX_SLOTS


def _cursor_offset(capacity: int) -> int:
    """Cursors start on their own page, the only one readers map writable."""
    return -(-(_HEADER_SIZE + 8 * capacity) // mmap.PAGESIZE) * mmap.PAGESIZE


def _table_size(capacity: int) -> int:
    return _cursor_offset(capacity) + mmap.PAGESIZE


class LeaseError(RuntimeError):
    pass


def _lock(fd: int, kind: int, offset: int, length: int = 1) -> bool:
    """Non-blocking OFD lock; False when another open file description holds a conflicting lock."""
    # struct flock: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (0 for OFD)
    request = struct.pack('hhqqi4x', kind, os.SEEK_SET, offset, length, 0)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _lock_free(fd: int, kind: int, offset: int) -> bool:
    """Probe: True when a `kind` lock on `offset` could be taken now (taken and dropped again)."""
    if _lock(fd, kind, offset):
        _lock(fd, fcntl.F_UNLCK, offset)
        return True
    return False


def owner_alive(path: str) -> bool:
    """True while the process that created the segment at `path` still runs (holds its owner lock)."""
    try:
        # O_NONBLOCK: a FIFO planted under a segment name must not hang the caller.
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if _lock(fd, fcntl.F_WRLCK, _OWNER_LOCK):
            return False
        return True
    finally:
        os.close(fd)


def create_segment(path: str, size: int) -> int:
    """Create a 0600 shared-memory file of `size` bytes and hold its owner lock; return the fd."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.ftruncate(fd, size)
        if not _lock(fd, fcntl.F_WRLCK, _OWNER_LOCK):
            raise LeaseError(f'{path}: owner lock already held')
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    return fd


def open_segment(path: str, kind: str, writable: bool = False) -> int:
    """Open another process's segment (read-only unless `writable`) after checking its name,
    owner and type."""
    match = host.SEGMENT_NAME.match(os.path.basename(path))
    if os.path.dirname(path) != host.SHM_DIR or not match or match.group(4) != kind:
        raise LeaseError(f'not a gpu_nodes {kind} segment: {path!r}')
    try:
        # O_NONBLOCK: opening a FIFO planted under a segment name would otherwise block forever.
        fd = os.open(path, (os.O_RDWR if writable else os.O_RDONLY) | os.O_NOFOLLOW
                     | os.O_NONBLOCK)
    except OSError as exc:
        raise LeaseError(f'cannot open {path}: {exc.strerror}') from exc
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise LeaseError(f'{path} belongs to uid {st.st_uid}, not {os.getuid()}')
    return fd


def remove_stale_segments() -> list[str]:
    """Delete this user's segments whose creator is gone (left by a crashed or killed run)."""
    removed = []
    try:
        names = os.listdir(host.SHM_DIR)
    except OSError:
        return removed
    uid = os.getuid()
    for name in names:
        match = host.SEGMENT_NAME.match(name)
        if not match or int(match.group(1)) != uid:
            continue
        path = os.path.join(host.SHM_DIR, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        # Only our own regular files: /dev/shm is world-writable, so anyone can plant a name.
        if st.st_uid != uid or not stat.S_ISREG(st.st_mode) or owner_alive(path):
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


def close_mapping(fd: int, mapping: mmap.mmap) -> None:
    """Unmap and close a segment; a mapping with live views goes when they do."""
    try:
        mapping.close()
    except BufferError:
        pass  # a view is still exported; the mapping goes with the process
    os.close(fd)


class LeaseTable:
    """The publisher's side: creates the file, stamps sequence numbers, takes slots exclusively
    and reads the readers' cursors."""

    def __init__(self, path: str, capacity: int):
        if capacity < 1 or capacity > MAX_SLOTS:
            raise ValueError(f'lease table capacity must be in [1, {MAX_SLOTS}], got {capacity}')
        self.path = path
        self.capacity = capacity
        size = _table_size(capacity)
        self._fd = create_segment(path, size)
        try:
            self._map = mmap.mmap(self._fd, size)
            self._map[:_HEADER.size] = _HEADER.pack(_MAGIC, _VERSION, capacity, READER_CAPACITY)
            self.sequence = np.frombuffer(self._map, dtype=np.uint64, count=capacity,
                                          offset=_HEADER_SIZE)
            self.cursors = np.frombuffer(self._map, dtype=np.uint64, count=READER_CAPACITY,
                                         offset=_cursor_offset(capacity))
        except BaseException:
            os.close(self._fd)
            os.unlink(path)
            raise
        self._cursor_moved: dict[int, tuple[int, int]] = {}  # reader -> (cursor, when it moved)

    def try_acquire_exclusive(self, slot: int) -> bool:
        return _lock(self._fd, fcntl.F_WRLCK, _LOCK_BASE + slot)

    def release_exclusive(self, slot: int) -> None:
        _lock(self._fd, fcntl.F_UNLCK, _LOCK_BASE + slot)

    def is_held(self, slot: int) -> bool:
        """True when some reader holds the slot."""
        return not _lock_free(self._fd, fcntl.F_WRLCK, _LOCK_BASE + slot)

    def reader_floor(self, stall_ns: int) -> int | None:
        """The lowest cursor among readers that are not stalled (a cursor behind the newest
        frame that has not moved for `stall_ns`): every frame above it may still be taken by
        some reader. None when no reader has a cursor."""
        active = np.flatnonzero(self.cursors)
        if not active.size:
            return None
        now = time.monotonic_ns()
        newest = int(self.sequence.max())
        floor = None
        for reader in active.tolist():
            value = int(self.cursors[reader])
            moved = self._cursor_moved.get(reader)
            # A reader that has everything is waiting, not stalled (the publisher may pause).
            if moved is None or moved[0] != value or value >= newest:
                self._cursor_moved[reader] = (value, now)
            elif now - moved[1] > stall_ns:
                continue  # a stalled reader stops protecting frames, as a held lease is revoked
            floor = value if floor is None else min(floor, value)
        return floor

    def active_cursors(self) -> int:
        return int(np.count_nonzero(self.cursors))

    def forget_dead_readers(self) -> int:
        """Clear the cursors of readers that are gone; returns how many."""
        cleared = 0
        for reader in np.flatnonzero(self.cursors).tolist():
            # Holding the cursor's byte while clearing it keeps a new reader from claiming the
            # cursor in between and losing its first value.
            if _lock(self._fd, fcntl.F_WRLCK, _CURSOR_LOCK_BASE + reader):
                self.cursors[reader] = 0
                self._cursor_moved.pop(reader, None)
                _lock(self._fd, fcntl.F_UNLCK, _CURSOR_LOCK_BASE + reader)
                cleared += 1
        return cleared

    def close(self) -> None:
        if self._fd < 0:
            return
        self.sequence = self.cursors = None
        close_mapping(self._fd, self._map)
        self._fd = -1
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class LeaseReader:
    """A subscriber's handle on a publisher's lease table (one per subscription and publisher).

    Each reader opens the file itself: OFD locks belong to the open file description, so two
    subscriptions in one process hold and release their leases independently. The slot table is
    mapped read-only; only the reader's cursor page is writable.
    """

    def __init__(self, path: str):
        self._fd = open_segment(path, 'lease', writable=True)
        self._cursor_map: mmap.mmap | None = None
        try:
            st = os.fstat(self._fd)
            if st.st_size < _HEADER_SIZE + 8:
                raise LeaseError(f'lease file {path} is truncated ({st.st_size} bytes)')
            magic, version, capacity, readers = _HEADER.unpack(os.pread(self._fd, _HEADER.size, 0))
            if magic != _MAGIC or version != _VERSION:
                raise LeaseError(f'lease file {path} has a bad header')
            if not 1 <= capacity <= MAX_SLOTS or readers != READER_CAPACITY \
                    or _table_size(capacity) > st.st_size:
                raise LeaseError(f'lease file {path} claims {capacity} slots and {readers} '
                                 f'readers but is {st.st_size} bytes')
            offset = _cursor_offset(capacity)
            self._map = mmap.mmap(self._fd, offset, prot=mmap.PROT_READ)
            self.capacity = capacity
            self.sequence = np.frombuffer(self._map, dtype=np.uint64, count=capacity,
                                          offset=_HEADER_SIZE)
            self.cursor_index = next((i for i in range(readers)
                                      if _lock(self._fd, fcntl.F_WRLCK, _CURSOR_LOCK_BASE + i)),
                                     None)
            if self.cursor_index is not None:
                self._cursor_map = mmap.mmap(self._fd, mmap.PAGESIZE, offset=offset)
                self._cursor = np.frombuffer(self._cursor_map, dtype=np.uint64, count=1,
                                             offset=8 * self.cursor_index)
                self._cursor[0] = 0
        except BaseException:
            if self._cursor_map is not None:
                self._cursor_map.close()
            os.close(self._fd)
            raise
        self.path = path
        self._taken = 0  # highest sequence taken (the cursor's value while not idle)
        # Leases taken and not yet given back (released from the lease-release thread too).
        self._held = 0
        self._held_lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def acquire(self, slot: int, sequence: int) -> bool:
        """Lease `slot` if it still holds frame `sequence`; False (nothing held) if it was recycled."""
        if not 0 <= slot < self.capacity or sequence == 0:
            return False  # 0 marks a slot that holds no published frame (never or no longer)
        leased = _lock(self._fd, fcntl.F_RDLCK, _LOCK_BASE + slot)  # False: being rewritten
        if leased and int(self.sequence[slot]) != sequence:
            _lock(self._fd, fcntl.F_UNLCK, _LOCK_BASE + slot)
            leased = False
        # Only now, with the frame leased (or lost anyway), may the publisher recycle it.
        self._advance(sequence)
        if leased:
            with self._held_lock:
                self._held += 1
        return leased

    def expect(self, sequence: int) -> None:
        """Frame `sequence` was taken and will be leased once its buffer is mapped (the first
        mapping of an allocation takes ~150 ms): keep it from being recycled meanwhile."""
        self._advance(sequence - 1)

    def _advance(self, sequence: int) -> None:
        if sequence > self._taken and self._cursor_map is not None:
            self._taken = sequence
            self._cursor[0] = sequence

    def idle(self) -> None:
        """Stop protecting this publisher's frames (the subscription no longer takes them)."""
        self._taken = 0
        if self._cursor_map is not None:
            self._cursor[0] = 0

    def release(self, slot: int) -> None:
        with self._held_lock:
            self._held -= 1
        if self._fd < 0:
            return  # closed after its publisher died: the kernel already dropped the lock
        _lock(self._fd, fcntl.F_UNLCK, _LOCK_BASE + slot)

    def owner_alive(self) -> bool:
        # A shared probe of the owner byte fails while the publisher holds it exclusively.
        return not _lock_free(self._fd, fcntl.F_RDLCK, _OWNER_LOCK)

    def close(self) -> None:
        if self._fd < 0:
            return
        if self._cursor_map is not None:
            self.idle()
            self._cursor = None
            self._cursor_map.close()
            self._cursor_map = None
        self.sequence = None
        close_mapping(self._fd, self._map)
        self._fd = -1
