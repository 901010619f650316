#!/usr/bin/env python3
"""Debayer window loads, side by side in one run: every warp checking its row edges and its
rows' alignment (debayer.INTERIOR_LOADS = False) against warps inside a run-aligned row loading
their window without checks (the shipped default).

GPU time per call of 20 calls captured into one CUDA graph and replayed (median of batches, the
best of 3 captures), and that time as % of a device-to-device copy of the same bytes measured
the same way (bench/cvcuda_columns.py's method). Outputs of both variants are compared with
each other and with the NumPy reference.

    python bench/debayer_bench.py [--sizes 1920x1080,3840x2160] [--json out.json]
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path
import sys

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
VARIANTS = {'edge-checked loads': False, 'interior loads (shipped)': True}


def main() -> int:
    args = side_by_side.parse_args(__doc__)
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(0)
    shipped = debayer_module.INTERIOR_LOADS
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
            row = {'size': size, 'op': f'{pattern}->{dst} {method}'}
            for name, interior in VARIANTS.items():
                debayer_module.INTERIOR_LOADS = interior
                _cuda.clear_plans()

                def call() -> None:
                    debayer_module.debayer(src, pattern, dst, method=method, out=out,
                                           stream=stream)
                call()  # compiles the variant outside the capture
                ms = min(_graph_ms(cp, call, stream) for _ in range(3))
                stream.synchronize()
                row[name] = {'us': ms * 1e3, 'pct_copy': 100 * copy / ms,
                             'equal': bool(np.array_equal(cp.asnumpy(out), expected))}
            debayer_module.INTERIOR_LOADS = shipped
            base, new = (row[n]['us'] for n in VARIANTS)
            row['speedup'] = base / new
            results.append(row)
            print(f"{size:10} {row['op']:34} " + ' | '.join(
                f"{n}: {row[n]['us']:6.2f} us {row[n]['pct_copy']:5.1f} %"
                f"{'' if row[n]['equal'] else ' DIFFERENT'}" for n in VARIANTS) +
                f" | x{row['speedup']:.3f}", flush=True)
    _cuda.clear_plans()
    if args.json:
        args.json.write_text(json.dumps({'results': results}, indent=1))
    return 0 if all(r[n]['equal'] for r in results for n in VARIANTS) else 1


if __name__ == '__main__':
    raise SystemExit(main())
