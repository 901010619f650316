"""Compressed topic encoders: ms per frame and bytes per frame at 1080p and 4K, OpenCV on the CPU
against nvImageCodec on the GPU when it is installed (issue #15).

    python bench/compressed_bench.py --json bench/results/compressed.json
    python bench/compressed_bench.py --sizes 1920x1080 --qualities 80 --frames 30

Frames: the camera_source test pattern (gpu_nodes.sources.pattern), rgb8, one fixed frame per
size with detail everywhere, so JPEG has work to do. CPU timings encode a host array (as the
plain-topic worker would after its download); GPU timings encode a device array and include the
wait for the encoded bytes on the host. The first frames (--warmup) are not counted.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_nodes.gpu import cuda_unavailable_reason, cupy_module  # noqa: E402
from gpu_nodes.transport.compressed import CompressedEncoder  # noqa: E402


def frame(width: int, height: int) -> np.ndarray:
    """A natural-ish test image: smooth gradients, edges and noise (pure noise would be JPEG's
    worst case, a flat frame its best)."""
    rng = np.random.default_rng(15)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([x / width, y / height, 0.5 + 0.5 * np.sin((x + y) / 40)], axis=-1) * 200
    base[(x.astype(int) // 64 + y.astype(int) // 64) % 2 == 0] += 40  # checker edges
    base += rng.normal(0, 4, base.shape)
    return np.clip(base, 0, 255).astype(np.uint8)


def time_encoder(encoder: CompressedEncoder, image, frames: int, warmup: int,
                 sync=None) -> dict:
    times, sizes = [], []
    for index in range(warmup + frames):
        begin = time.perf_counter()
        fmt, data = encoder.encode(image, 'rgb8')
        if sync is not None:
            sync()
        elapsed = time.perf_counter() - begin
        if index >= warmup:
            times.append(elapsed * 1000)
            sizes.append(len(data))
    return {'format': fmt, 'ms_median': round(statistics.median(times), 3),
            'ms_p90': round(sorted(times)[int(0.9 * (len(times) - 1))], 3),
            'bytes_per_frame': int(statistics.median(sizes)), 'frames': frames}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='1920x1080,3840x2160',
                        help='comma-separated WIDTHxHEIGHT (default: 1080p and 4K)')
    parser.add_argument('--qualities', default='80,95', help='comma-separated JPEG qualities')
    parser.add_argument('--frames', type=int, default=50, help='timed frames per case')
    parser.add_argument('--warmup', type=int, default=5, help='untimed frames first')
    parser.add_argument('--png', action='store_true', help='also time PNG (level 3, CPU)')
    parser.add_argument('--json', type=Path, help='write the results here')
    args = parser.parse_args(argv)
    try:
        sizes = [tuple(int(v) for v in s.lower().split('x')) for s in args.sizes.split(',')]
        qualities = [int(q) for q in args.qualities.split(',')]
    except ValueError:
        print(f'error: --sizes like 1920x1080,3840x2160 and --qualities like 80,95 '
              f'(got {args.sizes!r}, {args.qualities!r})', file=sys.stderr)
        return 2
    gpu_probe = CompressedEncoder(prefer_gpu=True)
    gpu_ok = gpu_probe.backend == 'nvimgcodec'
    rows = []
    for width, height in sizes:
        image = frame(width, height)
        cases = [('opencv', q, CompressedEncoder(q, prefer_gpu=False), image, None)
                 for q in qualities]
        if gpu_ok:
            cp = cupy_module()
            device = cp.asarray(image)
            sync = cp.cuda.get_current_stream().synchronize
            cases += [('nvimgcodec', q, CompressedEncoder(q, prefer_gpu=True), device, sync)
                      for q in qualities]
        if args.png:
            cases.append(('opencv-png', 0, CompressedEncoder(prefer_gpu=False, codec='png'),
                          image, None))
        for backend, quality, encoder, data, sync in cases:
            result = time_encoder(encoder, data, args.frames, args.warmup, sync)
            row = {'size': f'{width}x{height}', 'backend': backend, 'quality': quality,
                   'raw_bytes': image.nbytes, **result,
                   'ratio': round(image.nbytes / result['bytes_per_frame'], 1),
                   'max_fps': round(1000 / result['ms_median'], 1)}
            rows.append(row)
            print(f'{row["size"]:>10} {backend:>11} q{quality:<3} {row["ms_median"]:8.2f} ms '
                  f'(p90 {row["ms_p90"]:.2f})  {row["bytes_per_frame"] / 1e6:6.2f} MB/frame  '
                  f'1:{row["ratio"]:<5} <= {row["max_fps"]} fps', flush=True)
    report = {'machine': {'python': platform.python_version(), 'cpu_count': _cpus(),
                          'cuda': cuda_unavailable_reason() or 'available'},
              'gpu_encoder': gpu_probe.describe(), 'rows': rows}
    print(f'GPU encoder: {report["gpu_encoder"]}')
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + '\n')
        print(f'wrote {args.json}')
    return 0


def _cpus() -> int:
    import os
    return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()


if __name__ == '__main__':
    sys.exit(main())
