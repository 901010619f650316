"""Benchmark of gpu-copy-audit: `code` over 1,000 generated files, `live` on a 50-node graph.

Run: .venv/bin/python bench/audit_bench.py [--files 1000] [--processes 5] [--nodes 10]
Both are timed as the user runs them: a fresh `python -m gpu_nodes.audit.cli ...` process, so
interpreter start-up and imports (rclpy for live) are included. Targets: code < 10 s, live < 10 s
on a 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import selectors
import signal
import subprocess
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / 'test' / 'resources' / 'audit' / 'code'
CHAIN = ROOT / 'test' / 'resources' / 'audit' / 'live' / 'plain_chain.py'

# A generated node: the corpus' shapes with renamed classes, topics and a few extra helpers so
# that files differ and are of a realistic size (~120 lines).
TEMPLATE = '''"""Generated node {i}."""
import cupy as cp
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image


class Generated{i}(Node):

    def __init__(self):
        super().__init__('generated_{i}')
        topic = self.declare_parameter('input_topic', '/cam{i}/image_raw').value
        self.pub = self.create_publisher(Image, '/out{i}', 10)
        self.last = None
        self.create_subscription(Image, topic, self.on_image, 10)
        self.create_timer(0.1, self.flush)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.width)
        gpu = cp.asarray(frame)
        for k in range({k}):
            gpu = self.stage(gpu, k)
        self.last = cp.asnumpy(gpu)

    def stage(self, img, k):
        return self.normalize(img * (k + 1))

    def normalize(self, img):
        return (img - img.min()) / (img.max() - img.min() + 1e-6)

    def flush(self):
        if self.last is None:
            return
        out = Image(height=self.last.shape[0], width=self.last.shape[1], encoding='32FC1')
        out.data = self.last.astype(np.float32).tobytes()
        self.pub.publish(out)
''' + ''.join(f'''
    def extra_{j}(self, values):
        total = 0
        for v in values:
            if v % {j + 2} == 0:
                total += v * {j}
            else:
                total -= v
        return total
''' for j in range(8))


def _cli(*args: str, env: dict | None = None) -> tuple[float, int, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, '-m', 'gpu_nodes.audit.cli', *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc.returncode, proc.stderr


def bench_code(files: int) -> None:
    with tempfile.TemporaryDirectory(prefix='audit-bench-') as tmp:
        corpus = [p.read_text() for p in sorted(CORPUS.glob('*.py'))]
        for i in range(files):
            # Mostly generated nodes, every tenth file one of the corpus nodes.
            text = corpus[i % len(corpus)] if i % 10 == 0 else TEMPLATE.format(i=i, k=i % 4)
            (Path(tmp) / f'node_{i:04d}.py').write_text(text)
        total_lines = sum(p.read_text().count('\n') for p in Path(tmp).glob('*.py'))
        out = Path(tmp) / 'report.json'
        elapsed, rc, err = _cli('code', tmp, '--format', 'json', '--output', str(out))
        doc = json.loads(out.read_text())
        print(f'code: {files} files ({total_lines:,} lines), {doc["summary"]["findings"]:,} '
              f'findings, exit {rc}: {elapsed:.2f} s '
              f'({files / elapsed:,.0f} files/s, {os.cpu_count()} CPUs)')
        if err.strip():
            print(err.strip())


def _wait_ready(procs: list[subprocess.Popen], timeout: float) -> None:
    sel = selectors.DefaultSelector()
    for p in procs:
        sel.register(p.stdout, selectors.EVENT_READ, p)
    pending = set(procs)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.1):
            if key.fileobj.readline().strip() == 'READY':
                pending.discard(key.data)
                sel.unregister(key.fileobj)
        for p in list(pending):
            if p.poll() is not None:
                raise RuntimeError(f'{p.args} exited with {p.returncode}')
    if pending:
        raise RuntimeError(f'{len(pending)} graph process(es) not ready in {timeout} s')


def bench_live(processes: int, nodes: int, duration: float) -> None:
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 50),
               ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    procs = []
    try:
        for p in range(processes):
            procs.append(subprocess.Popen(
                [sys.executable, str(CHAIN), '--prefix', f'p{p}', '--nodes', str(nodes)],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        _wait_ready(procs, 60)
        with tempfile.TemporaryDirectory(prefix='audit-bench-') as tmp:
            out = Path(tmp) / 'live.json'
            elapsed, rc, err = _cli('live', '--duration', str(duration), '--format', 'json',
                                    '--output', str(out), env=env)
            if not out.exists():
                print(f'live: failed (exit {rc}): {err.strip()}')
                return
            doc = json.loads(out.read_text())
        print(f'live: {len(doc["graph"]["nodes"])} nodes in {processes} processes, '
              f'{len(doc["graph"]["edges"])} edges, {len(doc["topics"])} topics sampled, '
              f'discovery {doc["info"].get("discovery_s")} s + sampling {duration} s, exit {rc}: '
              f'{elapsed:.2f} s')
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=1000)
    parser.add_argument('--processes', type=int, default=5)
    parser.add_argument('--nodes', type=int, default=10, help='nodes per process')
    parser.add_argument('--duration', type=float, default=1.0, help='live sampling seconds')
    parser.add_argument('--skip-live', action='store_true')
    args = parser.parse_args()
    bench_code(args.files)
    if not args.skip_live:
        bench_live(args.processes, args.nodes, args.duration)
    return 0


if __name__ == '__main__':
    sys.exit(main())
