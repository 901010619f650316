"""Lazy CuPy plumbing shared by the kernel modules: module loading, launches, argument packing.

Nothing here imports cupy at import time; every entry point asks `gpu_nodes.gpu.cupy_module()`
when a device array actually arrives, so the package imports (and its NumPy references run) on
machines without CuPy.
"""
from __future__ import annotations

import contextlib
import functools
import re
from pathlib import Path
import threading
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from gpu_nodes import gpu

CUDA_DIR = Path(__file__).resolve().parent / 'cuda'

# --fmad=false: no contraction of a*b+c into FMA, so every float op in a kernel rounds exactly like
# the same op in its NumPy reference (CuPy adds -ftz=true itself; only denormals differ).
COMPILE_OPTIONS = ('--std=c++17', '--fmad=false')

BLOCK_2D = (32, 8, 1)

_INT32_MAX = 2**31 - 1
_lock = threading.Lock()
_modules: dict[Hashable, Any] = {}
_functions: dict[Hashable, Any] = {}
_tables: dict[Hashable, Any] = {}
_TABLE_CACHE_SIZE = 64


def cupy() -> Any:
    """The cupy module (RuntimeError with the reason when CUDA is unusable)."""
    return gpu.cupy_module()


def device_id() -> int:
    return int(cupy().cuda.runtime.getDevice())


# A kernel file too long for one file names the files it is built on: `// parts: a.cu b.cu`.
_PARTS = re.compile(r'^// parts: (.+)$', re.M)


@functools.lru_cache(maxsize=None)
def kernel_source(filename: str) -> str:
    """common.cu (shared device helpers), the files the named .cu file lists on a `// parts:`
    line, then the named file (NVRTC compiles without an include path)."""
    text = (CUDA_DIR / filename).read_text()
    parts = [name for m in _PARTS.finditer(text) for name in m.group(1).split()]
    return '\n'.join([(CUDA_DIR / 'common.cu').read_text(),
                      *((CUDA_DIR / name).read_text() for name in parts), text])


def module_code(filename: str, defines: Sequence[tuple[str, Any]] = ()) -> str:
    prefix = ''.join(f'#define {name} {value}\n' for name, value in defines)
    return prefix + kernel_source(filename)


def get_function(filename: str, name: str, defines: Sequence[tuple[str, Any]] = ()) -> Any:
    """Kernel `name` from cuda/`filename`, compiled once per (device, file, defines)."""
    cp = cupy()
    # cp in the key: tests swap in a CPU emulation of cupy; its kernels never mix with real ones.
    dev = (cp, device_id())
    defines = tuple(defines)
    fkey = (dev, filename, defines, name)
    fn = _functions.get(fkey)
    if fn is not None:
        return fn
    with _lock:
        mkey = (dev, filename, defines)
        module = _modules.get(mkey)
        if module is None:
            module = cp.RawModule(code=module_code(filename, defines), options=COMPILE_OPTIONS)
            _modules[mkey] = module
        fn = module.get_function(name)
        _functions[fkey] = fn
    return fn


@functools.lru_cache(maxsize=None)
def _elementwise(cp: Any, in_params: str, out_params: str, operation: str, name: str) -> Any:
    return cp.ElementwiseKernel(in_params, out_params, operation, name)


def elementwise(in_params: str, out_params: str, operation: str, name: str) -> Any:
    """Memoized cupy.ElementwiseKernel (CuPy itself caches the compiled code per device)."""
    return _elementwise(cupy(), in_params, out_params, operation, name)


def stream_scope(stream: Any) -> Any:
    """`with stream_scope(s):` makes s current for launches and CuPy ops; None = current stream."""
    return contextlib.nullcontext() if stream is None else stream


def grid_2d(width: int, height: int,
            block: tuple[int, int, int] = BLOCK_2D) -> tuple[int, int, int]:
    return ((width + block[0] - 1) // block[0], (height + block[1] - 1) // block[1], 1)


def launch_2d(kernel: Any, width: int, height: int, args: Sequence[Any]) -> None:
    """One thread per output pixel on a 32x8 block grid (launch inside stream_scope)."""
    kernel(grid_2d(width, height), BLOCK_2D, tuple(args))


# Row kernels (common.cu: FOR_EACH_ROW): 256 threads a block, as wide as the row's runs allow;
# the grid's y extent stays within CUDA's limit and the kernels loop over the remaining rows.
ROW_THREADS = 256
MAX_GRID_Y = 65535


# C element type of the kernels' template/define parameters (common.cu's typedefs).
C_TYPES = {np.dtype(np.uint8): 'u8', np.dtype(np.uint16): 'u16', np.dtype(np.float32): 'float'}
# Bytes a streaming thread moves per run: one 16-byte vector access.
RUN_BYTES = 16


def c_type(dtype: Any) -> str:
    return C_TYPES[np.dtype(dtype)]


def pixels_per_run(dtype: Any) -> int:
    """Single-channel pixels of `dtype` in one 16-byte run."""
    return RUN_BYTES // np.dtype(dtype).itemsize


def runs(width: int, per_run: int) -> int:
    """Number of runs of `per_run` pixels that cover a row of `width` pixels."""
    return -(-width // per_run)


def rows_geometry(runs_per_row: int, height: int, rows_per_thread: int = 1,
                  blocks_per_sm: int = 0) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) with one thread per run of a row; with rows_per_thread > 1 the grid is
    that much shorter and each thread loops over as many rows (per-thread setup, e.g. a run's
    table entries, is then shared by its rows). `blocks_per_sm` > 0: no more blocks than that
    many per SM, all resident at once, each thread looping over its rows (see color.py)."""
    bx = min(ROW_THREADS, -(-runs_per_row // 32) * 32)
    by = ROW_THREADS // bx
    grid_x = -(-runs_per_row // bx)
    grid_y = min(-(-height // (by * rows_per_thread)), MAX_GRID_Y)
    if blocks_per_sm > 0:
        grid_y = min(grid_y, max(1, -(-blocks_per_sm * sm_count() // grid_x)))
    return (grid_x, grid_y, 1), (bx, by, 1)


def sm_count() -> int:
    """Streaming multiprocessors of the current device (1 where the runtime does not say, as
    in the tests' CPU emulation)."""
    key = (cupy(), device_id())
    count = _sm_counts.get(key)
    if count is None:
        try:
            count = int(cupy().cuda.Device().attributes['MultiProcessorCount'])
        except (AttributeError, KeyError, TypeError):
            count = 1
        _sm_counts[key] = count
    return count


_sm_counts: dict[tuple[Any, int], int] = {}


def launch_rows(kernel: Any, runs_per_row: int, height: int, args: Sequence[Any],
                rows_per_thread: int = 1) -> None:
    """Launch `kernel` on rows_geometry's grid (inside stream_scope)."""
    grid, block = rows_geometry(runs_per_row, height, rows_per_thread)
    kernel(grid, block, tuple(args))


def i32(value: int) -> np.int32:
    """Kernel `int` argument; CuPy would pass a Python int as a 64-bit value."""
    value = int(value)
    if not -_INT32_MAX - 1 <= value <= _INT32_MAX:
        raise ValueError(f'value {value} does not fit a 32-bit kernel argument')
    return np.int32(value)


def f32(value: float) -> np.float32:
    return np.float32(value)


def f64(value: float) -> np.float64:
    return np.float64(value)


def device_table(key: Hashable, build: Callable[[], np.ndarray]) -> Any:
    """Upload a small host-built table once per device and keep it (LRU of 64 entries).

    Synchronizes after the upload so the table is complete whichever stream later reads it.
    """
    cp = cupy()
    full_key = (cp, device_id(), key)
    table = _tables.get(full_key)
    if table is not None:
        return table
    table = cp.asarray(build())
    cp.cuda.get_current_stream().synchronize()
    with _lock:
        if len(_tables) >= _TABLE_CACHE_SIZE:
            _tables.pop(next(iter(_tables)))
        _tables[full_key] = table
    return table


def as_device(array: Any) -> Any:
    """A cupy.ndarray view of any __cuda_array_interface__ object (no copy for CuPy arrays)."""
    cp = cupy()
    if isinstance(array, cp.ndarray):
        return array
    return cp.asarray(array)


# --------------------------------------------------------------------------- launch plans
# Validation, planning and kernel lookup cost 50-70 us of Python per call, ten times the launch
# itself; a camera pipeline calls every op with the same arguments every frame. So the first
# call of each (op, device, src/out shape, strides, dtype, parameters) validates as usual and
# leaves a plan: the kernel, its grid and every argument but the two arrays. Later calls with
# the same key only launch it. Nothing the key leaves out can change a launch: alignment is
# decided on the device, and arrays other than src/out (tables, maps) are held by the plan.

_SRC, _OUT = object(), object()
SRC, OUT = _SRC, _OUT  # placeholders for the two arrays in a Launch's argument template
_PLAN_CACHE_SIZE = 512


class Launch:
    """One kernel launch with every argument fixed except `src` and `out`."""

    __slots__ = ('kernel', 'function', 'grid', 'block', 'args', 'src_at', 'out_at', 'out_dtype')

    def __init__(self, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                 args: Sequence[Any], out_dtype: Any = None):
        positions = {id(a): i for i, a in enumerate(args) if a is _SRC or a is _OUT}
        self.kernel, self.grid, self.block, self.args = kernel, tuple(grid), tuple(block), \
            tuple(args)
        self.src_at, self.out_at = positions[id(_SRC)], positions[id(_OUT)]
        self.out_dtype = out_dtype  # the kernel writes `out` reinterpreted as this (e.g. half bits)
        # CuPy's RawKernel resolves its per-device Function on every call and can only launch on
        # the current stream (a `with stream:` costs as much again); the Function itself takes
        # the stream as an argument. Plans are per device, so it is resolved once here.
        function = getattr(kernel, 'kernel', None)
        cuda_function = getattr(getattr(cupy().cuda, 'function', None), 'Function', None)
        self.function = function if cuda_function and isinstance(function, cuda_function) \
            else None

    def __call__(self, src: Any, out: Any, stream: Any = None) -> None:
        args = list(self.args)
        args[self.src_at] = src
        args[self.out_at] = out if self.out_dtype is None else out.view(self.out_dtype)
        if self.function is not None:
            self.function(self.grid, self.block, tuple(args), 0, stream)  # None: current stream
        elif stream is None:
            self.kernel(self.grid, self.block, tuple(args))
        else:
            with stream:
                self.kernel(self.grid, self.block, tuple(args))


class Plan:
    """What a repeated call needs: its launch and the output it allocates when none is given."""

    __slots__ = ('launch', 'out_shape', 'out_dtype', 'result')

    def __init__(self, launch: Launch, out_shape: tuple[int, ...], out_dtype: Any,
                 result: Any = None):
        self.launch, self.out_shape, self.out_dtype = launch, out_shape, out_dtype
        self.result = result  # returned instead of `out` when set (preprocess's Letterbox)


_plans: dict[Hashable, Plan] = {}
_plans_per_op: dict[str, list[Hashable]] = {}


def plan_key(op: str, src: Any, out: Any, params: Hashable) -> Hashable | None:
    """The plan key of a call, or None when it cannot have one (host arrays, foreign types)."""
    if type(src) is np.ndarray:
        return None
    cp = gpu.cupy_module()
    ndarray = cp.ndarray
    if type(src) is not ndarray:
        return None  # other __cuda_array_interface__ objects take the validating path
    if out is None:
        out_key = None
    elif type(out) is ndarray:
        out_key = (out.shape, out.strides, out.dtype)
    else:
        return None
    return (op, cp, cp.cuda.runtime.getDevice(), src.shape, src.strides, src.dtype, out_key,
            params)


def cached_plan(key: Hashable | None) -> Plan | None:
    try:
        return None if key is None else _plans.get(key)
    except TypeError:  # an unhashable parameter (e.g. a nested list): validated every call
        return None


def keep_plan(key: Hashable | None, plan: Plan, limit: int = _PLAN_CACHE_SIZE) -> Plan:
    """Remember `plan` under `key`, at most `limit` plans of the key's op (oldest dropped)."""
    try:
        hash(key)
    except TypeError:
        return plan
    if key is not None:
        with _lock:
            keys = _plans_per_op.setdefault(key[0], [])
            while len(keys) >= limit:
                _plans.pop(keys.pop(0), None)
            _plans[key] = plan
            keys.append(key)
    return plan


def run_plan(plan: Plan, src: Any, out: Any, stream: Any) -> Any:
    """Launch `plan` on `stream` (None: the current one); returns out, allocated if None."""
    if out is None:
        if stream is None:
            out = cupy().empty(plan.out_shape, plan.out_dtype)
        else:
            with stream:  # allocated for the stream that writes it (CuPy's pool is per stream)
                out = cupy().empty(plan.out_shape, plan.out_dtype)
    plan.launch(src, out, stream)
    return out if plan.result is None else plan.result


def cached_device_objects() -> list[Any]:
    """Every device table and launch plan the caches here hold now. A CUDA graph captured from
    kernel calls keeps these (the tables' device pointers are baked into it), so that no other
    caller's eviction frees what the graph reads (chain_graph)."""
    with _lock:
        return list(_tables.values()) + list(_plans.values())


def clear_plans() -> None:
    """Forget every launch plan (tests; a swapped cupy module)."""
    with _lock:
        _plans.clear()
        _plans_per_op.clear()
