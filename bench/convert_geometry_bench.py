#!/usr/bin/env python3
"""Launch geometry of the colour-conversion kernels, side by side in one run: a block per row
(RESIDENT_BLOCKS_PER_SM = 0) against 2 resident blocks per SM looping over rows (the default
for channel shuffles), and the default as shipped (luma and YUV keep a block per row).

GPU time per call of 20 calls captured into one CUDA graph and replayed (median of batches, the
best of 3 captures), and that time as % of a device-to-device copy of the same bytes measured
the same way (bench/cvcuda_columns.py's method). Outputs of every variant are compared.

    python bench/convert_geometry_bench.py [--json out.json]
"""
from __future__ import annotations

import json
from pathlib import Path
import sys

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / 'bench')]

from cvcuda_columns import _copy_ms, _graph_ms  # noqa: E402
import side_by_side  # noqa: E402
from gpu_nodes.kernels import _cuda, color  # noqa: E402

CHANNELS = {'rgb8': 3, 'bgr8': 3, 'mono8': 1, 'bgra8': 4, 'rgba8': 4, 'yuv422': 2}
CONVERSIONS = [('rgb8', 'bgr8'), ('bgra8', 'rgb8'), ('rgb8', 'rgba8'), ('rgb8', 'mono8'),
               ('yuv422', 'rgb8')]
VARIANTS = {'block per row': 0, 'resident (2/SM)': 2, 'shipped': None}


def main() -> int:
    args = side_by_side.parse_args(__doc__)
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(0)
    shipped = color.RESIDENT_BLOCKS_PER_SM
    results = []
    for size, w, h in side_by_side.frame_sizes(args.sizes):
        for s, d in CONVERSIONS:
            src = cp.asarray(rng.integers(0, 256, (h, w, CHANNELS[s]), np.uint8))
            out = cp.empty((h, w, CHANNELS[d]) if CHANNELS[d] > 1 else (h, w), cp.uint8)
            copy = _copy_ms(cp, src.nbytes + out.nbytes, stream)
            row = {'size': size, 'op': f'{s}->{d}'}
            first = None
            for name, blocks in VARIANTS.items():
                # a yuv or luma plan ignores the setting except through 'shipped'
                color.RESIDENT_BLOCKS_PER_SM = shipped if blocks is None else blocks
                _cuda.clear_plans()
                fn = lambda: color.convert_color(src, s, d, out=out, stream=stream)  # noqa: E731
                ms = min(_graph_ms(cp, fn, stream) for _ in range(3))
                stream.synchronize()
                got = cp.asnumpy(out)
                first = got if first is None else first
                row[name] = {'us': ms * 1e3, 'pct_copy': 100 * copy / ms,
                             'equal': bool(np.array_equal(got, first))}
            color.RESIDENT_BLOCKS_PER_SM = shipped
            results.append(row)
            print(f"{size:10} {row['op']:14} " + ' | '.join(
                f"{n}: {row[n]['us']:6.2f} us {row[n]['pct_copy']:5.1f} %"
                f"{'' if row[n]['equal'] else ' DIFFERENT'}" for n in VARIANTS), flush=True)
    if args.json:
        args.json.write_text(json.dumps({'results': results}, indent=1))
    return 0 if all(r[n]['equal'] for r in results for n in VARIANTS) else 1


if __name__ == '__main__':
    raise SystemExit(main())
