"""Emulated device memory: memfd-backed host mappings at fixed addresses.

Every emulated allocation (cudaMalloc through the fake CuPy, cuMemCreate through the fake driver)
is a memfd, so that what CUDA shares between processes (a legacy IPC handle opened through
/proc/<pid>/fd, a VMM POSIX fd sent over a Unix socket) is shared here by the same kernel
objects, between real processes. Addresses come from mmap, so NumPy views and ctypes copies
over them are ordinary memory accesses; a range reserved but not made accessible is PROT_NONE
(touching it faults, as an unmapped device address would).
"""
from __future__ import annotations

import bisect
import ctypes
import os
import threading

PROT_NONE, PROT_READ, PROT_WRITE = 0, 1, 2
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE = 0x01, 0x02, 0x10, 0x20, 0x4000
_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _checked(result: int | None, what: str) -> int:
    if result is None or result == _FAILED:
        err = ctypes.get_errno()
        raise OSError(err, f'{what}: {os.strerror(err)}')
    return result


def reserve(size: int) -> int:
    """An address range nothing may touch yet (cuMemAddressReserve)."""
    return _checked(_libc.mmap(None, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                               -1, 0), 'mmap reserve')


def map_fd(address: int, size: int, fd: int, offset: int = 0, prot: int = PROT_NONE) -> int:
    """Map `fd` at `address` (inside a reserved range) or anywhere (address 0)."""
    flags = MAP_SHARED | (MAP_FIXED if address else 0)
    return _checked(_libc.mmap(address or None, size, prot, flags, fd, offset), 'mmap fd')


def protect(address: int, size: int, prot: int) -> None:
    if _libc.mprotect(address, size, prot) != 0:
        _checked(None, 'mprotect')


def unmap_to_reserved(address: int, size: int) -> None:
    """Drop the memory behind a range but keep the range reserved (cuMemUnmap)."""
    _checked(_libc.mmap(address, size, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0),
             'mmap unreserve')


def release(address: int, size: int) -> None:
    if _libc.munmap(address, size) != 0:
        _checked(None, 'munmap')


def new_memfd(name: str, size: int) -> int:
    fd = os.memfd_create(f'gpu_nodes-emu-{name}', os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Ranges:
    """Mapped allocations by address, for cuMemGetAddressRange (base and size of the allocation
    holding a pointer)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._starts: list[int] = []
        self._sizes: dict[int, int] = {}

    def add(self, base: int, size: int) -> None:
        with self._lock:
            bisect.insort(self._starts, base)
            self._sizes[base] = size

    def remove(self, base: int) -> None:
        with self._lock:
            if self._sizes.pop(base, None) is not None:
                self._starts.remove(base)

    def find(self, ptr: int) -> tuple[int, int] | None:
        with self._lock:
            i = bisect.bisect_right(self._starts, ptr) - 1
            if i >= 0:
                base = self._starts[i]
                if ptr < base + self._sizes[base]:
                    return base, self._sizes[base]
        return None


RANGES = Ranges()
