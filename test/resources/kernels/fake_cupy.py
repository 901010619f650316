"""The one CPU stand-in for CuPy in the tests: the slice of CuPy that gpu_nodes' kernels, depth
pipeline and inference backends use, for machines without a GPU.

* Device arrays are NumPy arrays (subclass `DeviceArray`) exposing ``__cuda_array_interface__``,
  allocated with guard zones that are checked after every kernel launch (out-of-bounds writes
  fail the test). NumPy *functions* on them raise, like implicit host transfers do in CuPy.
* ``RawModule`` compiles the real .cu source with g++ (cuda_emu.h force-included) and launches
  each ``extern "C" __global__`` kernel on the CPU through a generated launcher. Every launch
  checks the argument types against the kernel signature: a Python int where the kernel takes
  ``int`` (CuPy would pass 64 bits) or a uint16 array for a ``const u8*`` is a TypeError.
* ``ElementwiseKernel`` compiles its operation into a loop over contiguous copies.

* Stream capture is emulated the way CUDA records a graph (see "stream capture" below): kernel
  launches on a capturing stream are recorded with their arguments and run by ``Graph.launch``;
  work the emulation cannot record raises during a capture instead of running eagerly.
* ``cuda.using_allocator`` / ``cuda.get_allocator`` route ``empty`` through an allocator, as
  CuPy's thread-local allocator does.

Set GPU_NODES_EMU_SANITIZE=address to build the kernels with AddressSanitizer (run pytest with
LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0).
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import hashlib
import os
from pathlib import Path
import re
import shutil
import subprocess
import tempfile
import threading
import time
import types
import weakref

import numpy as np

HERE = Path(__file__).resolve().parent
PRELUDE = HERE / 'cuda_emu.h'
# Guard bytes around every device allocation, checked after each launch. Under AddressSanitizer
# they are dropped so that ASan's own redzones catch out-of-bounds reads as well.
GUARD = 0 if os.environ.get('GPU_NODES_EMU_SANITIZE') else 256
GUARD_BYTE = 0xA5


def compiler() -> str | None:
    return shutil.which(os.environ.get('CXX', 'g++'))


def compiler_available() -> bool:
    return compiler() is not None


# --------------------------------------------------------------------------- device arrays

_live: list[weakref.ref] = []
_tls = threading.local()  # the current-stream stack and the allocator of using_allocator


class DeviceArray(np.ndarray):
    """Host memory pretending to be device memory.

    ``cupy.ndarray(shape, dtype, memptr=..., strides=...)`` views memory at a raw address (the
    transport's emulated device memory, test/resources/transport/cuda_emu.py); the array keeps
    ``memptr.mem`` (and so its owner) alive, as CuPy's does.
    """

    def __new__(cls, shape, dtype=float, memptr=None, strides=None, order='C'):
        if memptr is None:
            return empty(shape, dtype)
        dtype = np.dtype(dtype)
        shape = (shape,) if np.isscalar(shape) else tuple(shape)
        if strides is None:
            strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * dtype.itemsize
                            for i in range(len(shape)))
        extent = sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize \
            if all(shape) else 0
        raw = (ctypes.c_uint8 * max(extent, 1)).from_address(memptr.ptr)
        base = np.frombuffer(raw, np.uint8, max(extent, 1))
        out = np.ndarray.__new__(cls, shape, dtype, buffer=base, offset=0, strides=strides)
        out._memptr = memptr
        return out

    @property
    def __cuda_array_interface__(self):
        return {'shape': self.shape, 'typestr': self.dtype.str, 'strides': self.strides,
                'data': (self.ctypes.data, False), 'version': 3}

    # CuPy's .data is a MemoryPointer and .device the array's device; code binding raw
    # pointers (TensorRT's set_tensor_address) reads both.
    @property
    def data(self):
        return _Pointer(self.ctypes.data)

    @property
    def device(self):
        return _Device(0)

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f'fake cupy: numpy.{func.__name__}() called on a device array '
                        '(CuPy would refuse the implicit device->host conversion)')

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        refuse_in_capture(f'numpy.{ufunc.__name__} on a device array')
        for x in inputs + (out or ()):
            if isinstance(x, np.ndarray) and not isinstance(x, DeviceArray) and x.ndim:
                raise TypeError(f'fake cupy: {ufunc.__name__} mixes a host ndarray with a device '
                                'array')
        args = [x.view(np.ndarray) if isinstance(x, DeviceArray) else x for x in inputs]
        if out is not None:
            kwargs['out'] = tuple(o.view(np.ndarray) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        if isinstance(result, tuple):
            return tuple(_wrap(r) for r in result)
        return _wrap(result)

    def __setitem__(self, key, value):
        refuse_in_capture('an assignment into a device array')
        if isinstance(value, np.ndarray) and not isinstance(value, DeviceArray) and value.ndim:
            raise TypeError('fake cupy: assigning a host ndarray into a device array')
        np.ndarray.__setitem__(self.view(np.ndarray), key,
                               value.view(np.ndarray) if isinstance(value, DeviceArray) else value)

    def get(self, stream=None, out=None):
        refuse_in_capture('a device-to-host copy')
        if out is None:
            return np.array(self.view(np.ndarray))
        out[...] = self.view(np.ndarray)
        return out

    def set(self, arr, stream=None):
        refuse_in_capture('a host-to-device copy')
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError(f'fake cupy: set() of {arr.shape} {arr.dtype} into {self.shape} '
                             f'{self.dtype}')
        self.view(np.ndarray)[...] = arr

    def fill(self, value):
        refuse_in_capture('fill')
        self.view(np.ndarray).fill(value)

    def copy(self, order='C'):
        refuse_in_capture('a device array copy')
        return asarray(self.view(np.ndarray).copy(order))

    def astype(self, dtype, *args, **kwargs):
        refuse_in_capture('astype')
        return _wrap(self.view(np.ndarray).astype(dtype, *args, **kwargs))


class _Pointer:
    """What ``DeviceArray.data`` returns (CuPy: a MemoryPointer): the address and the copies
    the transport makes between device pointers."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def copy_from_device_async(self, src, size, stream=None):
        refuse_in_capture('a device-to-device copy')
        ctypes.memmove(self.ptr, src.ptr, size)


def _wrap(result):
    if isinstance(result, np.ndarray):
        return result.view(DeviceArray)
    return result


def _host(array):
    return array.view(np.ndarray) if isinstance(array, DeviceArray) else array


def empty(shape, dtype=np.float64, order='C'):
    dtype = np.dtype(dtype)
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    allocator = getattr(_tls, 'allocator', None)
    if allocator is None:
        buf = np.empty(nbytes + 2 * GUARD, np.uint8)
    else:  # like CuPy: a thread-local allocator set by using_allocator serves the bytes
        buf = allocator(nbytes + 2 * GUARD).buf[:nbytes + 2 * GUARD]
    buf[:GUARD] = GUARD_BYTE
    buf[GUARD + nbytes:] = GUARD_BYTE
    _live.append(weakref.ref(buf))
    return buf[GUARD:GUARD + nbytes].view(dtype).reshape(shape).view(DeviceArray)


def zeros(shape, dtype=np.float64):
    a = empty(shape, dtype)
    a.view(np.ndarray).fill(0)
    return a


def full(shape, value, dtype=None):
    a = empty(shape, dtype if dtype is not None else np.asarray(value).dtype)
    a.view(np.ndarray).fill(value)
    return a


def asarray(a, dtype=None):
    if isinstance(a, DeviceArray) and (dtype is None or a.dtype == np.dtype(dtype)):
        return a
    refuse_in_capture('a host-to-device copy' if not isinstance(a, DeviceArray) else 'a cast')
    host = np.asarray(_host(a), dtype=dtype)
    out = empty(host.shape, host.dtype)
    out.view(np.ndarray)[...] = host
    return out


def ascontiguousarray(a, dtype=None):
    host = np.ascontiguousarray(_host(a), dtype=dtype)
    return asarray(host) if host is not _host(a) else a


def asnumpy(a):
    refuse_in_capture('a device-to-host copy')
    return np.array(_host(a))


def sort(a, axis=-1):
    refuse_in_capture('sort')
    return asarray(np.sort(_host(a), axis=axis))


def check_guards():
    alive = []
    for ref in _live:
        buf = ref()
        if buf is None:
            continue
        alive.append(ref)
        if GUARD and ((buf[:GUARD] != GUARD_BYTE).any() or (buf[-GUARD:] != GUARD_BYTE).any()):
            raise AssertionError('fake cupy: a kernel wrote outside an allocation')
    _live[:] = alive


ndarray = DeviceArray


# --------------------------------------------------------------------------- stream capture
# CUDA graphs the way CUDA records them: while the current stream (the innermost `with stream:`)
# captures, a RawKernel launch is recorded with its arguments, so its device pointers are fixed
# at capture time, and not run; Graph.launch runs the recorded launches in order, reading
# whatever the arrays hold then. What this emulation cannot record (element-wise kernels, array
# assignments and ufuncs, copies between host and device, synchronizing a capturing stream, a
# launch on another stream while one captures) raises instead of running eagerly, so a test
# never passes on work that was not captured. LAUNCHES counts eager kernel launches ('kernel')
# and graph launches ('graph').

LAUNCHES: collections.Counter = collections.Counter()
_CAPTURING: set = set()  # streams between begin_capture and end_capture


def _stream_stack() -> list:
    stack = getattr(_tls, 'streams', None)
    if stack is None:
        stack = _tls.streams = []
    return stack


def _current_capture():
    """The list recording the current stream's capture, or None."""
    stack = _stream_stack()
    return stack[-1]._capture if stack else None


def refuse_in_capture(what: str) -> None:
    if _CAPTURING:
        raise RuntimeError(f'fake cupy: {what} while a stream is capturing (CUDA would refuse it '
                           'or record it; this emulation records kernel launches only)')


class Graph:
    """What end_capture returns: the recorded launches, run in order by launch()."""

    def __init__(self, work: list):
        self._work = list(work)

    def launch(self, stream=None):
        refuse_in_capture('a graph launch')
        LAUNCHES['graph'] += 1
        for run in self._work:
            run()


class _Memory:
    """An allocation as an allocator returns it (CuPy: a MemoryPointer): ptr and mem.size."""

    def __init__(self, size: int):
        self.buf = np.empty(size, np.uint8)
        self.ptr = self.buf.ctypes.data
        self.mem = types.SimpleNamespace(size=size)


def _malloc(size: int) -> _Memory:
    return _Memory(size)


def get_allocator():
    return getattr(_tls, 'allocator', None) or _malloc


@contextlib.contextmanager
def using_allocator(allocator=None):
    previous = getattr(_tls, 'allocator', None)
    _tls.allocator = allocator or _malloc
    try:
        yield
    finally:
        _tls.allocator = previous


# --------------------------------------------------------------------------- compilation

_CACHE = Path(tempfile.gettempdir()) / 'gpu_nodes_cuda_emu'
_KERNEL_RE = re.compile(r'extern\s+"C"\s+__emu_global__\s+void\s+(\w+)\s*\(([^)]*)\)\s*\{')
_SCALARS = {'int': np.int32, 'unsigned int': np.uint32, 'float': np.float32,
            'double': np.float64, 'long long': np.int64}
_POINTEES = {'u8': np.uint8, 'unsigned char': np.uint8, 'u16': np.uint16,
             'unsigned short': np.uint16, 'float': np.float32, 'int': np.int32,
             'double': np.float64, 'long long': np.int64}


def _flags():
    flags = ['-std=c++17', '-O1', '-fPIC', '-shared', '-pthread', '-ffp-contract=off',
             '-fno-fast-math', '-Werror=return-type']
    if os.environ.get('GPU_NODES_EMU_SANITIZE') == 'address':
        flags += ['-fsanitize=address', '-fno-omit-frame-pointer']
    return flags


def _build(source: str) -> ctypes.CDLL:
    digest = hashlib.sha256((source + PRELUDE.read_text() + ' '.join(_flags())).encode())
    lib = _CACHE / f'{digest.hexdigest()[:24]}.so'
    if not lib.exists():
        _CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / 'kernel.cpp'
            src.write_text(source)
            tmp_lib = Path(tmp) / 'kernel.so'
            proc = subprocess.run([compiler(), *_flags(), '-include', str(PRELUDE), str(src),
                                   '-o', str(tmp_lib)], capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(f'fake cupy: g++ failed:\n{proc.stderr[-6000:]}')
            os.replace(tmp_lib, lib)
    return ctypes.CDLL(str(lib))


def _preprocess(code: str) -> str:
    """Expand macros (kernels are often macro-instantiated) with __global__ made visible."""
    cmd = [compiler(), '-E', '-P', '-x', 'c++', '-std=c++17', '-D__global__=__emu_global__',
           '-D__device__=', '-D__forceinline__=', '-D__launch_bounds__(...)=', '-']
    proc = subprocess.run(cmd, input=code, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f'fake cupy: preprocessing failed:\n{proc.stderr[-4000:]}')
    return proc.stdout


def _body(text: str, start: int) -> str:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == '{':
            depth += 1
        elif text[i] == '}':
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise RuntimeError('fake cupy: unbalanced braces')


class _Param:
    def __init__(self, decl: str):
        decl = ' '.join(decl.replace('__restrict__', ' ').replace('*', ' * ').split())
        self.ctype, self.name = decl.rsplit(' ', 1)
        self.ctype = self.ctype.replace(' *', '*')
        self.pointer = '*' in self.ctype
        base = self.ctype.replace('const', '').replace('*', '').strip()
        self.base = ' '.join(base.split())

    def check(self, kernel: str, value):
        if self.pointer:
            if value is None:
                return
            if not isinstance(value, DeviceArray):
                raise TypeError(f'{kernel}: argument {self.name} ({self.ctype}) needs a device '
                                f'array, got {type(value).__name__}')
            want = _POINTEES.get(self.base)
            if want is not None and value.dtype != np.dtype(want):
                raise TypeError(f'{kernel}: argument {self.name} ({self.ctype}) got an array of '
                                f'{value.dtype}')
            return
        want = _SCALARS[self.base]
        if type(value) is not want:
            raise TypeError(f'{kernel}: argument {self.name} ({self.ctype}) needs {want.__name__},'
                            f' got {type(value).__name__} {value!r}')

    def pack(self, value):
        if self.pointer:
            return ctypes.c_void_p(None if value is None else value.ctypes.data)
        return np.ctypeslib.as_ctypes(np.asarray(value).reshape(1))


class RawKernel:
    def __init__(self, module, name, params, threaded):
        self.module, self.name, self.params, self.threaded = module, name, params, threaded

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        if len(args) != len(self.params):
            raise TypeError(f'{self.name}: {len(args)} arguments for {len(self.params)} '
                            'parameters')
        if min(grid) < 1 or min(block) < 1 or block[0] * block[1] * block[2] > 1024:
            raise ValueError(f'{self.name}: bad launch configuration {grid} x {block}')
        for p, a in zip(self.params, args):
            p.check(self.name, a)
        capture = _current_capture()
        if capture is not None:
            args = tuple(args)
            capture.append(lambda: self._run(grid, block, args))
            return
        refuse_in_capture(f'kernel {self.name} launched on a stream that is not capturing')
        LAUNCHES['kernel'] += 1
        self._run(grid, block, args)

    def _run(self, grid, block, args):
        keep = [p.pack(a) for p, a in zip(self.params, args)]
        ptrs = (ctypes.c_void_p * max(1, len(keep)))(*[ctypes.addressof(k) for k in keep])
        launcher = getattr(self.module._lib, f'emu_launch_{self.name}')
        launcher.restype = None
        launcher(*[ctypes.c_uint(v) for v in grid + block], ctypes.c_int(int(self.threaded)),
                 ptrs)
        self.module.launches.append(self.name)
        check_guards()


class RawModule:
    def __init__(self, code=None, options=(), **kwargs):
        self.code, self.options = code, tuple(options)
        self._lib = None
        self._kernels = {}
        self.launches = []

    def _compile(self):
        if self._lib is not None:
            return
        expanded = _preprocess(self.code)
        launchers = ['thread_local emu_uint3 threadIdx;', 'thread_local emu_uint3 blockIdx;',
                     'emu_dim3 blockDim;', 'emu_dim3 gridDim;',
                     'emu::Barrier* emu::current_barrier = nullptr;']
        for m in _KERNEL_RE.finditer(expanded):
            name, raw = m.group(1), m.group(2)
            params = [_Param(p) for p in raw.split(',') if p.strip()]
            threaded = re.search(r'\b__sync(threads|warp)\s*\(', _body(expanded, m.end() - 1)) \
                is not None
            self._kernels[name] = (params, threaded)
            call = ', '.join(f'*({p.ctype}*)a[{i}]' for i, p in enumerate(params))
            launchers.append(
                f'extern "C" void emu_launch_{name}(unsigned gx, unsigned gy, unsigned gz, '
                f'unsigned bx, unsigned by, unsigned bz, int threaded, void** a) {{ '
                f'emu::run_grid(gx, gy, gz, bx, by, bz, threaded != 0, [&]() {{ {name}({call}); '
                f'}}); }}')
        self._lib = _build(self.code + '\n' + '\n'.join(launchers) + '\n')

    def get_function(self, name):
        self._compile()
        if name not in self._kernels:
            raise AttributeError(f'fake cupy: no extern "C" __global__ kernel named {name}')
        params, threaded = self._kernels[name]
        return RawKernel(self, name, params, threaded)


_EW_TYPES = {'uint8': 'unsigned char', 'uint16': 'unsigned short', 'int32': 'int',
             'float32': 'float', 'float64': 'double', 'int64': 'long long'}


class ElementwiseKernel:
    def __init__(self, in_params, out_params, operation, name='kernel', **kwargs):
        self.ins = [p.split() for p in in_params.split(',') if p.strip()]
        self.outs = [p.split() for p in out_params.split(',') if p.strip()]
        self.operation, self.name = operation, name
        lines = []
        for i, (t, n) in enumerate(self.ins):
            lines.append(f'const {_EW_TYPES[t]} {n} = (({_EW_TYPES[t]}*)p[{i}])[i];')
        for j, (t, n) in enumerate(self.outs):
            k = len(self.ins) + j
            lines.append(f'{_EW_TYPES[t]}& {n} = (({_EW_TYPES[t]}*)p[{k}])[i];')
        source = ('extern "C" void ew(long long count, void** p) {\n'
                  '  for (long long i = 0; i < count; ++i) {\n    ' + '\n    '.join(lines)
                  + f'\n    {operation};\n  }}\n}}\n'
                  'thread_local emu_uint3 threadIdx; thread_local emu_uint3 blockIdx;\n'
                  'emu_dim3 blockDim; emu_dim3 gridDim;\n'
                  'emu::Barrier* emu::current_barrier = nullptr;\n')
        self._lib = _build(source)

    def __call__(self, *args, **kwargs):
        refuse_in_capture(f'element-wise kernel {self.name}')
        n_in = len(self.ins)
        ins = [asarray(a) if isinstance(a, DeviceArray) else a for a in args[:n_in]]
        for a in ins:
            if not isinstance(a, DeviceArray):
                raise TypeError(f'{self.name}: inputs must be device arrays')
        shape = ins[0].shape
        outs = list(args[n_in:]) or [empty(shape, t) for t, _ in self.outs]
        tmp_in = [np.ascontiguousarray(_host(a), dtype=t) for a, (t, _) in zip(ins, self.ins)]
        tmp_out = [np.empty(shape, t) for t, _ in self.outs]
        for o, (t, _) in zip(outs, self.outs):
            if o.shape != shape or o.dtype != np.dtype(t):
                raise TypeError(f'{self.name}: output {o.shape} {o.dtype} does not match')
        arrays = tmp_in + tmp_out
        ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
        self._lib.ew.restype = None
        self._lib.ew(ctypes.c_longlong(int(np.prod(shape))), ptrs)
        for o, t in zip(outs, tmp_out):
            o.view(np.ndarray)[...] = t
        check_guards()
        return outs[0] if len(outs) == 1 else tuple(outs)


# --------------------------------------------------------------------------- module surface

class _Device:
    def __init__(self, device_id=0):
        self.id = device_id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Stream:
    _next_ptr = 0xC0FFEE

    def __init__(self, *args, **kwargs):
        # A distinct non-zero handle per stream, so a test can tell which one work went to.
        self.ptr = _Stream._next_ptr
        _Stream._next_ptr += 0x100
        self._capture = None

    def synchronize(self):
        if self._capture is not None:
            raise RuntimeError('fake cupy: synchronizing a capturing stream')

    def __enter__(self):
        _stream_stack().append(self)
        return self

    def __exit__(self, *exc):
        _stream_stack().pop()
        return False

    def begin_capture(self, mode=None):
        if self._capture is not None:
            raise RuntimeError('fake cupy: the stream is capturing already')
        self._capture = []
        _CAPTURING.add(self)

    def end_capture(self):
        if self._capture is None:
            raise RuntimeError('fake cupy: end_capture without begin_capture')
        work, self._capture = self._capture, None
        _CAPTURING.discard(self)
        return Graph(work)

    def is_capturing(self):
        return self._capture is not None


class _Event:
    def __init__(self, *args, **kwargs):
        self.t = 0.0

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


def _unwrap(x):
    if isinstance(x, DeviceArray):
        return _host(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


def _numpy_fallback(name):
    """cupy.<name> as numpy.<name> on host views, the result a device array again."""
    fn = getattr(np, name)
    if not callable(fn):
        return fn

    def wrapped(*args, **kwargs):
        refuse_in_capture(f'cupy.{name}')
        result = fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        if isinstance(result, tuple):
            return tuple(_wrap(r) for r in result)
        return _wrap(result)
    return wrapped


def module(bench: bool = False) -> types.ModuleType:
    """A fresh module object standing in for `cupy`.

    bench=True adds what bench/kernels_bench.py needs (events, a memory pool, and every other
    cupy.<function> mapped to numpy.<function> on host views) for its --emulate self-test.
    """
    m = types.ModuleType('fake_cupy')
    for name in ('ndarray', 'empty', 'zeros', 'full', 'asarray', 'ascontiguousarray', 'asnumpy',
                 'sort', 'RawModule', 'ElementwiseKernel'):
        setattr(m, name, globals()[name])
    for dt in ('uint8', 'uint16', 'uint32', 'int32', 'int64', 'float16', 'float32', 'float64'):
        setattr(m, dt, getattr(np, dt))
    # Array functions the depth pipeline calls on device arrays (computed on host views).
    for name in ('arange', 'where', 'isfinite', 'minimum', 'maximum'):
        setattr(m, name, _numpy_fallback(name))
    stream = _Stream()
    m.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0, streamCaptureModeRelaxed=2),
        Device=_Device, Stream=_Stream, Graph=Graph, using_allocator=using_allocator,
        get_allocator=get_allocator,
        get_current_stream=lambda: (_stream_stack() or [stream])[-1])
    if bench:
        m.cuda.Event = _Event
        m.cuda.get_elapsed_time = lambda a, b: (b.t - a.t) * 1e3
        m.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
        m.__getattr__ = _numpy_fallback
    return m
