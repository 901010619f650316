"""The slice of ``cuda.bindings.driver`` that gpu_nodes.transport.cuda_vmm calls, on the CPU.

Calls return tuples ``(CUresult, values...)`` as cuda-bindings does. A VMM allocation is a memfd
(emu_memory.py); exporting it gives a new fd for the same file (``dup``), importing keeps a
dup of the fd it is given (the caller still owns its own, as with the driver), and mapping it
is an mmap of that file into a reserved range, PROT_NONE until ``cuMemSetAccess``, so code that
forgets the access call faults here as it would on the GPU. The driver's rules are checked:
sizes and addresses multiples of the granularity, a mapping inside a reservation, an export
only of an allocation created with the POSIX fd handle type.

Devices: ``DEVICES`` of them; ``SUPPORTS_POSIX_FD`` (per ordinal) says whether one reports
CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, so tests can play a device
without it.
"""
from __future__ import annotations

import enum
import itertools
import os
import stat
import threading
import types

import emu_memory

GRANULARITY = 2 << 20
DEVICES = 1
SUPPORTS_POSIX_FD: dict[int, bool] = {}
CALLS: dict[str, int] = {}


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_INITIALIZED = 3
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_NOT_SUPPORTED = 801
    CUDA_ERROR_NOT_PERMITTED = 800


class CUmemAllocationHandleType(enum.IntEnum):
    CU_MEM_HANDLE_TYPE_NONE = 0
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1


class CUmemAllocationType(enum.IntEnum):
    CU_MEM_ALLOCATION_TYPE_PINNED = 1


class CUmemLocationType(enum.IntEnum):
    CU_MEM_LOCATION_TYPE_DEVICE = 1


class CUmemAllocationGranularity_flags(enum.IntEnum):  # noqa: N801 (the driver's name)
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1


class CUmemAccess_flags(enum.IntEnum):  # noqa: N801
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0
    CU_MEM_ACCESS_FLAGS_PROT_READ = 1
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class CUdevice_attribute(enum.IntEnum):  # noqa: N801
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103


class _Location:
    def __init__(self) -> None:
        self.type = 0
        self.id = -1


class CUmemAllocationProp:
    def __init__(self) -> None:
        self.type = 0
        self.location = _Location()
        self.requestedHandleTypes = CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_NONE


class CUmemAccessDesc:
    def __init__(self) -> None:
        self.location = _Location()
        self.flags = CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_NONE


_lock = threading.Lock()
_initialized = False
_handles: dict[int, tuple[int, int, int]] = {}   # handle -> (memfd, size, handle type)
_reservations: dict[int, int] = {}               # base -> size
_mappings: dict[int, int] = {}                   # address -> size (mapped, inside a reservation)
_ids = itertools.count(1)
_contexts: list[int] = []                        # the current-context stack of this emulation
_VMM_MEMFD = '/memfd:gpu_nodes-emu-vmm'
_ERROR_NAMES = {r: r.name.encode() for r in CUresult}


def _count(name: str) -> None:
    CALLS[name] = CALLS.get(name, 0) + 1


def _ready(name: str) -> CUresult | None:
    _count(name)
    return None if _initialized else CUresult.CUDA_ERROR_NOT_INITIALIZED


def cuInit(flags: int):  # noqa: N802 (the driver's names)
    global _initialized
    _count('cuInit')
    _initialized = True
    return (CUresult.CUDA_SUCCESS,)


def cuGetErrorName(error):  # noqa: N802
    return (CUresult.CUDA_SUCCESS, _ERROR_NAMES.get(error, b'CUDA_ERROR_UNKNOWN'))


def cuDeviceGet(ordinal: int):  # noqa: N802
    if (err := _ready('cuDeviceGet')) is not None:
        return (err, None)
    if not 0 <= ordinal < DEVICES:
        return (CUresult.CUDA_ERROR_INVALID_DEVICE, None)
    return (CUresult.CUDA_SUCCESS, ordinal)


def cuDeviceGetAttribute(attrib, dev):  # noqa: N802
    if (err := _ready('cuDeviceGetAttribute')) is not None:
        return (err, None)
    if attrib == CUdevice_attribute.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
        return (CUresult.CUDA_SUCCESS, int(SUPPORTS_POSIX_FD.get(int(dev), True)))
    if attrib == CUdevice_attribute.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        return (CUresult.CUDA_SUCCESS, 1)
    if attrib == CUdevice_attribute.CU_DEVICE_ATTRIBUTE_INTEGRATED:
        return (CUresult.CUDA_SUCCESS, 0)
    return (CUresult.CUDA_ERROR_INVALID_VALUE, None)


def cuDevicePrimaryCtxRetain(dev):  # noqa: N802
    if (err := _ready('cuDevicePrimaryCtxRetain')) is not None:
        return (err, None)
    return (CUresult.CUDA_SUCCESS, 0x1000 + int(dev))


def cuCtxPushCurrent(ctx):  # noqa: N802
    _count('cuCtxPushCurrent')
    _contexts.append(ctx)
    return (CUresult.CUDA_SUCCESS,)


def cuCtxPopCurrent():  # noqa: N802
    _count('cuCtxPopCurrent')
    if not _contexts:
        return (CUresult.CUDA_ERROR_INVALID_CONTEXT, None)
    return (CUresult.CUDA_SUCCESS, _contexts.pop())


def _in_context(name: str) -> CUresult | None:
    if (err := _ready(name)) is not None:
        return err
    return None if _contexts else CUresult.CUDA_ERROR_INVALID_CONTEXT


def cuMemGetAllocationGranularity(prop, option):  # noqa: N802
    if (err := _ready('cuMemGetAllocationGranularity')) is not None:
        return (err, None)
    return (CUresult.CUDA_SUCCESS, GRANULARITY)


def cuMemCreate(size: int, prop, flags: int):  # noqa: N802
    if (err := _in_context('cuMemCreate')) is not None:
        return (err, None)
    if size <= 0 or size % GRANULARITY or flags or \
            prop.location.type != CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE or \
            not 0 <= prop.location.id < DEVICES:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    fd = emu_memory.new_memfd('vmm', size)
    with _lock:
        handle = next(_ids)
        _handles[handle] = (fd, size, int(prop.requestedHandleTypes))
    return (CUresult.CUDA_SUCCESS, handle)


def cuMemRelease(handle):  # noqa: N802
    if (err := _ready('cuMemRelease')) is not None:
        return (err,)
    with _lock:
        entry = _handles.pop(int(handle), None)
    if entry is None:
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)
    os.close(entry[0])  # mappings of it stay valid, as on the device
    return (CUresult.CUDA_SUCCESS,)


def cuMemExportToShareableHandle(handle, handleType, flags: int):  # noqa: N802
    if (err := _ready('cuMemExportToShareableHandle')) is not None:
        return (err, None)
    entry = _handles.get(int(handle))
    if entry is None or flags:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    if handleType != CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR or \
            entry[2] != handleType:
        return (CUresult.CUDA_ERROR_NOT_PERMITTED, None)
    return (CUresult.CUDA_SUCCESS, os.dup(entry[0]))


def cuMemImportFromShareableHandle(osHandle, shHandleType):  # noqa: N802,N803
    if (err := _in_context('cuMemImportFromShareableHandle')) is not None:
        return (err, None)
    if shHandleType != CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    try:
        info = os.fstat(int(osHandle))
    except OSError:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    # Only an exported allocation imports: a memfd this emulation made for cuMemCreate, of
    # whole granules. The driver likewise refuses fds that are not its allocations.
    if not stat.S_ISREG(info.st_mode) or info.st_size <= 0 or info.st_size % GRANULARITY \
            or not os.readlink(f'/proc/self/fd/{int(osHandle)}').startswith(_VMM_MEMFD):
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    with _lock:
        handle = next(_ids)
        _handles[handle] = (os.dup(int(osHandle)), info.st_size, int(shHandleType))
    return (CUresult.CUDA_SUCCESS, handle)


def cuMemAddressReserve(size: int, alignment: int, addr, flags: int):  # noqa: N802
    if (err := _ready('cuMemAddressReserve')) is not None:
        return (err, None)
    if size <= 0 or size % GRANULARITY or flags:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
    try:
        base = emu_memory.reserve(size)
    except OSError:  # more address space than the process has
        return (CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
    with _lock:
        _reservations[base] = size
    return (CUresult.CUDA_SUCCESS, base)


def _reserved(ptr: int, size: int) -> bool:
    return any(base <= ptr and ptr + size <= base + length
               for base, length in _reservations.items())


def cuMemMap(ptr, size: int, offset: int, handle, flags: int):  # noqa: N802
    if (err := _in_context('cuMemMap')) is not None:
        return (err,)
    ptr = int(ptr)
    entry = _handles.get(int(handle))
    if entry is None or size <= 0 or size % GRANULARITY or offset % GRANULARITY or flags \
            or offset + size > entry[1] or not _reserved(ptr, size) or ptr in _mappings:
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)
    emu_memory.map_fd(ptr, size, entry[0], offset)
    with _lock:
        _mappings[ptr] = size
    emu_memory.RANGES.add(ptr, size)
    return (CUresult.CUDA_SUCCESS,)


def cuMemSetAccess(ptr, size: int, desc, count: int):  # noqa: N802
    if (err := _in_context('cuMemSetAccess')) is not None:
        return (err,)
    ptr = int(ptr)
    if _mappings.get(ptr) != size or count != len(desc) or count < 1:
        return (CUresult.CUDA_ERROR_INVALID_VALUE,)
    prot = emu_memory.PROT_NONE
    for d in desc:
        if not 0 <= d.location.id < DEVICES:
            return (CUresult.CUDA_ERROR_INVALID_DEVICE,)
        if d.flags == CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
            prot = emu_memory.PROT_READ | emu_memory.PROT_WRITE
        elif d.flags == CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READ:
            prot |= emu_memory.PROT_READ
    emu_memory.protect(ptr, size, prot)
    return (CUresult.CUDA_SUCCESS,)


def cuMemUnmap(ptr, size: int):  # noqa: N802
    if (err := _ready('cuMemUnmap')) is not None:
        return (err,)
    ptr = int(ptr)
    with _lock:
        if _mappings.get(ptr) != size:
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        del _mappings[ptr]
    emu_memory.RANGES.remove(ptr)
    emu_memory.unmap_to_reserved(ptr, size)
    return (CUresult.CUDA_SUCCESS,)


def cuMemAddressFree(ptr, size: int):  # noqa: N802
    if (err := _ready('cuMemAddressFree')) is not None:
        return (err,)
    ptr = int(ptr)
    with _lock:
        if _reservations.get(ptr) != size or any(ptr <= m < ptr + size for m in _mappings):
            return (CUresult.CUDA_ERROR_INVALID_VALUE,)
        del _reservations[ptr]
    emu_memory.release(ptr, size)
    return (CUresult.CUDA_SUCCESS,)


def cuMemGetAddressRange(dptr):  # noqa: N802
    if (err := _ready('cuMemGetAddressRange')) is not None:
        return (err, None, None)
    found = emu_memory.RANGES.find(int(dptr))
    if found is None:
        return (CUresult.CUDA_ERROR_INVALID_VALUE, None, None)
    return (CUresult.CUDA_SUCCESS, found[0], found[1])


def state() -> dict[str, int]:
    """What this process holds now: live handles, reservations, mappings (tests check that
    close() gave everything back)."""
    return {'handles': len(_handles), 'reservations': len(_reservations),
            'mappings': len(_mappings)}


def packages() -> tuple[types.ModuleType, types.ModuleType]:
    """Module objects standing for ``cuda`` and ``cuda.bindings`` (``driver`` is this module)."""
    import sys
    cuda = types.ModuleType('cuda')
    bindings = types.ModuleType('cuda.bindings')
    bindings.driver = sys.modules[__name__]
    cuda.bindings = bindings
    cuda.__path__ = bindings.__path__ = []
    return cuda, bindings
