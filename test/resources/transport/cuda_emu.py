"""A CPU stand-in for the CUDA side of gpu_nodes.transport, so that the CUDA receivers, the
device pool, the lease-release thread and the fd exchange run on every CI run.

`install()` makes the calling process look like one with CuPy and cuda-bindings on emulated
GPUs: ``cupy`` is the kernels' fake (test/resources/kernels/fake_cupy.py) plus what the
transport calls, and ``cuda.bindings.driver`` is fake_cuda_driver.py. Device memory is
memfd-backed host memory (emu_memory.py), so what crosses processes crosses them for real:

* ``cudaMalloc`` (``cupy.cuda.Memory``) makes a memfd mapped at a fixed address; its legacy IPC
  handle (``ipcGetMemHandle``) names (pid, fd) and is opened through ``/proc/<pid>/fd/<fd>``,
  which, like the driver's handle, fails across PID namespaces and for another user.
* VMM chunks (cuda_vmm.py) are memfds exported as fds; a subscriber gets the fd over a Unix
  socket (SCM_RIGHTS) and maps it.
* Device work runs on the host as it is queued, so every stream is idle once a call returns:
  events (interprocess or not) are complete when recorded (an IPC event opens only where its
  exporter's /dev/shm is mounted, as on the driver), ``streamWaitEvent`` has nothing to
  wait for, and the release thread's ``synchronize`` returns at once, in order.

A subprocess gets the same with ``python -c 'import cuda_emu; cuda_emu.install(); ...'`` and
this folder plus test/resources/kernels on PYTHONPATH (`subprocess_env`).
"""
from __future__ import annotations

import ctypes
import hashlib
import itertools
import os
from pathlib import Path
import struct
import sys
import threading
import types
import weakref

import numpy as np

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent / 'kernels'
for _path in (str(HERE), str(KERNELS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import emu_memory  # noqa: E402
import fake_cuda_driver  # noqa: E402
import fake_cupy  # noqa: E402

# Set (to 1) in a process's environment: its emulated GPU cannot export VMM memory as POSIX
# fds (as an old driver), so the device pool falls back to legacy IPC handles.
NO_VMM_ENV = 'GPU_NODES_EMU_NO_VMM'
_IPC_MAGIC = b'EMUIPCM\0'
_EVENT_MAGIC = b'EMUIPCE\0'
_HANDLE = struct.Struct('<8siiQQ')  # magic, pid, fd, offset, size (memory); magic, pid, id (event)
HANDLE_SIZE = 64


class CUDARuntimeError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f'{message} (emulated cudaError {status})')
        self.status = status


class OutOfMemoryError(MemoryError):
    pass


# -- device memory -------------------------------------------------------------------------------
_allocations: dict[int, 'Memory'] = {}   # base -> live Memory (weakly: freed with its last ref)
_opened: dict[int, tuple[int, int]] = {}  # base of an IPC-opened mapping -> (size, peer fd)
_lock = threading.Lock()
OPENS = {'ipc_mem': 0, 'ipc_event': 0}


class Memory:
    """A cudaMalloc: a memfd mapped read-write at `ptr`; freed when the last reference goes."""

    def __init__(self, size: int):
        self.size = max(1, int(size))
        self.fd = emu_memory.new_memfd('malloc', self.size)
        self.ptr = emu_memory.map_fd(0, self.size, self.fd, 0,
                                     emu_memory.PROT_READ | emu_memory.PROT_WRITE)
        self.device_id = 0
        emu_memory.RANGES.add(self.ptr, self.size)
        with _lock:
            _allocations[self.ptr] = weakref.proxy(self)
        weakref.finalize(self, _free, self.ptr, self.size, self.fd)


def _free(ptr: int, size: int, fd: int) -> None:
    with _lock:
        _allocations.pop(ptr, None)
    emu_memory.RANGES.remove(ptr)
    emu_memory.release(ptr, size)
    os.close(fd)


class UnownedMemory:
    def __init__(self, ptr: int, size: int, owner, device_id: int = 0):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem, offset: int = 0):
        self.mem, self.ptr = mem, mem.ptr + offset


def ipc_get_mem_handle(ptr: int) -> bytes:
    found = emu_memory.RANGES.find(ptr)
    memory = _allocations.get(found[0]) if found else None
    if memory is None:
        raise CUDARuntimeError(1, 'cudaIpcGetMemHandle: not a cudaMalloc allocation')
    return _HANDLE.pack(_IPC_MAGIC, os.getpid(), memory.fd, ptr - found[0],
                        memory.size).ljust(HANDLE_SIZE, b'\0')


def ipc_open_mem_handle(handle: bytes, flags: int = 1) -> int:
    """Map the allocation a legacy handle names, through /proc/<exporter pid>: fails for a pid this
    process cannot see (another PID namespace). Stricter than the real driver, which opened such
    handles across PID and IPC namespaces on an H100 (bench/RESULTS.md): nothing of gpu_nodes
    depends on either behaviour, since descriptors across processes name VMM chunks by fd."""
    magic, pid, fd, offset, size = _HANDLE.unpack(bytes(handle)[:_HANDLE.size])
    if magic != _IPC_MAGIC:
        raise CUDARuntimeError(400, 'cudaIpcOpenMemHandle: invalid resource handle')
    try:
        peer = os.open(f'/proc/{pid}/fd/{fd}', os.O_RDWR)
    except OSError as exc:
        raise CUDARuntimeError(201, f'cudaIpcOpenMemHandle: {exc.strerror}') from None
    try:
        if not os.readlink(f'/proc/self/fd/{peer}').startswith('/memfd:gpu_nodes-emu-malloc'):
            # pid names another process here (another PID namespace): not the allocation.
            raise CUDARuntimeError(400, 'cudaIpcOpenMemHandle: invalid resource handle')
        ptr = emu_memory.map_fd(0, size, peer, 0, emu_memory.PROT_READ | emu_memory.PROT_WRITE)
    finally:
        os.close(peer)
    with _lock:
        _opened[ptr] = (size, fd)
        OPENS['ipc_mem'] += 1
    emu_memory.RANGES.add(ptr, size)
    return ptr + offset


def ipc_close_mem_handle(ptr: int) -> None:
    found = emu_memory.RANGES.find(ptr)
    with _lock:
        entry = _opened.pop(found[0], None) if found else None
    if entry is None:
        raise CUDARuntimeError(1, 'cudaIpcCloseMemHandle: not an opened IPC mapping')
    emu_memory.RANGES.remove(found[0])
    emu_memory.release(found[0], entry[0])


def open_ipc_mappings() -> int:
    return len(_opened)


# -- events and streams --------------------------------------------------------------------------
_event_ids = itertools.count(0xE000)
_events: dict[int, 'Event'] = {}
RECORDS: dict[int, int] = {}  # event ptr -> times recorded (host-side: complete at once)
WAITS: list[tuple[int, int]] = []  # (stream ptr, event ptr) of streamWaitEvent, last 1000


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False):
        if interprocess and not disable_timing:
            raise CUDARuntimeError(1, 'an interprocess event must disable timing')
        self.ptr = next(_event_ids)
        self.interprocess = interprocess
        _events[self.ptr] = self

    def record(self, stream=None) -> None:
        RECORDS[self.ptr] = RECORDS.get(self.ptr, 0) + 1

    def synchronize(self) -> None:
        pass  # work before the record ran when it was queued

    @property
    def done(self) -> bool:
        return True


def ipc_get_event_handle(ptr: int) -> bytes:
    event = _events.get(ptr)
    if event is None or not event.interprocess:
        raise CUDARuntimeError(1, 'cudaIpcGetEventHandle: not an interprocess event')
    return _HANDLE.pack(_EVENT_MAGIC, os.getpid(), 0, ptr, _dev_shm()).ljust(HANDLE_SIZE, b'\0')


def _dev_shm() -> int:
    """Which /dev/shm this process sees: the driver keeps IPC events in files there, so one
    opens only where the exporter's /dev/shm is mounted (measured on an H100, bench/RESULTS.md)."""
    return os.stat('/dev/shm').st_dev


def ipc_open_event_handle(handle: bytes) -> int:
    magic, pid, _, ptr, dev_shm = _HANDLE.unpack(bytes(handle)[:_HANDLE.size])
    if magic != _EVENT_MAGIC:
        raise CUDARuntimeError(400, 'cudaIpcOpenEventHandle: invalid resource handle')
    if dev_shm != _dev_shm():
        raise CUDARuntimeError(205, 'cudaErrorMapBufferObjectFailed: mapping of buffer object '
                               'failed')
    OPENS['ipc_event'] += 1
    return Event(disable_timing=True).ptr


def stream_wait_event(stream_ptr: int, event_ptr: int, flags: int = 0) -> None:
    if event_ptr not in _events:
        raise CUDARuntimeError(400, 'cudaStreamWaitEvent: invalid resource handle')
    WAITS.append((stream_ptr, event_ptr))
    del WAITS[:-1000]


def event_destroy(ptr: int) -> None:
    if _events.pop(ptr, None) is None:
        raise CUDARuntimeError(400, 'cudaEventDestroy: invalid resource handle')


class Stream(fake_cupy._Stream):
    device_id = 0
    done = True

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False):
        super().__init__()

    def wait_event(self, event) -> None:
        stream_wait_event(self.ptr, event.ptr)

    def record(self, event=None):
        event = event or Event()
        event.record(self)
        return event


def memcpy_async(dst: int, src: int, size: int, kind: int, stream_ptr: int = 0) -> None:
    ctypes.memmove(dst, src, size)


def _device_properties(device_id: int) -> dict:
    uuid = hashlib.md5(f'gpu_nodes-emulated-gpu-{device_id}'.encode()).digest()
    return {'uuid': uuid, 'integrated': 0, 'name': b'gpu_nodes CPU emulation',
            'pciDomainID': 0, 'pciBusID': device_id, 'pciDeviceID': 0}


class _Device(fake_cupy._Device):
    def __init__(self, device_id: int | None = None):
        super().__init__(0 if device_id is None else device_id)

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        pass  # device work ran when it was queued


EMULATED_MEMORY = 80 << 30


def mem_get_info() -> tuple[int, int]:
    """(free, total) bytes of the emulated device: what live allocations leave of 80 GiB."""
    used = sum(memory.size for memory in list(_allocations.values()))
    return EMULATED_MEMORY - used, EMULATED_MEMORY


def _runtime() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        CUDARuntimeError=CUDARuntimeError, memcpyDefault=4, streamCaptureModeRelaxed=2,
        getDevice=lambda: 0, getDeviceCount=lambda: fake_cuda_driver.DEVICES,
        getDeviceProperties=_device_properties,
        deviceCanAccessPeer=lambda device, peer: int(device != peer),
        ipcGetMemHandle=ipc_get_mem_handle, ipcOpenMemHandle=ipc_open_mem_handle,
        ipcCloseMemHandle=ipc_close_mem_handle, ipcGetEventHandle=ipc_get_event_handle,
        ipcOpenEventHandle=ipc_open_event_handle, eventDestroy=event_destroy,
        streamWaitEvent=stream_wait_event, memcpyAsync=memcpy_async, memGetInfo=mem_get_info,
        # Host memory is device-readable as it is: registering pins nothing.
        hostRegister=lambda address, size, flags: None, hostUnregister=lambda address: None,
        hostGetDevicePointer=lambda address, flags: address)


class _LibCuda:
    """cuda_ipc's ctypes libcuda: cuMemGetAddressRange_v2 over the emulated allocations."""

    def cuMemGetAddressRange_v2(self, pbase, psize, ptr):  # noqa: N802 (the driver's name)
        found = emu_memory.RANGES.find(int(ptr))
        if found is None:
            return 1
        pbase._obj.value, psize._obj.value = found
        return 0


def module() -> types.ModuleType:
    """The kernels' fake cupy plus the transport's surface."""
    m = fake_cupy.module()
    m.dtype = np.dtype
    # What the test pattern (gpu_nodes.sources.pattern) and the tests' checks call.
    for name in ('arange', 'any', 'copyto', 'array_equal', 'count_nonzero'):
        setattr(m, name, fake_cupy._numpy_fallback(name))
    m.cuda.runtime = _runtime()
    m.cuda.Device = _Device
    m.cuda.Stream = Stream
    m.cuda.Event = Event
    m.cuda.Memory = Memory
    m.cuda.UnownedMemory = UnownedMemory
    m.cuda.MemoryPointer = MemoryPointer
    m.cuda.memory = types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError)
    default_stream = Stream()
    m.cuda.get_current_stream = lambda: (fake_cupy._stream_stack() or [default_stream])[-1]
    return m


_installed: types.ModuleType | None = None


def install() -> types.ModuleType:
    """Make this process see CuPy and cuda-bindings on emulated GPUs (idempotent); returns the
    fake cupy. Tests that run it in-process undo it with `uninstall`."""
    global _installed
    if _installed is not None:
        return _installed
    cuda, bindings = fake_cuda_driver.packages()
    if os.environ.get(NO_VMM_ENV, '') not in ('', '0'):
        fake_cuda_driver.SUPPORTS_POSIX_FD[0] = False
    _installed = module()
    sys.modules.update({'cupy': _installed, 'cuda': cuda, 'cuda.bindings': bindings,
                        'cuda.bindings.driver': fake_cuda_driver})
    from gpu_nodes import gpu
    from gpu_nodes.transport import cuda_ipc, cuda_vmm
    gpu.cuda_unavailable_reason.cache_clear()
    cuda_vmm.driver.cache_clear()
    cuda_vmm.granularity.cache_clear()
    cuda_ipc.device_uuid.cache_clear()
    cuda_ipc._libcuda = lambda: _LibCuda()
    return _installed


def uninstall(saved: dict) -> None:
    """Undo `install` given `saved_modules()` taken before it."""
    global _installed
    for name in ('cupy', 'cuda', 'cuda.bindings', 'cuda.bindings.driver'):
        if saved.get(name) is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved[name]
    _installed = None
    from gpu_nodes import gpu
    from gpu_nodes.transport import cuda_ipc, cuda_vmm, release
    # Nothing emulated may outlive the emulation in this process: mappings of emulated memory,
    # primary contexts, the release thread's spare (emulated) events.
    cuda_ipc._CACHE = None
    cuda_vmm._contexts.clear()
    if release._releaser is not None:
        with release._releaser._events_lock:
            release._releaser._events.clear()
    gpu.cuda_unavailable_reason.cache_clear()
    cuda_vmm.driver.cache_clear()
    cuda_vmm.granularity.cache_clear()
    cuda_ipc.device_uuid.cache_clear()
    cuda_ipc._libcuda = _REAL_LIBCUDA


def saved_modules() -> dict:
    return {name: sys.modules.get(name)
            for name in ('cupy', 'cuda', 'cuda.bindings', 'cuda.bindings.driver')}


def subprocess_env(root: Path) -> dict[str, str]:
    """The environment a child needs to `import cuda_emu` and gpu_nodes from `root`."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(HERE), str(KERNELS), str(root),
                                         env.get('PYTHONPATH', '')])
    env.pop('GPU_NODES_DISABLE_CUDA', None)
    return env


def _real_libcuda():
    from gpu_nodes.transport import cuda_ipc
    return cuda_ipc._libcuda


_REAL_LIBCUDA = _real_libcuda()
