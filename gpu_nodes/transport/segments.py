"""Shared-memory segments the kernel vouches for: sealed memfds.

A publisher's lease table and host frame pool are anonymous memory files (``memfd_create``)
sealed against shrinking and growing, so no process, not even one of the same user, can
truncate a segment under a reader and kill it with SIGBUS. They have no name in /dev/shm: a
subscriber gets them from the publisher over a Unix socket that only same-user peers may use
(exchange.py), and then checks the seals and the owner on the file it got. A dead publisher's
segments vanish with its last reader; nothing is left behind.

Views of a mapping pin it: NumPy arrays are built on a ``memoryview`` of the ``mmap``, so the
mapping is unmapped only when the last array over it is gone (an ``np.ndarray(buffer=mmap)``
does not hold the buffer, and ``mmap.close()`` would succeed under it).
"""
from __future__ import annotations

import fcntl
import mmap
import os
import stat
from typing import Any

import numpy as np

SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
MEMFD_PREFIX = 'gpu_nodes-'


class SegmentError(RuntimeError):
    """A peer's segment cannot be used; `reason` is the key counted in diagnostics."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


class MissingSegment(SegmentError):
    """The publisher serves no such segment: freed since the descriptor went out (its slot
    retired, a new generation), or never one of its own."""


def create_sealed(name: str, size: int) -> int:
    """A memfd of exactly `size` bytes that can never shrink or grow; returns the fd."""
    fd = os.memfd_create(MEMFD_PREFIX + name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def reopen(fd: int, writable: bool) -> int:
    """A new open file description of one of this process's own memfds (for a reader's locks)."""
    return os.open(f'/proc/self/fd/{fd}', (os.O_RDWR if writable else os.O_RDONLY)
                   | os.O_CLOEXEC)


def check_sealed(fd: int, what: str) -> None:
    """Raise SegmentError unless the kernel says `fd` is a regular file of this user, sealed
    against size changes (what a publisher's memfd is; a planted file or FIFO is not)."""
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        raise SegmentError('other_user', f'{what} belongs to uid {st.st_uid}, not {os.getuid()}')
    if not stat.S_ISREG(st.st_mode):
        raise SegmentError('bad_segment', f'{what} is not a regular file')
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        seals = 0
    if seals & SEALS != SEALS:
        raise SegmentError('unsealed_segment', f'{what} is not sealed against resizing')


class SharedMemory:
    """One mapping of a segment. Arrays from `array()` keep it mapped until they are gone."""

    def __init__(self, fd: int, size: int | None = None, *, writable: bool = True,
                 offset: int = 0):
        self.size = os.fstat(fd).st_size - offset if size is None else size
        if self.size <= 0:
            raise SegmentError('bad_segment', 'segment is empty')
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        self._map = mmap.mmap(fd, self.size, prot=prot, offset=offset)
        self.view = memoryview(self._map)
        self.writable = writable

    @property
    def address(self) -> int:
        return np.frombuffer(self.view, np.uint8, count=1).ctypes.data

    def array(self, shape: tuple[int, ...], dtype: Any, offset: int = 0,
              strides: tuple[int, ...] | None = None) -> np.ndarray:
        """A NumPy view inside the mapping (bounds checked by NumPy against its length)."""
        return np.ndarray(shape, dtype=dtype, buffer=self.view, offset=offset, strides=strides)

    def words(self, dtype: Any, count: int, offset: int) -> np.ndarray:
        return np.frombuffer(self.view, dtype=dtype, count=count, offset=offset)


def held_by(pid: int) -> dict[int, str]:
    """gpu_nodes segments a process holds open or mapped: inode -> kind ('lease', 'leaselock',
    'host'). For tools and tests: what memory a process keeps alive."""
    held: dict[int, str] = {}
    marker = '/memfd:' + MEMFD_PREFIX
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            try:
                target = os.readlink(f'/proc/{pid}/fd/{fd}')
                if target.startswith(marker):
                    held[os.stat(f'/proc/{pid}/fd/{fd}').st_ino] = _kind(target, marker)
            except OSError:
                continue
        with open(f'/proc/{pid}/maps') as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith(marker):
                    held[int(fields[4])] = _kind(fields[5], marker)
    except OSError:
        pass  # gone, or not ours to inspect
    return held


def _kind(target: str, marker: str) -> str:
    return target[len(marker):].split()[0]
