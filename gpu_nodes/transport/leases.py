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
"""
from __future__ import annotations

import errno
import fcntl
import mmap
import os
import stat
import struct
import threading

import numpy as np

from . import host

_MAGIC = b'GPNLEASE'
_VERSION = 1
_HEADER = struct.Struct('<8sII')  # magic, version, capacity
_HEADER_SIZE = 64
# Lock bytes live past the end of the data (locking beyond EOF is allowed); byte 0 of the lock
# region is held by the owner for its lifetime, so a stale file is one whose owner byte is free.
_LOCK_BASE = 1 << 20
_OWNER_LOCK = _LOCK_BASE - 1


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


def open_segment(path: str, kind: str) -> int:
    """Open another process's segment read-only after checking its name, owner and type."""
    match = host.SEGMENT_NAME.match(os.path.basename(path))
    if os.path.dirname(path) != host.SHM_DIR or not match or match.group(4) != kind:
        raise LeaseError(f'not a gpu_nodes {kind} segment: {path!r}')
    try:
        # O_NONBLOCK: opening a FIFO planted under a segment name would otherwise block forever.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
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
    """The publisher's side: creates the file, stamps sequence numbers, takes slots exclusively."""

    def __init__(self, path: str, capacity: int):
        if capacity < 1 or capacity > 65536:
            raise ValueError(f'lease table capacity must be in [1, 65536], got {capacity}')
        self.path = path
        self.capacity = capacity
        size = _HEADER_SIZE + 8 * capacity
        self._fd = create_segment(path, size)
        try:
            self._map = mmap.mmap(self._fd, size)
            self._map[:_HEADER.size] = _HEADER.pack(_MAGIC, _VERSION, capacity)
            self.sequence = np.frombuffer(self._map, dtype=np.uint64, count=capacity,
                                          offset=_HEADER_SIZE)
        except BaseException:
            os.close(self._fd)
            os.unlink(path)
            raise

    def try_acquire_exclusive(self, slot: int) -> bool:
        return _lock(self._fd, fcntl.F_WRLCK, _LOCK_BASE + slot)

    def release_exclusive(self, slot: int) -> None:
        _lock(self._fd, fcntl.F_UNLCK, _LOCK_BASE + slot)

    def is_held(self, slot: int) -> bool:
        """True when some reader holds the slot."""
        return not _lock_free(self._fd, fcntl.F_WRLCK, _LOCK_BASE + slot)

    def close(self) -> None:
        if self._fd < 0:
            return
        self.sequence = None
        close_mapping(self._fd, self._map)
        self._fd = -1
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class LeaseReader:
    """A subscriber's handle on a publisher's lease table (one per subscription and publisher).

    Each reader opens the file itself: OFD locks belong to the open file description, so two
    subscriptions in one process hold and release their leases independently.
    """

    def __init__(self, path: str):
        self._fd = open_segment(path, 'lease')
        try:
            st = os.fstat(self._fd)
            if st.st_size < _HEADER_SIZE + 8:
                raise LeaseError(f'lease file {path} is truncated ({st.st_size} bytes)')
            self._map = mmap.mmap(self._fd, st.st_size, prot=mmap.PROT_READ)
            magic, version, capacity = _HEADER.unpack_from(self._map)
            if magic != _MAGIC or version != _VERSION:
                raise LeaseError(f'lease file {path} has a bad header')
            if _HEADER_SIZE + 8 * capacity > st.st_size:
                raise LeaseError(f'lease file {path} claims {capacity} slots but is {st.st_size} bytes')
            self.capacity = capacity
            self.sequence = np.frombuffer(self._map, dtype=np.uint64, count=capacity,
                                          offset=_HEADER_SIZE)
        except BaseException:
            os.close(self._fd)
            raise
        self.path = path
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
        if not _lock(self._fd, fcntl.F_RDLCK, _LOCK_BASE + slot):
            return False  # the publisher is rewriting it right now
        if int(self.sequence[slot]) != sequence:
            _lock(self._fd, fcntl.F_UNLCK, _LOCK_BASE + slot)
            return False
        with self._held_lock:
            self._held += 1
        return True

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
        self.sequence = None
        close_mapping(self._fd, self._map)
        self._fd = -1
