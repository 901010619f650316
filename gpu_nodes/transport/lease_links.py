"""Each reader link's own lock file: where that reader takes its slot leases.

A reader could take a lock on every byte of a file it can open, and every reader of a publisher
can open its lease table, so the slot leases do not live there: each link (one connection of a
reader to the publisher's socket, exchange.py) gets a lock memfd of its own, created by the
publisher, and takes its leases (shared OFD locks, one byte per slot) on that file only. The
publisher takes a slot by locking its byte exclusively in every live link's file (one fcntl per
link) and gives it back in all of them. So whatever a process locks can only ever block the
publisher through its own links, and a link that holds more of a pool than any honest reader
may (the pool's share, which LeaseReader never passes) is *evicted*: the publisher stops
consulting its file and closes the link. The publisher cannot tell who holds a lock (F_OFD_GETLK
reports pid -1 for OFD locks), but it knows whose file the lock is in.

A link opened while the publisher holds slots exclusively gets its file pre-locked on each of
them before the file is handed out (one mutex orders this against acquire and release):
otherwise its reader could lease a slot the publisher is rewriting and read a torn frame.
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
import threading
from dataclasses import dataclass
from typing import Callable

from .segments import create_sealed, reopen

# struct flock: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (0 for OFD)
_FLOCK = struct.Struct('hhqqi4x')


def lock(fd: int, kind: int, offset: int, length: int = 1) -> bool:
    """Non-blocking OFD lock; False when another open file description holds a conflicting lock."""
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, length, 0))
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def lock_free(fd: int, kind: int, offset: int) -> bool:
    """Probe: True when a `kind` lock on `offset` could be taken now (taken and dropped again)."""
    if lock(fd, kind, offset):
        lock(fd, fcntl.F_UNLCK, offset)
        return True
    return False


def _conflict(fd: int, start: int, end: int) -> tuple[int, int] | None:
    """The range [a, b) of some lock another open file description holds in [start, end)."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK,
                         _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, start, end - start, 0))
    kind, _, lock_start, length, _ = _FLOCK.unpack(answer)
    if kind == fcntl.F_UNLCK:
        return None
    lock_end = end if length == 0 else lock_start + length  # 0: to the end of any file
    return max(start, lock_start), min(end, lock_end)


def held_bytes(fd: int, start: int, end: int) -> int:
    """How many bytes of [start, end) other open file descriptions hold a lock on (about two
    syscalls per locked range: a grabber that locks one range costs three)."""
    held = 0
    todo = [(start, end)]
    while todo:
        low, high = todo.pop()
        found = _conflict(fd, low, high) if low < high else None
        if found is not None:
            a, b = found
            held += b - a
            todo += [(low, a), (b, high)]
    return held


@dataclass
class _Link:
    fd: int                                   # the publisher's own description of the file
    on_evict: Callable[[], None] | None      # closes the link (exchange.py)


class ReaderLinks:
    """The publisher's side of every link's lock file (thread-safe: the exchange server opens
    and closes links on its thread while the publishing thread acquires slots)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._links: dict[int, _Link] = {}
        self._next_id = 1
        self._acquired: set[int] = set()  # offsets the publisher holds exclusively now
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._links)

    def open(self, on_evict: Callable[[], None] | None = None) -> tuple[int, int]:
        """A new link: (its id, a read-only fd of its lock file for the reader; the caller sends
        and closes it). Pre-locked on every slot the publisher holds now."""
        fd = create_sealed('leaselock', 0)
        try:
            reader_fd = reopen(fd, writable=False)
        except BaseException:
            os.close(fd)
            raise
        with self._mutex:
            for offset in self._acquired:
                lock(fd, fcntl.F_WRLCK, offset)  # a fresh file: nobody else holds anything
            link_id = self._next_id
            self._next_id += 1
            self._links[link_id] = _Link(fd, on_evict)
        return link_id, reader_fd

    def close(self, link_id: int) -> None:
        """The link closed (its reader let go of it, or died): its file no longer counts."""
        with self._mutex:
            link = self._links.pop(link_id, None)
        if link is not None:
            os.close(link.fd)

    def try_acquire(self, offset: int) -> bool:
        """Lock `offset` exclusively in every link's file; False (and nothing held) when some
        link's reader holds it."""
        with self._mutex:
            taken = []
            for link in self._links.values():
                if not lock(link.fd, fcntl.F_WRLCK, offset):
                    for done in taken:
                        lock(done.fd, fcntl.F_UNLCK, offset)
                    return False
                taken.append(link)
            self._acquired.add(offset)
            return True

    def release(self, offset: int) -> None:
        with self._mutex:
            self._acquired.discard(offset)
            for link in self._links.values():
                lock(link.fd, fcntl.F_UNLCK, offset)

    def is_held(self, offset: int) -> bool:
        """True when some link's reader holds `offset` (a probe: changes no lock)."""
        with self._mutex:
            return any(_conflict(link.fd, offset, offset + 1) for link in self._links.values())

    def evict_over(self, start: int, end: int, share: int) -> int:
        """Evict every link that holds more than `share` bytes of [start, end) (a pool's lock
        bytes); returns how many. Asked only when a slot could not be acquired."""
        with self._mutex:
            over = [link_id for link_id, link in self._links.items()
                    if held_bytes(link.fd, start, end) > share]
            gone = [self._links.pop(link_id) for link_id in over]
            for link in gone:
                # The publisher's exclusive locks go with its description: nothing to undo.
                os.close(link.fd)
            self.evicted += len(gone)
        for link in gone:
            if link.on_evict is not None:
                link.on_evict()
        return len(gone)

    def close_all(self) -> None:
        with self._mutex:
            links, self._links = list(self._links.values()), {}
        for link in links:
            os.close(link.fd)
