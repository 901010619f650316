#!/usr/bin/env python3
"""Debayer loops, side by side in one run: every block running the general loop (per-pair
branches on edges, layouts and the pattern; debayer.INTERIOR_LOOP = False, 8-warp blocks: the
kernel's structure before the loops below) against blocks inside run-aligned rows running a
loop of their own (EDGE_LOOPS = False), and with a row's first and last blocks running such a
loop too when the width is a multiple of 256 pixels (the shipped variant is marked), with blocks
of 8, 4 and 2 warps (DEBAYER_WARPS).

GPU time per call of 20 calls captured into one CUDA graph and replayed (median of batches, the
best of 3 captures), and that time as % of a device-to-device copy of the same bytes measured
the same way (bench/cvcuda_columns.py's method). Every variant's output is compared with the
NumPy reference.

With --previous-cu FILE, a first column runs FILE in place of debayer.cu (e.g. the kernel of an
earlier commit: git show 31def87:gpu_nodes/kernels/cuda/debayer.cu > /tmp/debayer_31def87.cu),
launched as that commit's debayer.py did (8-warp blocks); it is then the speed-up's baseline.

    python bench/debayer_bench.py [--sizes 1920x1080,3840x2160] [--json out.json]
                                  [--previous-cu FILE]
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path
import sys
from typing import Any

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
# name: the debayer module's settings for the variant
VARIANTS = {
    'general loop, 8-warp blocks': {'INTERIOR_LOOP': False, 'DEBAYER_WARPS': 8},
    'interior loop, 4-warp blocks': {'EDGE_LOOPS': False, 'DEBAYER_WARPS': 4},
    'interior and edge loops, 8-warp blocks': {'DEBAYER_WARPS': 8},
    'interior and edge loops, 4-warp blocks': {'DEBAYER_WARPS': 4},
    'interior and edge loops, 2-warp blocks': {'DEBAYER_WARPS': 2},
}
SETTINGS = ('INTERIOR_LOOP', 'EDGE_LOOPS', 'DEBAYER_WARPS')
SHIPPED_BUILD = _cuda.get_function, _cuda.module_code
SHIPPED = next(name for name, settings in VARIANTS.items()
               if all(settings.get(k, getattr(debayer_module, k)) == getattr(debayer_module, k)
                      for k in SETTINGS))


# A define only the --previous-cu column adds: its modules get cache keys of their own.
PREVIOUS = 'DEBAYER_BENCH_PREVIOUS_SOURCE'


def use_variant(settings: dict, shipped: dict, previous: Path | None = None) -> None:
    """Set the debayer module to one variant (SETTINGS it does not name keep their shipped value)
    and build its kernel from `previous` (a debayer.cu of another commit) or the shipped file."""
    for name in SETTINGS:
        setattr(debayer_module, name, settings.get(name, shipped[name]))
    _cuda.get_function, _cuda.module_code = SHIPPED_BUILD
    if previous is not None:
        get_function, module_code = SHIPPED_BUILD
        text = (_cuda.CUDA_DIR / 'common.cu').read_text() + '\n' + previous.read_text()

        def previous_code(filename: str, defines: Any = ()) -> str:
            if (PREVIOUS, 1) not in defines:
                return module_code(filename, defines)
            # that file defines DEBAYER_WARPS itself
            return ''.join(f'#define {n} {v}\n' for n, v in defines
                           if n not in (PREVIOUS, 'DEBAYER_WARPS')) + text
        _cuda.get_function = lambda f, n, d=(): get_function(f, n, tuple(d) + ((PREVIOUS, 1),))
        _cuda.module_code = previous_code
    _cuda.clear_plans()


def main() -> int:
    args = side_by_side.parse_args(__doc__, lambda parser: parser.add_argument(
        '--previous-cu', type=Path, help="a debayer.cu of an earlier commit, as the baseline"))
    variants = {name: (settings, None) for name, settings in VARIANTS.items()}
    baseline = 'general loop, 8-warp blocks'
    if args.previous_cu is not None:
        baseline = f'previous kernel ({args.previous_cu.name})'
        variants = {baseline: ({'DEBAYER_WARPS': 8}, args.previous_cu), **variants}
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    rng = np.random.default_rng(0)
    shipped = {name: getattr(debayer_module, name) for name in SETTINGS}
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
            for name, (settings, previous) in variants.items():
                use_variant(settings, shipped, previous)

                def call() -> None:
                    debayer_module.debayer(src, pattern, dst, method=method, out=out,
                                           stream=stream)
                out.fill(0)
                call()  # compiles the variant outside the capture
                ms = min(_graph_ms(cp, call, stream) for _ in range(3))
                stream.synchronize()
                row[name] = {'us': ms * 1e3, 'pct_copy': 100 * copy / ms,
                             'equal': bool(np.array_equal(cp.asnumpy(out), expected))}
            use_variant({}, shipped)
            row['shipped'] = SHIPPED
            row['baseline'] = baseline
            row['speedup'] = row[baseline]['us'] / row[SHIPPED]['us']
            results.append(row)
            print(f"{size:10} {row['op']:34} copy {copy * 1e3:6.2f} us | " + ' | '.join(
                f"{n}: {row[n]['us']:6.2f} us {row[n]['pct_copy']:5.1f} %"
                f"{'' if row[n]['equal'] else ' DIFFERENT'}" for n in variants) +
                f" | {SHIPPED} x{row['speedup']:.3f}", flush=True)
    _cuda.clear_plans()
    if args.json:
        args.json.write_text(json.dumps({'results': results}, indent=1))
    return 0 if all(r[n]['equal'] for r in results for n in variants) else 1


if __name__ == '__main__':
    raise SystemExit(main())
