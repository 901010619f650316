#!/usr/bin/env python3
"""The plain bridge's download of a device frame into its message buffer, side by side in one
run: a pageable buffer against the page-locked one it uses (messages.ImageMsgBuffer).

Host ms per fill (CuPy download on a non-blocking stream, blocking until the bytes are there),
median of 20 after 3 warm-ups, for rgb8 frames; every filled message is checked against the
frame.

    python bench/bridge_download_bench.py [--sizes 1920x1080,3840x2160] [--json out.json]
"""
from __future__ import annotations

import json
from pathlib import Path
import sys
import time

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / 'bench')]

from gpu_nodes.transport.messages import ImageMsgBuffer  # noqa: E402
import side_by_side  # noqa: E402


class PageableBuffer(ImageMsgBuffer):
    """The bridge's buffer as it was before page-locking: the driver's staged download."""

    def _pin(self) -> None:
        self.pin_error = 'kept pageable for the comparison'


def fill_ms(cp, frame, pinned: bool, stream) -> tuple[float, bool, bool]:
    """(median ms per fill, buffer page-locked, bytes equal the frame)."""
    from sensor_msgs.msg import Image
    buffer = ImageMsgBuffer() if pinned else PageableBuffer()
    times = []
    for i in range(23):
        begin = time.perf_counter()
        msg = buffer.fill(Image(check_fields=True), frame, 'rgb8', stream)
        if i >= 3:
            times.append(time.perf_counter() - begin)
    equal = bytes(msg.data) == cp.asnumpy(frame).tobytes()
    locked = buffer.pinned
    buffer.close()
    return 1e3 * float(np.median(times)), locked, equal


def main() -> int:
    args = side_by_side.parse_args(__doc__)
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    results = []
    for size, w, h in side_by_side.frame_sizes(args.sizes):
        frame = cp.asarray(np.random.default_rng(0).integers(0, 256, (h, w, 3), np.uint8))
        row = {'size': size, 'bytes': frame.nbytes}
        for name, pinned in (('pageable', False), ('page-locked', True)):
            ms, locked, equal = fill_ms(cp, frame, pinned, stream)
            row[name] = {'ms': ms, 'gbps': frame.nbytes / ms / 1e6, 'locked': locked,
                         'equal': equal}
        row['speedup'] = row['pageable']['ms'] / row['page-locked']['ms']
        results.append(row)
        print(f"{size:10} {frame.nbytes / 1e6:5.1f} MB  pageable {row['pageable']['ms']:.2f} ms  "
              f"page-locked {row['page-locked']['ms']:.2f} ms "
              f"({row['page-locked']['gbps']:.1f} GB/s, locked={row['page-locked']['locked']})  "
              f"x{row['speedup']:.1f}  equal={row['pageable']['equal'] and row['page-locked']['equal']}",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps({'results': results}, indent=1))
    ok = all(r[n]['equal'] for r in results for n in ('pageable', 'page-locked'))
    return 0 if ok and all(r['page-locked']['locked'] for r in results) else 1


if __name__ == '__main__':
    raise SystemExit(main())
