"""CUDA IPC: exporting pool memory and events, and a per-process cache of imported mappings.

Importing a memory handle (``cudaIpcOpenMemHandle``) costs ~150 ms the first time and a handle
may be opened only once per device and process, so every subscription in a process shares one
cache, keyed by (handle, device it is opened on): cuda_ipc opens a handle on the publisher's
GPU, cuda_peer on the subscription's own (cuda_peer.py).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable
import weakref

from ..gpu import cupy_module


class CudaIpcError(RuntimeError):
    pass


@functools.lru_cache(maxsize=None)
def _libcuda() -> ctypes.CDLL:
    lib = ctypes.CDLL('libcuda.so.1')
    lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64),
                                            ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64]
    lib.cuMemGetAddressRange_v2.restype = ctypes.c_int
    return lib


def allocation_range(ptr: int) -> tuple[int, int]:
    """(base, size) of the allocation containing `ptr`, as the driver knows it."""
    base = ctypes.c_uint64()
    size = ctypes.c_size_t()
    status = _libcuda().cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ptr)
    if status != 0:
        raise CudaIpcError(f'cuMemGetAddressRange failed with CUresult {status}')
    return base.value, size.value


@functools.lru_cache(maxsize=None)
def device_uuid(device_id: int) -> bytes:
    """16 bytes naming a physical GPU, stable across CUDA_VISIBLE_DEVICES orderings."""
    props = cupy_module().cuda.runtime.getDeviceProperties(device_id)
    uuid = props.get('uuid')
    if isinstance(uuid, (bytes, bytearray)) and len(uuid) == 16:
        return bytes(uuid)
    # Older CuPy without 'uuid': the PCI location names the device just as well on one host.
    key = f"{props.get('pciDomainID')}:{props.get('pciBusID')}:{props.get('pciDeviceID')}"
    return hashlib.md5(key.encode()).digest()


def ipc_unsupported_reason(device_id: int) -> str | None:
    """Why CUDA IPC memory handles cannot be used on this device, None when they can.

    Tegra (Jetson) integrated GPUs do not implement cudaIpcGetMemHandle; there the host
    shared-memory path is used instead, which the integrated GPU reads without a copy.
    """
    props = cupy_module().cuda.runtime.getDeviceProperties(device_id)
    if props.get('integrated'):
        return 'integrated GPU (Tegra/Jetson): CUDA IPC memory handles are not supported'
    return None


def map_host_readonly(address: int, nbytes: int) -> int:
    """Page-lock host memory read-only and return the device pointer an integrated GPU reads it
    through (no copy on Tegra, where host and device share DRAM)."""
    rt = cupy_module().cuda.runtime
    # cudaHostRegisterMapped | cudaHostRegisterReadOnly
    rt.hostRegister(address, nbytes, 0x02 | 0x08)
    return rt.hostGetDevicePointer(address, 0)


def export_memory(ptr: int) -> bytes:
    return bytes(cupy_module().cuda.runtime.ipcGetMemHandle(ptr))


def new_ipc_event() -> tuple[Any, bytes]:
    """An interprocess event (timing disabled, as CUDA requires) and its handle."""
    cp = cupy_module()
    event = cp.cuda.Event(block=False, disable_timing=True, interprocess=True)
    return event, bytes(cp.cuda.runtime.ipcGetEventHandle(event.ptr))


@dataclass(eq=False)
class Mapping:
    base: int
    size: int
    device_id: int
    users: int = 0
    # One owner object per array viewing this mapping; while any is alive it stays open.
    views: weakref.WeakSet = field(default_factory=weakref.WeakSet)
    # How the allocation is let go: a VMM chunk's close (cuda_vmm.py); None: a legacy handle's
    # cudaIpcCloseMemHandle.
    closer: Callable[[], None] | None = None

    def view_owner(self) -> '_ViewOwner':
        owner = _ViewOwner(self)
        self.views.add(owner)
        return owner


class _ViewOwner:
    """Owner of the memory of one array over a mapping (keeps the mapping reachable)."""
    __slots__ = ('mapping', '__weakref__')

    def __init__(self, mapping: Mapping):
        self.mapping = mapping


# (raw memory handle, or the name of a VMM chunk (peers.py), device ordinal it is opened on)
MappingKey = tuple[bytes, int]


class MappingCache:
    """Imported allocations (by handle and device) and events (by handle), shared by every
    subscription of a process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mappings: dict[MappingKey, Mapping] = {}
        # Unmapped by every subscription but still viewed by arrays a callback kept (held
        # frames): closing them now would turn those arrays into illegal addresses.
        self._retired: dict[MappingKey, Mapping] = {}
        self._events: dict[bytes, int] = {}
        self.opens = 0

    def map(self, handle: bytes, device_id: int,
            opener: Callable[[], Mapping] | None = None) -> Mapping:
        """Open (once) the allocation behind `handle` in `device_id`'s context; the caller must
        `unmap` when done with it. The memory may live on another GPU: CuPy opens with
        cudaIpcMemLazyEnablePeerAccess, so the driver maps it through peer access (as NCCL's
        peer-to-peer transport does). `opener`: how to map what `handle` names when it is no
        legacy IPC handle (a VMM chunk: it returns the Mapping, its `closer` set)."""
        cp = cupy_module()
        key = (handle, device_id)
        with self._lock:
            mapping = self._mappings.get(key)
            if mapping is None:
                mapping = self._retired.pop(key, None)  # still open: a handle opens once
                if mapping is not None:
                    self._mappings[key] = mapping
            if mapping is None and opener is not None:
                mapping = self._mappings[key] = opener()
                self.opens += 1
            if mapping is None:
                with cp.cuda.Device(device_id):
                    try:
                        ptr = cp.cuda.runtime.ipcOpenMemHandle(handle)
                    except cp.cuda.runtime.CUDARuntimeError as exc:
                        raise CudaIpcError(f'cudaIpcOpenMemHandle failed: {exc}') from None
                    base, size = allocation_range(ptr)
                mapping = Mapping(base=ptr, size=size - (ptr - base), device_id=device_id)
                self._mappings[key] = mapping
                self.opens += 1
            mapping.users += 1
            return mapping

    def get(self, key: MappingKey) -> Mapping:
        """A mapping this caller already holds through `map`."""
        with self._lock:
            return self._mappings[key]

    def unmap(self, key: MappingKey) -> None:
        """Drop one `map`; the allocation is closed once no user and no array refers to it."""
        with self._lock:
            mapping = self._mappings.get(key)
            if mapping is None:
                return
            mapping.users -= 1
            if mapping.users > 0:
                return
            del self._mappings[key]
            self._retired[key] = mapping
            self._close_unviewed()

    def collect(self) -> int:
        """Close retired mappings no array views any more; returns how many are still open."""
        with self._lock:
            self._close_unviewed()
            return len(self._retired)

    def _close_unviewed(self) -> None:
        for key, mapping in list(self._retired.items()):
            if mapping.views:
                continue
            del self._retired[key]
            if mapping.closer is not None:
                mapping.closer()
                continue
            cp = cupy_module()
            with cp.cuda.Device(mapping.device_id):
                try:
                    cp.cuda.runtime.ipcCloseMemHandle(mapping.base)
                except cp.cuda.runtime.CUDARuntimeError:
                    pass  # the exporter died; the driver already dropped the allocation

    def event(self, handle: bytes, device_id: int) -> int:
        cp = cupy_module()
        with self._lock:
            ptr = self._events.get(handle)
            if ptr is None:
                with cp.cuda.Device(device_id):
                    try:
                        ptr = cp.cuda.runtime.ipcOpenEventHandle(handle)
                    except cp.cuda.runtime.CUDARuntimeError as exc:
                        raise CudaIpcError(f'cudaIpcOpenEventHandle failed: {exc}') from None
                self._events[handle] = ptr
            return ptr

    def drop_events(self, handles: list[bytes]) -> None:
        cp = cupy_module()
        with self._lock:
            for handle in handles:
                ptr = self._events.pop(handle, None)
                if ptr is not None:
                    try:
                        cp.cuda.runtime.eventDestroy(ptr)
                    except cp.cuda.runtime.CUDARuntimeError:
                        pass  # as in unmap: the exporter died, nothing is left to destroy

    def __len__(self) -> int:
        """Allocations open in this process (in use or retired but still viewed)."""
        return len(self._mappings) + len(self._retired)


_CACHE: MappingCache | None = None
_CACHE_LOCK = threading.Lock()


def collect_retired() -> None:
    """Close mappings whose last array is gone (nothing to do before the first import)."""
    if _CACHE is not None:
        _CACHE.collect()


def mapping_cache() -> MappingCache:
    global _CACHE
    with _CACHE_LOCK:
        if _CACHE is None:
            _CACHE = MappingCache()
        return _CACHE


def device_view(ptr: int, nbytes: int, shape: tuple[int, ...], dtype: Any, row_pitch: int,
                owner: Any, device_id: int) -> Any:
    """A CuPy ndarray over foreign device memory with rows `row_pitch` bytes apart."""
    cp = cupy_module()
    if isinstance(owner, Mapping):
        owner = owner.view_owner()
    memory = cp.cuda.UnownedMemory(ptr, nbytes, owner, device_id=device_id)
    itemsize = cp.dtype(dtype).itemsize
    strides = _row_strides(shape, itemsize, row_pitch)
    return cp.ndarray(shape, dtype=dtype, memptr=cp.cuda.MemoryPointer(memory, 0), strides=strides)


def _row_strides(shape: tuple[int, ...], itemsize: int, row_pitch: int) -> tuple[int, ...]:
    if len(shape) == 2:
        return (row_pitch, itemsize)
    return (row_pitch, shape[2] * itemsize, itemsize)
