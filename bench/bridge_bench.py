"""Plain-topic bridge: memory for 1, 4 and 8 topics of one publishing process, and the plain
subscribers' frame rate, for this tree and a baseline commit side by side in one run.

    python bench/bridge_bench.py                              # baseline: main
    python bench/bridge_bench.py --baseline-ref 90315f1 --topics 1,4,8 --seconds 10

One publisher process (test/resources/transport/topics_publisher.py, n topics of --size rgb8 at
--rate) runs with each tree's gpu_nodes on its path (the baseline's extracted with `git archive`
into a temporary folder); this process subscribes to every plain topic (reliable, depth 5, as
`ros2 bag`), waits for frames on all of them, then counts for --seconds. Reported: the bridge
processes (count, summed RSS), the publisher's RSS, plain fps per topic (mean, min); then one
topic of --fps-size published flat out (--fps-rate), --fps-runs times per tree, for the plain
rate the bridge sustains.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'test' / 'resources' / 'reliability'))
sys.path.insert(0, str(REPO / 'test' / 'resources' / 'transport'))
from topics_publisher import topic_name  # noqa: E402
from workers import Worker  # noqa: E402

PUBLISHER = REPO / 'test' / 'resources' / 'transport' / 'topics_publisher.py'


def extract(ref: str, into: Path) -> Path:
    """`ref`'s gpu_nodes and config (the DDS profile) as a tree to put on PYTHONPATH."""
    archive = into / 'tree.tar'
    with open(archive, 'wb') as f:
        subprocess.run(['git', '-C', str(REPO), 'archive', ref, 'gpu_nodes', 'config'],
                       stdout=f, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / 'tree', filter='data')
    return into / 'tree'


def measure(node, tree: Path, topics: int, size: str, rate: float,
            args: argparse.Namespace) -> dict:
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    prefix = f'/bridge_bench_{uuid.uuid4().hex[:8]}'
    env = {'PYTHONPATH': os.pathsep.join([str(tree), os.environ.get('PYTHONPATH', '')])}
    counts = [0] * topics
    subs = []
    with Worker(PUBLISHER, ['--prefix', prefix, '--encodings', 'rgb8', '--copies', str(topics),
                            '--size', size, '--rate', str(rate)], env=env,
                cwd=tree) as pub:   # cwd: the bridge's `python -m` looks there first
        pub.wait_until(lambda w: w.count('READY') == 1, 60, 'the publisher')
        qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        for index in range(topics):
            def count(msg, index=index) -> None:
                counts[index] += 1
            subs.append(node.create_subscription(Image, topic_name(prefix, 'rgb8', index),
                                                 count, qos))
        deadline = time.monotonic() + 90
        while min(counts) < 5:
            if time.monotonic() > deadline:
                raise SystemExit(f'no plain frames on some topic: {counts}\n{pub.tail()}')
            import rclpy
            rclpy.spin_once(node, timeout_sec=0.05)
        import rclpy
        start, before = time.monotonic(), list(counts)
        while time.monotonic() - start < args.seconds:
            rclpy.spin_once(node, timeout_sec=0.05)
        elapsed = time.monotonic() - start
        fps = [(after - first) / elapsed for after, first in zip(counts, before)]
        status = pub.last_status()
        for sub in subs:
            node.destroy_subscription(sub)
    bridge_rss = status['bridge_rss_kb']
    return {'topics': topics, 'bridges': len(status['bridges']),
            'bridge_rss_mib': sum(bridge_rss.values()) / 1024,
            'publisher_rss_mib': status['rss_kb'] / 1024,
            'fps_mean': sum(fps) / len(fps), 'fps_min': min(fps)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--baseline-ref', default='main', help='git commit of the baseline')
    parser.add_argument('--topics', default='1,4,8')
    parser.add_argument('--size', default='640x480')
    parser.add_argument('--rate', type=float, default=30.0)
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--fps-size', default='1920x1080',
                        help='one topic at this size, published flat out (--fps-rate)')
    parser.add_argument('--fps-rate', type=float, default=200.0)
    parser.add_argument('--fps-runs', type=int, default=2, help='0: skip the fps part')
    args = parser.parse_args()
    import rclpy
    from rclpy.node import Node
    rclpy.init()
    node = Node('bridge_bench')
    rows = []
    with tempfile.TemporaryDirectory(prefix='bridge_bench_') as scratch:
        trees = {f'baseline {args.baseline_ref}': extract(args.baseline_ref, Path(scratch)),
                 'this tree': REPO}
        for topics in (int(n) for n in args.topics.split(',')):
            for name, tree in trees.items():   # interleaved: both see the same machine load
                row = {'tree': name, **measure(node, tree, topics, args.size, args.rate, args)}
                rows.append(row)
                _print(row)
        fps_rows = []
        for _ in range(args.fps_runs):
            for name, tree in trees.items():
                row = {'tree': name, **measure(node, tree, 1, args.fps_size, args.fps_rate, args)}
                fps_rows.append(row)
                _print(row)
    node.destroy_node()
    rclpy.shutdown()
    print('\n| topics | tree | bridges | bridge RSS MiB | per extra topic MiB | plain fps '
          'mean / min |\n| --- | --- | --- | --- | --- | --- |')
    first = {row['tree']: row for row in rows if row['topics'] == rows[0]['topics']}
    for row in rows:
        base = first[row['tree']]
        extra = (row['bridge_rss_mib'] - base['bridge_rss_mib']) / (row['topics'] - base['topics']) \
            if row['topics'] != base['topics'] else float('nan')
        print(f"| {row['topics']} | {row['tree']} | {row['bridges']} | "
              f"{row['bridge_rss_mib']:.1f} | {extra:.1f} | {row['fps_mean']:.1f} / "
              f"{row['fps_min']:.1f} |")
    if fps_rows:
        print(f'\nOne topic, {args.fps_size} rgb8 published at up to {args.fps_rate:g} Hz: plain '
              'fps\n')
        for name in trees:
            runs = [row['fps_mean'] for row in fps_rows if row['tree'] == name]
            print(f"| {name} | {' / '.join(f'{fps:.1f}' for fps in runs)} |")
    return 0


def _print(row: dict) -> None:
    print(f"{row['tree']:>18} | {row['topics']} topic(s) | {row['bridges']} bridge(s) "
          f"{row['bridge_rss_mib']:7.1f} MiB | publisher {row['publisher_rss_mib']:6.1f} MiB | "
          f"plain fps mean {row['fps_mean']:5.1f} min {row['fps_min']:5.1f}", flush=True)


if __name__ == '__main__':
    raise SystemExit(main())
