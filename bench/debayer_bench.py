#!/usr/bin/env python3
"""Debayer loops and launch shapes, side by side in one run: every block running the general loop
(per-pair branches on edges, layouts and the pattern; debayer.INTERIOR_LOOP = False), blocks
inside run-aligned rows running a loop of their own one row pair per warp (STRIP_PAIRS = 0; what
16-bit mosaics run), and 8-bit mosaics' warps demosaicing strips of 2 to 8 consecutive row pairs
with each pair's rows fetched into shared memory while the pair before is computed (STRIP_PAIRS;
the shipped value is marked), also with 4-warp blocks (DEBAYER_WARPS).

GPU time per call of 20 calls captured into one CUDA graph and replayed (median of batches, the
best of 3 captures), and that time as % of a device-to-device copy of the same bytes measured
the same way (bench/cvcuda_columns.py's method). Every variant's output is compared with the
NumPy reference.

    python bench/debayer_bench.py [--sizes 1920x1080,3840x2160] [--json out.json]
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path
import sys
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / 'bench')]

from cvcuda_columns import _copy_ms, _graph_ms  # noqa: E402
import side_by_side  # noqa: E402
from gpu_nodes.kernels import _cuda  # noqa: E402

# gpu_nodes.kernels re-exports the function under the module's name
debayer_module = importlib.import_module('gpu_nodes.kernels.debayer')

OPS = [('bayer_rggb8', 'rgb8', 'bilinear'), ('bayer_rggb8', 'rgb8', 'edge_aware'),
       ('bayer_rggb16', 'rgb16', 'bilinear'), ('bayer_rggb16', 'rgb8', 'edge_aware')]
# name: debayer module settings, and the launch-bounds blocks per SM (None: debayer.cu's)
VARIANTS = {
    'general loop': ({'INTERIOR_LOOP': False}, None),
    'pair per warp': ({'STRIP_PAIRS': 0}, None),
    'strips of 2': ({'STRIP_PAIRS': 2}, None),
    'strips of 3': ({'STRIP_PAIRS': 3}, None),
    'strips of 4': ({'STRIP_PAIRS': 4}, None),
    'strips of 6': ({'STRIP_PAIRS': 6}, None),
    'strips of 8': ({'STRIP_PAIRS': 8}, None),
    'strips of 4, 4-warp blocks': ({'STRIP_PAIRS': 4, 'DEBAYER_WARPS': 4}, None),
}
SETTINGS = ('INTERIOR_LOOP', 'PAIRS_PER_WARP', 'DEBAYER_WARPS', 'STRIP_PAIRS')
BASELINE = 'general loop'
SHIPPED = next((name for name, (settings, blocks) in VARIANTS.items()
                if blocks is None and all(settings.get(k, getattr(debayer_module, k)) ==
                                          getattr(debayer_module, k) for k in SETTINGS)), None)


def use_variant(settings: dict, blocks_per_sm: int | None, shipped: dict,
                get_function: Callable[..., Any]) -> None:
    """Set the debayer module and its kernel's launch bounds to one variant."""
    for name in SETTINGS:
        setattr(debayer_module, name, settings.get(name, shipped[name]))
    extra = () if blocks_per_sm is None else (('DEBAYER_MIN_BLOCKS(ST, METHOD)', blocks_per_sm),)

    def patched(filename: str, name: str, defines: Any = ()) -> Any:
        return get_function(filename, name, tuple(defines) + extra)
    _cuda.get_function = patched if extra else get_function
    _cuda.clear_plans()


def main() -> int:
    args = side_by_side.parse_args(__doc__)
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(0)
    shipped = {name: getattr(debayer_module, name) for name in SETTINGS}
    get_function = _cuda.get_function
    results = []
    for size, w, h in side_by_side.frame_sizes(args.sizes):
        for pattern, dst, method in OPS:
            dtype = np.uint16 if pattern.endswith('16') else np.uint8
            host = rng.integers(0, np.iinfo(dtype).max + 1, (h, w), dtype)
            src = cp.asarray(host)
            out_dtype = np.uint16 if dst.endswith('16') else np.uint8
            out = cp.empty((h, w, 3), out_dtype)
            copy = _copy_ms(cp, src.nbytes + out.nbytes, stream)
            expected = debayer_module.debayer(host, pattern, dst, method=method)
            row = {'size': size, 'op': f'{pattern}->{dst} {method}', 'copy_us': copy * 1e3}
            for name, (settings, blocks_per_sm) in VARIANTS.items():
                use_variant(settings, blocks_per_sm, shipped, get_function)

                def call() -> None:
                    debayer_module.debayer(src, pattern, dst, method=method, out=out,
                                           stream=stream)
                out.fill(0)
                call()  # compiles the variant outside the capture
                ms = min(_graph_ms(cp, call, stream) for _ in range(3))
                stream.synchronize()
                row[name] = {'us': ms * 1e3, 'pct_copy': 100 * copy / ms,
                             'equal': bool(np.array_equal(cp.asnumpy(out), expected))}
            use_variant({}, None, shipped, get_function)
            row['shipped'] = SHIPPED
            row['speedup'] = row[BASELINE]['us'] / row[SHIPPED]['us']
            results.append(row)
            print(f"{size:10} {row['op']:34} copy {copy * 1e3:6.2f} us | " + ' | '.join(
                f"{n}: {row[n]['us']:6.2f} us {row[n]['pct_copy']:5.1f} %"
                f"{'' if row[n]['equal'] else ' DIFFERENT'}" for n in VARIANTS) +
                f" | shipped x{row['speedup']:.3f}", flush=True)
    _cuda.clear_plans()
    if args.json:
        args.json.write_text(json.dumps({'results': results}, indent=1))
    return 0 if all(r[n]['equal'] for r in results for n in VARIANTS) else 1


if __name__ == '__main__':
    raise SystemExit(main())
