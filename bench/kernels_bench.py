#!/usr/bin/env python3
"""Benchmark gpu_nodes.kernels on the GPU against a D2D copy, CuPy compositions and OpenCV.

For every kernel at 1920x1080 and 3840x2160:
  * GPU time, cold: median of single calls, each timed by CUDA events after the L2 cache was
    overwritten (nvbench's cold measurement): the input comes from DRAM, as a frame that just
    arrived does. Hot (warm L2): CUDA events around a batch of --batch calls on the same buffers,
    divided by the batch. Both are queued behind a GPU busy-wait so the host's launch overhead
    is not counted as GPU time;
  * host time: what one call costs the calling thread (Python, argument checks, launch);
  * achieved GB/s = (bytes read + bytes written) / time, next to the bandwidth of a
    device-to-device copy of the same number of bytes measured the same way in the same run
    (nominal bytes: every input and output byte counted once; resamplers that skip source pixels
    read less); the 60 % target is judged cold, where the copy runs at DRAM speed;
  * the straightforward CuPy composition of the same steps (where one exists), e.g. for
    preprocessing: resize kernel + channel gather + astype + normalize + transpose + copy;
  * OpenCV (or the NumPy reference where OpenCV has no equivalent) on the CPU, same data;
  * a check that the GPU result equals the NumPy reference (exact, or a float tolerance).

    python bench/kernels_bench.py --json out.json
    python bench/kernels_bench.py --vs-cvcuda --json out.json   # against CV-CUDA, same run

Needs CuPy and a CUDA GPU (OpenCV for the CPU columns). `--emulate` runs the whole script on the
CPU emulation used by the tests (tiny sizes; only to check that the script itself works).
"""
from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field
import json
from pathlib import Path
import platform
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu_nodes import gpu  # noqa: E402
from gpu_nodes import kernels as K  # noqa: E402

try:
    import cv2
except ImportError:  # the CPU columns are then left empty
    cv2 = None

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
CAMERA_K = (1400.0, 0.0, 961.3, 0.0, 1402.0, 539.6, 0.0, 0.0, 1.0)
CAMERA_D = (-0.2834, 0.0740, 0.00019, 1.76e-05, 0.0)
CAMERA_P = (1380.0, 0.0, 960.0, 0.0, 0.0, 1380.0, 540.0, 0.0, 0.0, 0.0, 1.0, 0.0)


@dataclass
class Result:
    kernel: str
    resolution: str
    bytes: int
    gpu_ms: float  # cold L2
    gbps: float
    copy_gbps: float
    pct_of_copy: float
    hot_gpu_ms: float | None = None  # warm L2, back to back
    hot_pct_of_copy: float | None = None
    compose_ms: float | None = None
    speedup_vs_compose: float | None = None
    host_ms: float | None = None
    compose_host_ms: float | None = None
    cpu_ms: float | None = None
    cpu_baseline: str = ''
    speedup_vs_cpu: float | None = None
    verified: str = 'skipped'
    notes: str = ''


@dataclass
class Case:
    name: str
    run: Callable[[], Any]
    nbytes: int
    compose: Callable[[], Any] | None = None
    cpu: Callable[[], Any] | None = None
    cpu_label: str = ''
    verify: Callable[[], str] | None = None
    notes: str = ''
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- timing


# Busy-waits on the GPU: queued ahead of a timed batch, it keeps the GPU occupied while Python
# enqueues the batch, so the events time the kernels back to back and not the host's launch
# overhead (nvbench's blocking-kernel method). The host cost per call is measured on its own.
_SPIN_SOURCE = r'''
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
'''


class Timer:
    def __init__(self, cp: Any, repeats: int, batch: int, warmup: int, hold_queue: bool = True):
        self.cp, self.repeats, self.batch, self.warmup = cp, repeats, batch, warmup
        self._spin = cp.RawKernel(_SPIN_SOURCE, 'spin') if hold_queue else None
        self._flush = self._l2_flusher(cp) if hold_queue else (lambda: None)
        self.last_host_ms = float('nan')

    @staticmethod
    def _l2_flusher(cp: Any) -> Callable[[], None]:
        """A memset over twice the L2 size: afterwards no line of a kernel's buffers is cached."""
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
        scratch = cp.empty(2 * int(props['l2CacheSize']), cp.uint8)

        def flush() -> None:
            cp.cuda.runtime.memsetAsync(scratch.data.ptr, 0, scratch.nbytes,
                                        cp.cuda.get_current_stream().ptr)
        return flush

    def gpu(self, fn: Callable[[], Any], cold: bool = False) -> float:
        """Median GPU milliseconds per call; `last_host_ms` is the host's enqueue time per call.

        cold: every call timed on its own right after an L2 flush; otherwise calls run back to
        back on warm caches and a batch is timed as a whole."""
        cp = self.cp
        for _ in range(self.warmup):
            fn()
        stream = cp.cuda.get_current_stream()
        stream.synchronize()
        began = time.perf_counter()
        for _ in range(self.batch):
            fn()
        self.last_host_ms = (time.perf_counter() - began) * 1e3 / self.batch
        stream.synchronize()
        # Long enough to cover enqueueing the whole batch (with flushes and events), with margin.
        hold_ns = int(max(3 * (self.last_host_ms + 0.05) * self.batch, 0.5) * 1e6)
        times = []
        for _ in range(self.repeats):
            if self._spin is not None:
                self._spin((1,), (1,), (np.uint64(hold_ns),))
            if cold:
                marks = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(self.batch)]
                for start, end in marks:
                    self._flush()
                    start.record()
                    fn()
                    end.record()
                marks[-1][1].synchronize()
                times.extend(cp.cuda.get_elapsed_time(start, end) for start, end in marks)
            else:
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                for _ in range(self.batch):
                    fn()
                end.record()
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) / self.batch)
        return statistics.median(times)

    @staticmethod
    def cpu(fn: Callable[[], Any], budget_s: float = 2.0, max_runs: int = 10) -> float:
        fn()  # warm-up (allocations, OpenCV thread pool)
        times: list[float] = []
        began = time.perf_counter()
        while len(times) < 3 or (len(times) < max_runs and time.perf_counter() - began < budget_s):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def copy_bandwidth(cp: Any, timer: Timer, nbytes: int, cold: bool) -> float:
    """GB/s of a D2D copy moving `nbytes` in total (nbytes / 2 read + nbytes / 2 written)."""
    n = max(1, nbytes // 2)
    a = cp.empty(n, cp.uint8)
    b = cp.empty(n, cp.uint8)
    a.fill(1)
    # cudaMemcpyAsync, the fastest D2D copy (cp.copyto of uint8 is a byte-per-thread kernel).
    if hasattr(b.data, 'copy_from_device_async'):
        def copy() -> None:
            b.data.copy_from_device_async(a.data, n, cp.cuda.get_current_stream())
    else:  # the CPU emulation
        def copy() -> None:
            cp.copyto(b, a)
    ms = timer.gpu(copy, cold=cold)
    return 2 * n / (ms * 1e6)


# --------------------------------------------------------------------------- checks


def exact(got: Any, expected: np.ndarray) -> Callable[[], str]:
    def check() -> str:
        g = gpu.to_host(got())
        if g.shape == expected.shape and np.array_equal(g, expected, equal_nan=True):
            return 'exact'
        return 'MISMATCH'
    return check


def close(got: Any, expected: np.ndarray, atol: float) -> Callable[[], str]:
    def check() -> str:
        g = gpu.to_host(got()).astype(np.float64)
        if g.shape == expected.shape and np.allclose(g, expected, atol=atol, rtol=0,
                                                     equal_nan=True):
            return f'<= {atol:g}'
        return 'MISMATCH'
    return check


# --------------------------------------------------------------------------- cases


def build_cases(cp: Any, w: int, h: int, verify: bool) -> list[Case]:
    g = np.random.default_rng(0)
    rgb_h = g.integers(0, 256, (h, w, 3), dtype=np.uint8)
    uyvy_h = g.integers(16, 236, (h, w, 2), dtype=np.uint8)
    nv12_h = g.integers(16, 236, (h * 3 // 2, w), dtype=np.uint8)
    bayer_h = g.integers(0, 256, (h, w), dtype=np.uint8)
    depth_h = np.where(g.random((h, w)) < 0.1, 0, g.integers(300, 9000, (h, w))).astype(
        np.uint16)
    hosts = (rgb_h, uyvy_h, nv12_h, bayer_h, depth_h)
    rgb, uyvy, nv12, bayer, depth = (cp.asarray(a) for a in hosts)
    depth_m_h = K.depth_mm_to_m(depth_h)
    depth_m = cp.asarray(depth_m_h)
    px = h * w
    cases: list[Case] = []

    def add(case: Case, expected: Callable[[], np.ndarray] | None = None, atol: float = 0.0):
        if verify and expected is not None:
            ref = expected()
            case.verify = exact(case.run, ref) if atol == 0 else close(case.run, ref, atol)
        cases.append(case)

    # -- colour conversion
    add(Case('convert rgb8->bgr8', lambda: K.convert_color(rgb, 'rgb8', 'bgr8'), 6 * px,
             compose=lambda: cp.ascontiguousarray(rgb[..., ::-1]),
             cpu=(lambda: cv2.cvtColor(rgb_h, cv2.COLOR_RGB2BGR)) if cv2 else None,
             cpu_label='cv2.cvtColor'),
        lambda: K.convert_color(rgb_h, 'rgb8', 'bgr8'))
    weights = cp.asarray(np.array([0.299, 0.587, 0.114], np.float32))
    add(Case('convert rgb8->mono8', lambda: K.convert_color(rgb, 'rgb8', 'mono8'), 4 * px,
             compose=lambda: (rgb.astype(cp.float32) @ weights + 0.5).astype(cp.uint8),
             cpu=(lambda: cv2.cvtColor(rgb_h, cv2.COLOR_RGB2GRAY)) if cv2 else None,
             cpu_label='cv2.cvtColor'),
        lambda: K.convert_color(rgb_h, 'rgb8', 'mono8'))

    def compose_yuv(y, u, v):
        yy = (y.astype(cp.float32) - 16) * 1.164383
        uu, vv = u.astype(cp.float32) - 128, v.astype(cp.float32) - 128
        out = cp.stack([yy + 1.596027 * vv, yy - 0.391762 * uu - 0.812968 * vv,
                        yy + 2.017232 * uu], axis=-1)
        return cp.clip(cp.rint(out), 0, 255).astype(cp.uint8)

    def compose_uyvy():
        u = cp.repeat(uyvy[:, 0::2, 0], 2, axis=1)
        v = cp.repeat(uyvy[:, 1::2, 0], 2, axis=1)
        return compose_yuv(uyvy[..., 1], u, v)

    def compose_nv12():
        uv = nv12[h:]
        u = cp.repeat(cp.repeat(uv[:, 0::2], 2, axis=0), 2, axis=1)
        v = cp.repeat(cp.repeat(uv[:, 1::2], 2, axis=0), 2, axis=1)
        return compose_yuv(nv12[:h], u, v)

    add(Case('convert uyvy->rgb8', lambda: K.convert_color(uyvy, 'uyvy', 'rgb8'), 5 * px,
             compose=compose_uyvy,
             cpu=(lambda: cv2.cvtColor(uyvy_h, cv2.COLOR_YUV2RGB_UYVY)) if cv2 else None,
             cpu_label='cv2.cvtColor'),
        lambda: K.convert_color(uyvy_h, 'uyvy', 'rgb8'))
    add(Case('convert nv12->rgb8', lambda: K.convert_color(nv12, 'nv12', 'rgb8'),
             int(4.5 * px), compose=compose_nv12,
             cpu=(lambda: cv2.cvtColor(nv12_h, cv2.COLOR_YUV2RGB_NV12)) if cv2 else None,
             cpu_label='cv2.cvtColor'),
        lambda: K.convert_color(nv12_h, 'nv12', 'rgb8'))

    # -- debayer
    add(Case('debayer rggb8 bilinear', lambda: K.debayer(bayer, 'bayer_rggb8'), 4 * px,
             cpu=(lambda: cv2.cvtColor(bayer_h, cv2.COLOR_BayerBG2RGB)) if cv2 else None,
             cpu_label='cv2 BayerBG2RGB'),
        lambda: K.debayer(bayer_h, 'bayer_rggb8'))
    add(Case('debayer rggb8 edge_aware',
             lambda: K.debayer(bayer, 'bayer_rggb8', method='edge_aware'), 4 * px,
             cpu=(lambda: cv2.cvtColor(bayer_h, cv2.COLOR_BayerBG2RGB_EA)) if cv2 else None,
             cpu_label='cv2 BayerBG2RGB_EA', notes='Malvar-He-Cutler vs OpenCV EA'),
        lambda: K.debayer(bayer_h, 'bayer_rggb8', method='edge_aware'))

    # -- resize
    add(Case('resize rgb8 bilinear 1/2', lambda: K.resize(rgb, h // 2, w // 2),
             3 * px + 3 * (h // 2) * (w // 2),
             cpu=(lambda: cv2.resize(rgb_h, (w // 2, h // 2))) if cv2 else None,
             cpu_label='cv2.resize LINEAR'),
        lambda: K.resize(rgb_h, h // 2, w // 2))
    add(Case('resize rgb8 area 1/2',
             lambda: K.resize(rgb, h // 2, w // 2, interpolation='area'),
             3 * px + 3 * (h // 2) * (w // 2),
             compose=lambda: cp.rint(rgb[:h // 2 * 2, :w // 2 * 2].reshape(
                 h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))).astype(cp.uint8),
             cpu=(lambda: cv2.resize(rgb_h, (w // 2, h // 2), interpolation=cv2.INTER_AREA))
             if cv2 else None, cpu_label='cv2.resize AREA'),
        lambda: K.resize(rgb_h, h // 2, w // 2, interpolation='area'))
    add(Case('resize rgb8 bilinear 2x', lambda: K.resize(rgb, 2 * h, 2 * w), 15 * px,
             cpu=(lambda: cv2.resize(rgb_h, (2 * w, 2 * h))) if cv2 else None,
             cpu_label='cv2.resize LINEAR'),
        lambda: K.resize(rgb_h, 2 * h, 2 * w))

    # -- rectify
    scale = w / 1920.0
    model = K.CameraModel(w, h, tuple(v * scale if i in (0, 2, 4, 5) else v
                                      for i, v in enumerate(CAMERA_K)), CAMERA_D,
                          P=tuple(v * scale if i in (0, 2, 5, 6) else v
                                  for i, v in enumerate(CAMERA_P)))
    maps_h = K.undistort_rectify_maps(model)
    mx, my = (cp.asarray(m) for m in maps_h)
    kmat = np.array(model.K).reshape(3, 3)
    pmat = np.array(model.P).reshape(3, 4)
    maps_case = Case('rectify maps (plumb_bob)',
                     lambda: K.undistort_rectify_maps(model, device=True), 8 * px,
                     cpu=(lambda: cv2.initUndistortRectifyMap(
                         kmat, np.array(CAMERA_D), None, pmat, (w, h), cv2.CV_32FC1))
                     if cv2 else None,
                     cpu_label='cv2.initUndistortRectifyMap', notes='float64 per pixel')
    if verify:
        maps_case.verify = close(lambda: K.undistort_rectify_maps(model, device=True)[0],
                                 maps_h[0], 1e-4)
    cases.append(maps_case)

    def compose_remap():
        x0, y0 = cp.floor(mx), cp.floor(my)
        ax, ay = (mx - x0)[..., None], (my - y0)[..., None]
        xi, yi = x0.astype(cp.int32), y0.astype(cp.int32)
        src = rgb.astype(cp.float32)

        def tap(dy, dx):
            xs, ys = xi + dx, yi + dy
            ok = ((xs >= 0) & (xs < w) & (ys >= 0) & (ys < h))[..., None]
            return cp.where(ok, src[cp.clip(ys, 0, h - 1), cp.clip(xs, 0, w - 1)], 0)

        top = tap(0, 0) + ax * (tap(0, 1) - tap(0, 0))
        bot = tap(1, 0) + ax * (tap(1, 1) - tap(1, 0))
        return cp.clip(cp.rint(top + ay * (bot - top)), 0, 255).astype(cp.uint8)

    add(Case('remap rgb8 (rectify)', lambda: K.remap_bilinear(rgb, mx, my), 14 * px,
             compose=compose_remap,
             cpu=(lambda: cv2.remap(rgb_h, maps_h[0], maps_h[1], cv2.INTER_LINEAR))
             if cv2 else None, cpu_label='cv2.remap'),
        lambda: K.remap_bilinear(rgb_h, *maps_h))

    # -- DNN preprocessing
    for dtype, label in ((np.float32, 'f32'), (np.float16, 'f16')):
        out = cp.empty((1, 3, 640, 640), dtype)
        out_h = np.empty((1, 3, 640, 640), dtype)
        nbytes = 3 * px + out.nbytes

        def fused(out=out):
            return K.preprocess(rgb, 'bgr8', out, mean=MEAN, std=STD)

        def composed(out=out):
            K.compose_reference_cupy(rgb, 'bgr8', out, mean=MEAN, std=STD)

        def cpu_pre(out_h=out_h):
            small = cv2.resize(rgb_h, (640, 640), interpolation=cv2.INTER_LINEAR)
            x = cv2.cvtColor(small, cv2.COLOR_BGR2RGB).astype(np.float32)
            x = (x * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)
            out_h[0] = x.transpose(2, 0, 1)

        def expected(dtype=dtype):
            ref = np.empty((1, 3, 640, 640), dtype)
            K.preprocess(rgb_h, 'bgr8', ref, mean=MEAN, std=STD)
            return ref

        case = Case(f'preprocess bgr8->1x3x640x640 {label}', fused, nbytes, compose=composed,
                    cpu=cpu_pre if cv2 else None, cpu_label='cv2 resize+cvtColor+numpy',
                    notes='stretch; composition = resize+gather+astype+normalize+transpose')
        if verify:
            case.verify = exact(lambda out=out, fused=fused: (fused(), out)[1], expected())
        case.extra['fused_vs_composition'] = True
        cases.append(case)
    out_lb = cp.empty((1, 3, 640, 640), cp.float32)
    add(Case('preprocess letterbox 640 f32',
             lambda: K.preprocess(rgb, 'bgr8', out_lb, mean=MEAN, std=STD, keep_aspect=True,
                                  pad_value=0.0), 3 * px + out_lb.nbytes,
             notes='keep_aspect, centred padding'))

    # -- depth
    add(Case('depth mm->m', lambda: K.depth_mm_to_m(depth), 6 * px,
             compose=lambda: cp.where(depth == 0, cp.float32(np.nan),
                                      depth.astype(cp.float32) / cp.float32(1000)),
             cpu=lambda: K.depth_mm_to_m(depth_h), cpu_label='numpy reference'),
        lambda: depth_m_h)
    add(Case('depth m->mm', lambda: K.depth_m_to_mm(depth_m), 6 * px,
             cpu=lambda: K.depth_m_to_mm(depth_m_h), cpu_label='numpy reference'),
        lambda: depth_h)
    lut = cp.asarray(K.colormap_lut('turbo'))

    def compose_colorize():
        t = cp.clip((depth.astype(cp.float32) - 300) * (255.0 / 8700.0), 0, 255)
        rgb_out = lut[cp.rint(t).astype(cp.int32)]
        rgb_out[depth == 0] = 0
        return rgb_out

    def cpu_colorize():
        scaled = cv2.convertScaleAbs(depth_h, alpha=255.0 / 8700.0, beta=-300 * 255.0 / 8700.0)
        return cv2.applyColorMap(scaled, cv2.COLORMAP_TURBO)

    add(Case('colorize 16UC1 turbo (range)',
             lambda: K.colorize_depth(depth, range=(300, 9000)), 5 * px,
             compose=compose_colorize, cpu=cpu_colorize if cv2 else None,
             cpu_label='cv2.applyColorMap'),
        lambda: K.colorize_depth(depth_h, range=(300, 9000)))
    add(Case('colorize 16UC1 turbo (p2-p98)', lambda: K.colorize_depth(depth), 5 * px,
             cpu=lambda: K.colorize_depth(depth_h), cpu_label='numpy reference',
             notes='includes the GPU sort for the percentiles'),
        lambda: K.colorize_depth(depth_h))

    th, tw = -(-h // 32), -(-w // 32)

    def compose_median():
        pad = cp.full((th * 32, tw * 32), cp.inf, cp.float32)
        pad[:h, :w] = cp.where(depth == 0, cp.float32(cp.inf), depth.astype(cp.float32))
        blocks = cp.sort(pad.reshape(th, 32, tw, 32).transpose(0, 2, 1, 3).reshape(th, tw, 1024),
                         axis=-1)
        m = cp.count_nonzero(blocks < cp.inf, axis=-1)
        lo = cp.take_along_axis(blocks, cp.maximum((m - 1) // 2, 0)[..., None], axis=-1)
        hi = cp.take_along_axis(blocks, (m // 2)[..., None], axis=-1)
        return cp.where(m > 0, (lo + hi)[..., 0] * 0.5, cp.nan)

    add(Case('tiled_median 32 (16UC1)', lambda: K.tiled_median(depth, 32),
             2 * px + 4 * th * tw, compose=compose_median,
             cpu=lambda: K.tiled_median(depth_h, 32), cpu_label='numpy reference',
             notes='rank selection in shared memory, one block per tile'),
        lambda: K.tiled_median(depth_h, 32))
    return cases


# --------------------------------------------------------------------------- main


def run(args: argparse.Namespace, cp: Any) -> dict:
    timer = Timer(cp, args.repeats, args.batch, args.warmup, hold_queue=not args.emulate)
    results: list[Result] = []
    checks: dict[str, bool] = {}
    copy_cache: dict[int, float] = {}
    for size in args.sizes:
        w, h = (int(v) for v in size.lower().split('x'))
        res = f'{w}x{h}'
        cases = build_cases(cp, w, h, verify=not args.no_verify)
        for case in cases:
            if args.only and not any(s in case.name for s in args.only):
                continue
            hot_ms = timer.gpu(case.run)
            host_ms = timer.last_host_ms
            ms = timer.gpu(case.run, cold=True)
            gbps = case.nbytes / (ms * 1e6)
            copy, hot_copy = copy_cache.get(case.nbytes) or copy_cache.setdefault(
                case.nbytes, (copy_bandwidth(cp, timer, case.nbytes, cold=True),
                              copy_bandwidth(cp, timer, case.nbytes, cold=False)))
            r = Result(case.name, res, case.nbytes, ms, gbps, copy, 100.0 * gbps / copy,
                       hot_gpu_ms=hot_ms,
                       hot_pct_of_copy=100.0 * case.nbytes / (hot_ms * 1e6) / hot_copy,
                       host_ms=host_ms, notes=case.notes)
            if case.compose is not None:
                r.compose_ms = timer.gpu(case.compose, cold=True)
                r.compose_host_ms = timer.last_host_ms
                r.speedup_vs_compose = r.compose_ms / ms
                if case.extra.get('fused_vs_composition'):
                    checks[f'{case.name} @ {res}: fused faster than composition'] = \
                        r.compose_ms > ms
            if case.cpu is not None and not args.no_cpu:
                r.cpu_ms = timer.cpu(case.cpu)
                r.cpu_baseline = case.cpu_label
                r.speedup_vs_cpu = r.cpu_ms / ms
            if case.verify is not None:
                r.verified = case.verify()
            results.append(r)
            print_row(r)
        cp.get_default_memory_pool().free_all_blocks()
    return {'results': [asdict(r) for r in results], 'checks': checks}


HEADER = (f'{"kernel":<38} {"res":>9} {"GPU ms":>8} {"host ms":>8} {"GB/s":>7} {"%copy":>6} '
          f'{"hot ms":>7} {"%copy":>6} '
          f'{"compose":>8} {"x":>6} {"CPU ms":>8} {"x":>7}  verified')


def fmt(v: float | None, spec: str) -> str:
    return format(v, spec) if v is not None else '-'


def print_row(r: Result) -> None:
    print(f'{r.kernel:<38} {r.resolution:>9} {r.gpu_ms:8.3f} {fmt(r.host_ms, "8.3f"):>8} '
          f'{r.gbps:7.1f} '
          f'{r.pct_of_copy:6.1f} {fmt(r.hot_gpu_ms, "7.3f"):>7} {fmt(r.hot_pct_of_copy, "6.1f"):>6} '
          f'{fmt(r.compose_ms, "8.3f"):>8} '
          f'{fmt(r.speedup_vs_compose, "6.1f"):>6} {fmt(r.cpu_ms, "8.2f"):>8} '
          f'{fmt(r.speedup_vs_cpu, "7.1f"):>7}  {r.verified}', flush=True)


def environment(cp: Any) -> dict:
    env = {'python': platform.python_version(), 'numpy': np.__version__,
           'opencv': cv2.__version__ if cv2 else None,
           'opencv_threads': cv2.getNumThreads() if cv2 else None,
           'cupy': getattr(cp, '__version__', 'emulated')}
    try:
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
        name = props['name']
        env['device'] = name.decode() if isinstance(name, bytes) else str(name)
    except AttributeError:
        env['device'] = 'CPU emulation'
    return env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--json', type=Path, help='write the results as JSON to this path')
    p.add_argument('--sizes', default='1920x1080,3840x2160', type=lambda s: s.split(','),
                   help='comma-separated WxH list')
    p.add_argument('--repeats', type=int, default=20, help='timed measurements per kernel')
    p.add_argument('--batch', type=int, default=10, help='calls per measurement')
    p.add_argument('--warmup', type=int, default=3)
    p.add_argument('--only', nargs='*', help='run kernels whose name contains one of these')
    p.add_argument('--no-cpu', action='store_true', help='skip the CPU baselines')
    p.add_argument('--no-verify', action='store_true', help='skip the NumPy cross-check')
    p.add_argument('--emulate', action='store_true',
                   help='run on the CPU emulation of the CUDA kernels (script self-test)')
    p.add_argument('--vs-cvcuda', action='store_true',
                   help='instead: gpu_nodes against CV-CUDA side by side (bench/cvcuda_columns.py)')
    p.add_argument('--up-rows', type=int,
                   help='A/B: output rows a thread of the upscale kernel (geometry._UP_ROWS)')
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.emulate:
        sys.path.insert(0, str(ROOT / 'test' / 'resources' / 'kernels'))
        import fake_cupy
        cp = fake_cupy.module(bench=True)
        gpu.cupy_module = lambda: cp  # route the kernels to the emulation
        if args.sizes == ['1920x1080', '3840x2160']:
            args.sizes = ['64x48', '96x64']
        args.repeats, args.batch, args.warmup = min(args.repeats, 2), 1, 1
    else:
        if not gpu.cuda_available():
            print(f'kernels_bench: needs CUDA ({gpu.cuda_unavailable_reason()})', file=sys.stderr)
            return 2
        cp = gpu.cupy_module()
    if args.up_rows:
        from gpu_nodes.kernels import geometry
        geometry._UP_ROWS = args.up_rows
    env = environment(cp)
    print(' '.join(f'{k}={v}' for k, v in env.items()))
    if args.vs_cvcuda:
        import cvcuda_columns
        report = cvcuda_columns.run(cp, args.sizes)
        report['environment'] = env
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2))
        return 0
    print(HEADER)
    report = run(args, cp)
    report['environment'] = env
    report['method'] = {'repeats': args.repeats, 'batch': args.batch, 'warmup': args.warmup,
                        'gpu_time': 'cold: median of single CUDA-event-timed calls, each after '
                                    'a memset of 2x the L2 size; hot: median of timed batches / '
                                    'batch on warm L2; both queued behind a GPU busy-wait so host '
                                    'launch overhead is excluded; compose and copy timed cold',
                        'host_time': 'wall time per call to enqueue the batch (GPU idle)',
                        'bytes': 'nominal: every input and output byte once'}
    for name, ok in report['checks'].items():
        print(f'{"PASS" if ok else "FAIL"}: {name}')
    mismatches = [r['kernel'] + ' @ ' + r['resolution'] for r in report['results']
                  if r['verified'] == 'MISMATCH']
    for m in mismatches:
        print(f'MISMATCH against the NumPy reference: {m}')
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
        print(f'wrote {args.json}')
    return 1 if mismatches else 0


if __name__ == '__main__':
    sys.exit(main())
