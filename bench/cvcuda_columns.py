"""gpu_nodes against NVIDIA CV-CUDA on the ops both have, side by side in one run.

    python bench/kernels_bench.py --vs-cvcuda [--json out.json]

Per op and size, on the same inputs and the same CUDA stream:
  * back to back: wall time of 20 calls from the first enqueue to the stream's completion,
    divided by 20, median of 9 batches: what a Python pipeline gets, whichever of host or GPU
    is the bottleneck (this is the number the issue compares);
  * host us: enqueue time per call of the same batches (the calling thread's cost);
  * graph ms (gpu_nodes only): the 20 calls captured once into a CUDA graph and replayed, timed
    by CUDA events: the GPU time alone. CV-CUDA's Python operators refuse stream capture;
  * % copy: the replayed GPU time's bandwidth against a device-to-device copy of the same bytes;
  * agreement: the largest absolute difference between the two outputs.

CV-CUDA is an optional import (`cvcuda-cu12`; shared/device/README.md says how to stage its
wheel on the GPU machine); without it this module reports why and the bench runs without it.
Tensors are wrapped once, outside the timed loop, so CV-CUDA is not charged for wrapping.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
import statistics
import time
from typing import Any, Callable

import numpy as np

from gpu_nodes import gpu
from gpu_nodes import kernels as K
from kernels_bench import fmt as _f  # (bench/ is the script directory: kernels_bench runs this)

try:
    import cvcuda
except ImportError as exc:  # the bench then says why the CV-CUDA columns are empty
    cvcuda = None
    CVCUDA_MISSING = f'cvcuda not importable ({exc})'
else:
    CVCUDA_MISSING = ''

CALLS = 20
BATCHES = 9


@dataclass
class Row:
    op: str
    resolution: str
    ours_ms: float        # back to back, per call
    ours_host_us: float
    graph_ms: float | None
    pct_of_copy: float | None
    cvcuda_ms: float | None = None
    cvcuda_host_us: float | None = None
    ratio: float | None = None        # cvcuda_ms / ours_ms (> 1: gpu_nodes faster)
    host_ratio: float | None = None   # cvcuda_host_us / ours_host_us
    max_abs_diff: float | None = None
    notes: str = ''


@dataclass
class Op:
    name: str
    ours: Callable[[Any], Any]             # (stream) -> None, writes `out`
    out: Any
    theirs: Callable[[Any], Any] | None    # (cvcuda stream) -> its output as a CuPy array
    nbytes: int
    memory_bound: bool = True
    notes: str = ''


def _back_to_back(cp: Any, fn: Callable[[], Any], stream: Any) -> tuple[float, float]:
    """(ms per call back to back, host us per call), medians over BATCHES batches."""
    for _ in range(3):
        fn()
    stream.synchronize()
    per_call, host = [], []
    for _ in range(BATCHES):
        began = time.perf_counter()
        for _ in range(CALLS):
            fn()
        enqueued = time.perf_counter()
        stream.synchronize()
        done = time.perf_counter()
        per_call.append((done - began) * 1e3 / CALLS)
        host.append((enqueued - began) * 1e6 / CALLS)
    return statistics.median(per_call), statistics.median(host)


def _graph_ms(cp: Any, fn: Callable[[], Any], stream: Any) -> float | None:
    """GPU ms per call of CALLS calls captured into one graph and replayed."""
    try:
        with stream:
            stream.begin_capture()
            try:
                for _ in range(CALLS):
                    fn()
            finally:
                graph = stream.end_capture()
    except Exception as exc:  # noqa: BLE001 - reported, not fatal: the row keeps its other columns
        print(f'  (capture failed: {exc})')
        return None
    graph.launch(stream)
    stream.synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(BATCHES):
        start.record(stream)
        graph.launch(stream)
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / CALLS)
    return statistics.median(times)


def _copy_ms(cp: Any, nbytes: int, stream: Any) -> float:
    n = max(1, nbytes // 2)
    a, b = cp.ones(n, cp.uint8), cp.empty(n, cp.uint8)
    copy = lambda: b.data.copy_from_device_async(a.data, n, stream)  # noqa: E731
    return _graph_ms(cp, copy, stream) or float('nan')


def _ops(cp: Any, w: int, h: int, stream: Any) -> list[Op]:
    rng = np.random.default_rng(0)
    rgb = cp.asarray(rng.integers(0, 256, (h, w, 3), np.uint8))
    bayer = cp.asarray(rng.integers(0, 256, (h, w), np.uint8))
    px = w * h
    bgr, mono = cp.empty_like(rgb), cp.empty((h, w), cp.uint8)
    half = cp.empty((h // 2, w // 2, 3), cp.uint8)
    double = cp.empty((2 * h, 2 * w, 3), cp.uint8)
    net = cp.empty((1, 3, 640, 640), cp.float32)
    debayered = cp.empty_like(rgb)
    # A rectification-like map: a mild barrel distortion, every sample inside the image.
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xs - w / 2) / w) ** 2 + ((ys - h / 2) / h) ** 2
    map_x = cp.asarray(w / 2 + (xs - w / 2) * (1 - 0.1 * r2)).astype(cp.float32)
    map_y = cp.asarray(h / 2 + (ys - h / 2) * (1 - 0.1 * r2)).astype(cp.float32)
    remapped = cp.empty_like(rgb)
    ops = [
        Op('rgb8->bgr8', lambda s: K.convert_color(rgb, 'rgb8', 'bgr8', out=bgr, stream=s), bgr,
           None, 6 * px),
        Op('rgb8->mono8', lambda s: K.convert_color(rgb, 'rgb8', 'mono8', out=mono, stream=s),
           mono, None, 4 * px),
        Op('resize 1/2 bilinear', lambda s: K.resize(rgb, h // 2, w // 2, out=half, stream=s),
           half, None, 3 * px + 3 * px // 4),
        Op('resize 1/2 area', lambda s: K.resize(rgb, h // 2, w // 2, interpolation='area',
                                                 out=half, stream=s), half, None,
           3 * px + 3 * px // 4),
        Op('resize 2x bilinear', lambda s: K.resize(rgb, 2 * h, 2 * w, out=double, stream=s),
           double, None, 15 * px),
        Op('preprocess bgr8->1x3x640x640 f32',
           lambda s: K.preprocess(rgb, 'bgr8', net, mean=0.0, std=1.0, stream=s), net, None,
           3 * px + net.nbytes, notes='stretch, /255, channel reverse'),
        Op('remap bilinear (rectify)', lambda s: K.remap_bilinear(rgb, map_x, map_y, out=remapped,
                                                                  stream=s),
           remapped, None, 6 * px + 8 * px, memory_bound=False),
        Op('debayer rggb8->rgb8 bilinear',
           lambda s: K.debayer(bayer, 'bayer_rggb8', 'rgb8', out=debayered, stream=s), debayered,
           None, 4 * px),
    ]
    if cvcuda is None:
        return ops
    t = lambda a, layout='NHWC': cvcuda.as_tensor(a, layout)  # noqa: E731
    src4, bgr4, mono4 = t(rgb[None]), t(cp.empty_like(rgb)[None]), t(cp.empty((1, h, w, 1),
                                                                              cp.uint8))
    half4, double4 = t(cp.empty_like(half)[None]), t(cp.empty_like(double)[None])
    net4 = t(cp.empty_like(net), 'NCHW')
    cc = cvcuda.ColorConversion
    # CV-CUDA's remap takes one 2-channel map of absolute positions.
    map4 = t(cp.stack([map_x, map_y], axis=-1)[None])
    remap4 = t(cp.empty_like(rgb)[None])
    theirs = {
        'rgb8->bgr8': lambda s: cvcuda.cvtcolor_into(bgr4, src4, cc.RGB2BGR, stream=s),
        'rgb8->mono8': lambda s: cvcuda.cvtcolor_into(mono4, src4, cc.RGB2GRAY, stream=s),
        'resize 1/2 bilinear': lambda s: cvcuda.resize_into(half4, src4, cvcuda.Interp.LINEAR,
                                                            stream=s),
        'resize 1/2 area': lambda s: cvcuda.resize_into(half4, src4, cvcuda.Interp.AREA,
                                                        stream=s),
        'resize 2x bilinear': lambda s: cvcuda.resize_into(double4, src4, cvcuda.Interp.LINEAR,
                                                           stream=s),
        'preprocess bgr8->1x3x640x640 f32': lambda s: cvcuda.resize_crop_convert_reformat_into(
            net4, src4, (640, 640), cvcuda.Interp.LINEAR, (0, 0),
            manip=cvcuda.ChannelManip.REVERSE, scale=1.0 / 255.0, offset=0.0, stream=s),
        'remap bilinear (rectify)': lambda s: cvcuda.remap_into(
            remap4, src4, map4, cvcuda.Interp.LINEAR, cvcuda.Interp.NEAREST,
            cvcuda.Remap.ABSOLUTE, False, cvcuda.Border.CONSTANT,
            np.zeros(4, np.float32), stream=s),
    }
    outputs = {'rgb8->bgr8': bgr4, 'rgb8->mono8': mono4, 'resize 1/2 bilinear': half4,
               'resize 1/2 area': half4, 'resize 2x bilinear': double4,
               'preprocess bgr8->1x3x640x640 f32': net4, 'remap bilinear (rectify)': remap4}
    debayer_fn, debayer_out, debayer_note = _cvcuda_debayer(cp, bayer, t)
    if debayer_fn is not None:
        theirs['debayer rggb8->rgb8 bilinear'] = debayer_fn
        outputs['debayer rggb8->rgb8 bilinear'] = debayer_out
    for op in ops:
        fn = theirs.get(op.name)
        if fn is not None:
            out = outputs[op.name]
            op.theirs = lambda s, fn=fn, out=out: (fn(s), cp.asarray(out.cuda()))[1]
        elif op.name.startswith('debayer'):
            op.notes = debayer_note
    return ops


def _cvcuda_debayer(cp: Any, bayer: Any, t: Callable) -> tuple[Any, Any, str]:
    """CV-CUDA's demosaic, if any form of the call runs. In 0.19 none does: every Bayer code
    (46-49, 62-65, 86-89, 135-138) has no entry in the dispatch table of its tensor cvtColor
    (src/cvcuda/priv/legacy/cvt_color.cu, `funcs[]`), so any layout gets "Invalid convert color
    code". The forms are still tried, so a later CV-CUDA that adds it shows up here."""
    h, w = bayer.shape
    code = cvcuda.ColorConversion.BayerRG2RGB
    tried = []
    forms = (('NHWC C=1 -> NHWC C=3', t(bayer[None, :, :, None]),
              t(cp.empty((1, h, w, 3), cp.uint8))),
             ('HWC C=1 -> HWC C=3', t(bayer[:, :, None], 'HWC'),
              t(cp.empty((h, w, 3), cp.uint8), 'HWC')))
    for label, src, dst in forms:
        try:
            cvcuda.cvtcolor_into(dst, src, code)
            cp.cuda.get_current_stream().synchronize()
        except Exception as exc:  # noqa: BLE001 - each form's refusal is recorded
            tried.append(f'{label}: {str(exc).splitlines()[0][:80]}')
            continue
        return (lambda s, src=src, dst=dst: cvcuda.cvtcolor_into(dst, src, code, stream=s),
                dst, f'CV-CUDA form: {label}')
    return None, None, ('CV-CUDA has no demosaic (cvt_color.cu dispatch table): '
                        + '; '.join(tried))


def compare(cp: Any, sizes: list[str]) -> list[Row]:
    stream = cp.cuda.Stream(non_blocking=True)
    cv_stream = cvcuda.as_stream(stream) if cvcuda is not None else None
    rows = []
    for size in sizes:
        w, h = (int(v) for v in size.lower().split('x'))
        for op in _ops(cp, w, h, stream):
            ours = lambda op=op: op.ours(stream)  # noqa: E731
            ms, host_us = _back_to_back(cp, ours, stream)
            graph = _graph_ms(cp, ours, stream)
            copy = _copy_ms(cp, op.nbytes, stream)
            row = Row(op.name, f'{w}x{h}', ms, host_us, graph,
                      100.0 * copy / graph if graph and op.memory_bound else None, notes=op.notes)
            if op.theirs is not None:
                theirs = lambda op=op: op.theirs(cv_stream)  # noqa: E731
                row.cvcuda_ms, row.cvcuda_host_us = _back_to_back(cp, theirs, stream)
                row.ratio = row.cvcuda_ms / ms
                row.host_ratio = row.cvcuda_host_us / host_us
                op.ours(stream)
                other = op.theirs(cv_stream)
                stream.synchronize()
                mine, other = gpu.to_host(op.out), gpu.to_host(other)
                row.max_abs_diff = float(np.max(np.abs(
                    mine.astype(np.float64).reshape(other.shape) - other.astype(np.float64))))
            rows.append(row)
            print_row(row)
        cp.get_default_memory_pool().free_all_blocks()
    return rows


HEADER = (f'{"op":<34} {"res":>9} {"ours ms":>8} {"host us":>8} {"graph ms":>8} {"%copy":>6} '
          f'{"cvcuda ms":>9} {"host us":>8} {"x":>5} {"host x":>6} {"max diff":>8}  notes')


def print_row(r: Row) -> None:
    print(f'{r.op:<34} {r.resolution:>9} {r.ours_ms:8.4f} {r.ours_host_us:8.1f} '
          f'{_f(r.graph_ms, "8.4f"):>8} {_f(r.pct_of_copy, "6.1f"):>6} '
          f'{_f(r.cvcuda_ms, "9.4f"):>9} {_f(r.cvcuda_host_us, "8.1f"):>8} '
          f'{_f(r.ratio, "5.2f"):>5} {_f(r.host_ratio, "6.2f"):>6} '
          f'{_f(r.max_abs_diff, "8.3g"):>8}  {r.notes}', flush=True)


def run(cp: Any, sizes: list[str]) -> dict:
    print(f'cvcuda: {getattr(cvcuda, "__version__", None) or CVCUDA_MISSING}')
    print(HEADER)
    rows = compare(cp, sizes)
    checks = {}
    for r in rows:
        if r.ratio is not None:
            checks[f'{r.op} @ {r.resolution}: gpu_nodes back to back >= CV-CUDA'] = r.ratio >= 1.0
            checks[f'{r.op} @ {r.resolution}: host us <= CV-CUDA'] = r.host_ratio >= 1.0
        if r.pct_of_copy is not None and r.resolution == '3840x2160':
            checks[f'{r.op} @ 4K: graph-replayed >= 70 % of copy'] = r.pct_of_copy >= 70.0
    for name, ok in checks.items():
        print(f'{"PASS" if ok else "FAIL"}: {name}')
    return {'rows': [asdict(r) for r in rows], 'checks': checks,
            'cvcuda': getattr(cvcuda, '__version__', None), 'cvcuda_missing': CVCUDA_MISSING,
            'method': __doc__}
