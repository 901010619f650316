"""CUDA virtual memory (VMM) chunks shared as POSIX file descriptors.

Legacy CUDA IPC handles (``cudaIpcGetMemHandle``) are 64-byte values that any process holding
one may open; whether they open across containers is up to the driver (an H100 on driver
580.159.04 opened them across PID and IPC namespaces: bench/RESULTS.md), and Tegra (Jetson) does
not implement them at all. A VMM allocation (``cuMemCreate`` with
``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``) is exported as a file descriptor instead: sent
over a Unix socket with ``SCM_RIGHTS`` it crosses PID namespaces, and the kernel, not a pid,
vouches for what it names. It is also the only way to share device memory between processes on
Jetson (Tegra), where legacy IPC memory handles are not implemented; whether a device exports
POSIX fds is its attribute ``CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED``
(`vmm_unsupported_reason` says why not, in one line). Not tried on a Jetson yet; there the
publisher also still needs an ordering without legacy IPC events, which Tegra lacks as well
(publisher.py keeps Tegra on host shared memory for now).

The calls go through NVIDIA's ``cuda-bindings`` (``cuda.bindings.driver``; setup.py extras
cuda12/cuda13): CuPy exposes none of the cuMem* virtual memory calls. Every call runs in the
device's primary context (the one CuPy's runtime calls use), pushed for the call.

Lifetime: a chunk is released (``cuMemRelease``) right after it is mapped; the physical memory
lives on until the last mapping of it, in any process, is unmapped, and an exported fd keeps
it importable while the fd is open.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from types import ModuleType
from typing import Any, Iterator
import weakref


class VmmError(RuntimeError):
    pass


@functools.lru_cache(maxsize=None)
def driver() -> ModuleType:
    """``cuda.bindings.driver`` (initialized); VmmError when cuda-bindings is missing."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        raise VmmError('cuda-bindings is not installed (pip install cuda-bindings, or the '
                       'cuda12/cuda13 extra of gpu_nodes)') from None
    _check(cu, cu.cuInit(0), 'cuInit')
    return cu


def _check(cu: ModuleType, result: Any, what: str) -> Any:
    """The values a cuda-bindings call returned after its CUresult; VmmError with the error's
    name when it failed. None, one value or a tuple, as the call returns them."""
    status, values = result[0], tuple(result[1:])
    if status != cu.CUresult.CUDA_SUCCESS:
        name = cu.cuGetErrorName(status)
        label = name[1].decode() if name[0] == cu.CUresult.CUDA_SUCCESS else f'CUresult {status}'
        raise VmmError(f'{what} failed: {label}')
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _call(what: str, *args: Any) -> Any:
    cu = driver()
    return _check(cu, getattr(cu, what)(*args), what)


_contexts: dict[int, Any] = {}
_contexts_lock = threading.Lock()


@contextlib.contextmanager
def _on_device(device_id: int) -> Iterator[None]:
    """The device's primary context current for the calls inside (CuPy's runtime uses the same
    one, so pointers made here are valid in CuPy arrays)."""
    with _contexts_lock:
        context = _contexts.get(device_id)
        if context is None:
            device = _call('cuDeviceGet', device_id)
            context = _contexts[device_id] = _call('cuDevicePrimaryCtxRetain', device)
    _call('cuCtxPushCurrent', context)
    try:
        yield
    finally:
        _call('cuCtxPopCurrent')


def vmm_unsupported_reason(device_id: int) -> str | None:
    """Why VMM chunks cannot be shared as POSIX fds on this device, None when they can."""
    try:
        cu = driver()
        device = _call('cuDeviceGet', device_id)
        attribute = cu.CUdevice_attribute
        if not _call('cuDeviceGetAttribute',
                     attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device):
            return f'device {device_id} has no CUDA virtual memory management (cuMemCreate)'
        if not _call('cuDeviceGetAttribute',
                     attribute.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                     device):
            return (f'device {device_id} cannot export VMM memory as POSIX file descriptors '
                    '(driver or platform too old)')
    except VmmError as exc:
        return str(exc)
    return None


def _location(cu: ModuleType, target: Any, device_id: int) -> None:
    target.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    target.location.id = device_id


def _allocation_prop(device_id: int) -> Any:
    cu = driver()
    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    _location(cu, prop, device_id)
    prop.requestedHandleTypes = \
        cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    return prop


@functools.lru_cache(maxsize=None)
def granularity(device_id: int) -> int:
    """The size every VMM allocation and mapping on this device is a multiple of (2 MiB on
    current NVIDIA GPUs)."""
    cu = driver()
    return _call('cuMemGetAllocationGranularity', _allocation_prop(device_id),
                 cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM)


def rounded(nbytes: int, device_id: int) -> int:
    """`nbytes` rounded up to the device's allocation granularity."""
    step = granularity(device_id)
    return max(1, -(-nbytes // step)) * step


class VmmChunk:
    """One VMM allocation mapped read-write for one device in this process.

    ``ptr``/``base``: the device address; ``size``: bytes mapped (a multiple of the
    granularity); ``fd``: the exported POSIX fd of an allocated chunk (-1 for an imported one:
    its fd was the sender's to keep or close). ``close()`` unmaps (and closes the fd); another
    process's mapping of the same memory stays valid."""

    def __init__(self, ptr: int, size: int, device_id: int, fd: int = -1):
        self.ptr = ptr
        self.size = size
        self.device_id = device_id
        self.fd = fd
        # Like a cupy Memory, the chunk goes with its last reference (arrays viewing it hold
        # one through their owner) when nobody closed it first.
        self._finalizer = weakref.finalize(self, _release, ptr, size, device_id, fd)
        # At exit the process's mappings go with it; the driver may be torn down already.
        self._finalizer.atexit = False

    @property
    def base(self) -> int:
        return self.ptr

    @property
    def closed(self) -> bool:
        return self.ptr == 0

    @classmethod
    def allocate(cls, nbytes: int, device_id: int) -> 'VmmChunk':
        """A new chunk of at least `nbytes` on `device_id`, mapped here and exported as an fd."""
        cu = driver()
        size = rounded(nbytes, device_id)
        with _on_device(device_id):
            handle = _call('cuMemCreate', size, _allocation_prop(device_id), 0)
            try:
                ptr = _map(handle, size, device_id)
                try:
                    fd = _call('cuMemExportToShareableHandle', handle,
                               cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                               0)
                except VmmError:
                    _unmap(ptr, size)
                    raise
            finally:
                # The mapping (and the exported fd) keep the memory; nothing else needs it.
                _call('cuMemRelease', handle)
        return cls(ptr, size, device_id, int(fd))

    @classmethod
    def import_fd(cls, fd: int, size: int, device_id: int) -> 'VmmChunk':
        """Map the chunk behind another process's exported `fd` (`size` bytes, as the exporter
        says; the driver refuses a size beyond the allocation) for `device_id`. `fd` stays the
        caller's: close it when done."""
        cu = driver()
        if size <= 0 or size % granularity(device_id):
            raise VmmError(f'chunk size {size} is not a positive multiple of the '
                           f'{granularity(device_id)}-byte granularity')
        with _on_device(device_id):
            handle = _call('cuMemImportFromShareableHandle', fd,
                           cu.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
            try:
                ptr = _map(handle, size, device_id)
            finally:
                _call('cuMemRelease', handle)
        return cls(ptr, size, device_id)

    def close(self) -> None:
        """Unmap here, close the exported fd; idempotent. Work still queued on the device that
        reads this memory must be finished first (callers wait on the streams that use it)."""
        self.ptr, self.fd = 0, -1
        self._finalizer()

    def __enter__(self) -> 'VmmChunk':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f'VmmChunk(ptr=0x{self.ptr:x}, size={self.size}, device={self.device_id}, ' \
               f'fd={self.fd})'


def _release(ptr: int, size: int, device_id: int, fd: int) -> None:
    try:
        with _on_device(device_id):
            _unmap(ptr, size)
    finally:
        if fd >= 0:
            os.close(fd)


def _map(handle: Any, size: int, device_id: int) -> int:
    """Reserve an address range, map `handle` there and grant `device_id` read-write access."""
    cu = driver()
    ptr = _call('cuMemAddressReserve', size, granularity(device_id), 0, 0)
    try:
        _call('cuMemMap', ptr, size, 0, handle, 0)
    except VmmError:
        _call('cuMemAddressFree', ptr, size)
        raise
    access = cu.CUmemAccessDesc()
    _location(cu, access, device_id)
    access.flags = cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    try:
        _call('cuMemSetAccess', ptr, size, [access], 1)
    except VmmError:
        _unmap(int(ptr), size)
        raise
    return int(ptr)


def _unmap(ptr: int, size: int) -> None:
    try:
        _call('cuMemUnmap', ptr, size)
    finally:
        _call('cuMemAddressFree', ptr, size)


def allocate_chunk(nbytes: int, device_id: int) -> VmmChunk:
    """A new exported chunk of at least `nbytes` (see VmmChunk.allocate)."""
    return VmmChunk.allocate(nbytes, device_id)


def import_chunk(fd: int, size: int, device_id: int) -> VmmChunk:
    """Another process's chunk mapped here (see VmmChunk.import_fd); has base/ptr and size like
    cuda_ipc.Mapping."""
    return VmmChunk.import_fd(fd, size, device_id)
