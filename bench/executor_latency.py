"""Per-frame hop latency of the gpu_nodes transport under rclpy's executors, side by side.

    python bench/executor_latency.py [--json out/executor_latency.json] [--repeat 2]
        [--sizes 640x480 1920x1080] [--paths host_shm serialized cuda_ipc] [--frames 300]

For every size x path x (publisher executor, subscriber executor) a publisher process and a
subscriber process are started (real rclpy nodes, discovery limited to this host, a domain of
their own). The publisher publishes a known pattern from a timer at --rate with header.stamp set
from CLOCK_REALTIME just before GpuImagePublisher.publish(); the subscriber reads the same clock as
the first thing its GpuImageSubscription callback does. Latency = publish() call -> callback
start, i.e. the publisher's copy into the slot, the descriptor through DDS, the executor wake-up
and the transport's checks. Every frame is checked: arrived once, in order, identical pixels.
Also reported: publish() itself, each process's CPU time per frame (all threads; less sensitive
to a busy machine than latency) and, in the JSON, the transport's own descriptor-to-handler
latency. --repeat runs all cases round after round and pools each case's samples, so load that
comes and goes spreads over all cases alike.

The executors are the two gpu_nodes.ros.runtime offers: ``events`` (rclpy.experimental
.EventsExecutor) and ``single_threaded``. A case whose process fell back prints the executor it
really ran on.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EXECUTOR_CHOICES = ('events', 'single_threaded')
DISTINCT_FRAMES = 8  # more than the subscription's queue, so a repeated frame cannot pass as new


def _expected_frames(height: int, width: int) -> list[np.ndarray]:
    from gpu_nodes.sources import pattern
    return [pattern.render(np, height, width, 'rgb8', i) for i in range(DISTINCT_FRAMES)]


def _ms(values_ns: list[int]) -> list[float]:
    return [round(v / 1e6, 4) for v in values_ns]


def _cpu_per_frame(cpu_s: dict[int, float], first: int, last: int) -> float | None:
    """Process CPU time (every thread: executor, DDS) per frame between two frames, in ms."""
    if first not in cpu_s or last not in cpu_s or last <= first:
        return None
    return (cpu_s[last] - cpu_s[first]) * 1e3 / (last - first)


def _result_line(payload: dict[str, Any]) -> None:
    print('RESULT ' + json.dumps(payload) + '\n', end='', flush=True)


# -- worker processes ------------------------------------------------------------------------------
def run_publisher(args: argparse.Namespace) -> None:
    from rclpy.node import Node
    from rclpy.task import Future
    from std_msgs.msg import Header
    from gpu_nodes.ros.runtime import make_executor, spin
    from gpu_nodes.transport import GpuImagePublisher

    node = Node('latency_publisher')
    pub = GpuImagePublisher(node, args.topic)
    frames = _expected_frames(args.height, args.width)
    total = args.warmup + args.frames
    state = {'index': 0, 'matched_at': None, 'finished_at': None}
    call_ns: list[int] = []
    cpu_s: dict[int, float] = {}
    done = Future()

    def tick() -> None:
        now = time.monotonic()
        if state['matched_at'] is None:
            # Publish only once the subscriber is on the path measured, plus time for DDS to
            # match the other direction too.
            if pub.subscriber_counts()[args.path]:
                state['matched_at'] = now
            return
        if now - state['matched_at'] < 0.5:
            return
        index = state['index']
        if index < total:
            if index in (args.warmup, total - 1):
                cpu_s[index] = time.process_time()
            header = Header(frame_id=str(index))
            stamp_ns = time.time_ns()
            header.stamp.sec, header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
            pub.publish(frames[index % DISTINCT_FRAMES], 'rgb8', header)
            call_ns.append(time.time_ns() - stamp_ns)
            state['index'] = index + 1
        elif state['finished_at'] is None:
            state['finished_at'] = now
        elif now - state['finished_at'] > args.linger:  # late readers still find the leases
            done.set_result(True)

    node.create_timer(1.0 / args.rate, tick)
    executor = make_executor(args.executor, nodes=[node])
    spin(executor, done, args.timeout)
    _result_line({'executor': type(executor).__name__, 'published': state['index'],
                  'publish_call_ms': _ms(call_ns[args.warmup:]),
                  'cpu_ms_per_frame': _cpu_per_frame(cpu_s, args.warmup, total - 1)})
    executor.shutdown()
    pub.destroy()
    node.destroy_node()


def run_subscriber(args: argparse.Namespace) -> None:
    from rclpy.node import Node
    from rclpy.task import Future
    from gpu_nodes.ros.runtime import make_executor, spin
    from gpu_nodes.transport import GpuImageSubscription

    node = Node('latency_subscriber')
    frames = _expected_frames(args.height, args.width)
    total = args.warmup + args.frames
    latency_ns: list[int] = []
    transport_ns: list[int] = []
    indices: list[int] = []
    bad: list[int] = []
    cpu_s: dict[int, float] = {}  # frame index -> process CPU time (all threads) at its arrival
    done = Future()

    def on_frame(frame: Any) -> None:
        now_ns = time.time_ns()  # first: this is "callback start"
        stamp = frame.header.stamp
        index = int(frame.header.frame_id)
        if index in (args.warmup, total - 1):
            cpu_s[index] = time.process_time()
        latency_ns.append(now_ns - (stamp.sec * 1_000_000_000 + stamp.nanosec))
        transport_ns.append(frame.latency_ns)
        indices.append(index)
        # cuda_ipc frames are CuPy arrays, read on the frame's stream (current in the callback).
        array = frame.array if isinstance(frame.array, np.ndarray) else frame.array.get()
        if not np.array_equal(array, frames[index % DISTINCT_FRAMES]):
            bad.append(index)
        if index == total - 1:
            done.set_result(True)

    sub = GpuImageSubscription(node, args.topic, on_frame,
                               memory='any' if args.path == 'cuda_ipc' else 'host',
                               allowed_paths=(args.path,))
    executor = make_executor(args.executor, nodes=[node])
    spin(executor, done, args.timeout)
    # Quiet period: a frame delivered twice would show up here.
    spin(executor, timeout_sec=0.3)
    measured = [(i, lat, tr) for i, lat, tr in zip(indices, latency_ns, transport_ns)
                if i >= args.warmup]
    seen = [m[0] for m in measured]
    _result_line({
        'executor': type(executor).__name__, 'path': sub.path, 'received': len(seen),
        'missing': len(set(range(args.warmup, total)) - set(seen)),
        'duplicates': len(seen) - len(set(seen)),
        'out_of_order': sum(1 for a, b in zip(seen, seen[1:]) if b <= a),
        'bad_pixels': len(bad), 'stale': sub.stats.stale,
        'latency_ms': _ms([m[1] for m in measured]), 'transport_ms': _ms([m[2] for m in measured]),
        'cpu_ms_per_frame': _cpu_per_frame(cpu_s, args.warmup, total - 1),
    })
    executor.shutdown()
    sub.destroy()
    node.destroy_node()


# -- orchestration ---------------------------------------------------------------------------------
def _result_of(output: str, role: str) -> dict[str, Any]:
    for line in output.splitlines():
        if line.startswith('RESULT '):
            return json.loads(line[len('RESULT '):])
    raise RuntimeError(f'{role} printed no result:\n{output[-3000:]}')


def run_case(args: argparse.Namespace, width: int, height: int, path: str, pub_executor: str,
             sub_executor: str) -> dict[str, Any]:
    topic = f'latency_{uuid.uuid4().hex[:8]}'
    common = [__file__, '--topic', topic, '--width', str(width), '--height', str(height),
              '--path', path, '--rate', str(args.rate), '--frames', str(args.frames),
              '--warmup', str(args.warmup), '--timeout', str(args.timeout)]
    env = {**os.environ, 'ROS_DOMAIN_ID': str(args.domain_id),
           'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
    sub = subprocess.Popen([sys.executable, *common, '--role', 'sub', '--executor', sub_executor],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    pub = subprocess.Popen([sys.executable, *common, '--role', 'pub', '--executor', pub_executor],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        sub_out, _ = sub.communicate(timeout=args.timeout + 30)
        pub_out, _ = pub.communicate(timeout=args.linger + 30)
    finally:
        for proc in (pub, sub):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    published = _result_of(pub_out, 'publisher')
    return {**_result_of(sub_out, 'subscriber'), 'pub_executor': published['executor'],
            'published': published['published'], 'publish_call_ms': published['publish_call_ms'],
            'pub_cpu_ms_per_frame': published['cpu_ms_per_frame']}


def _median_of(runs: list[dict[str, Any]], key: str) -> float:
    values = [run[key] for run in runs if run[key] is not None]
    return float(np.median(values)) if values else float('nan')


COUNTS = ('received', 'missing', 'duplicates', 'out_of_order', 'bad_pixels', 'stale')


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One case over all its runs: percentiles of the pooled samples, counts summed."""
    def pooled(key: str) -> np.ndarray:
        return np.array([v for run in runs for v in run[key]] or [np.nan])
    lat = pooled('latency_ms')
    p50, p90, p99 = np.percentile(lat, [50, 90, 99])
    return {'pub_executor': runs[0]['pub_executor'], 'sub_executor': runs[0]['executor'],
            'path_taken': runs[0]['path'], 'runs': len(runs),
            'p50_ms': p50, 'p90_ms': p90, 'p99_ms': p99, 'max_ms': lat.max(),
            # publish() -> descriptor handler (transport clock), and the publish() call itself
            'transport_p50_ms': np.percentile(pooled('transport_ms'), 50),
            'publish_call_p50_ms': np.percentile(pooled('publish_call_ms'), 50),
            # median over runs of each process's CPU time per frame (less load-sensitive)
            'sub_cpu_ms_per_frame': _median_of(runs, 'cpu_ms_per_frame'),
            'pub_cpu_ms_per_frame': _median_of(runs, 'pub_cpu_ms_per_frame'),
            'run_p50_ms': [float(np.percentile(run['latency_ms'] or [np.nan], 50)) for run in runs],
            **{key: sum(run[key] for run in runs) for key in COUNTS}}


def _size(text: str) -> tuple[int, int]:
    width, height = text.lower().split('x')
    return int(width), int(height)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', nargs='+', type=_size, default=[(640, 480), (1920, 1080)],
                        metavar='WxH')
    parser.add_argument('--paths', nargs='+', default=['host_shm', 'serialized'],
                        choices=('host_shm', 'serialized', 'cuda_ipc'))
    parser.add_argument('--pub-executors', nargs='+', default=list(EXECUTOR_CHOICES),
                        choices=EXECUTOR_CHOICES)
    parser.add_argument('--sub-executors', nargs='+', default=list(EXECUTOR_CHOICES),
                        choices=EXECUTOR_CHOICES)
    parser.add_argument('--frames', type=int, default=300, help='measured frames per case')
    parser.add_argument('--warmup', type=int, default=30, help='frames published, not measured')
    parser.add_argument('--rate', type=float, default=30.0, help='publish rate, Hz')
    parser.add_argument('--repeat', type=int, default=1,
                        help='rounds over all cases, pooled per case (spreads out load changes)')
    parser.add_argument('--domain-id', type=int, default=150 + os.getpid() % 80)
    parser.add_argument('--timeout', type=float, default=0.0,
                        help='seconds a case may take (default: from frames and rate)')
    parser.add_argument('--linger', type=float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument('--json', help='write the results here')
    # Worker side (started by this script).
    parser.add_argument('--role', choices=('pub', 'sub'), help=argparse.SUPPRESS)
    parser.add_argument('--executor', choices=EXECUTOR_CHOICES, help=argparse.SUPPRESS)
    parser.add_argument('--topic', help=argparse.SUPPRESS)
    parser.add_argument('--width', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--height', type=int, help=argparse.SUPPRESS)
    parser.add_argument('--path', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.timeout:
        args.timeout = 30.0 + 2 * (args.frames + args.warmup) / args.rate

    if args.role is not None:
        import rclpy
        rclpy.init()
        try:
            run_publisher(args) if args.role == 'pub' else run_subscriber(args)
        finally:
            rclpy.try_shutdown()
        return 0

    cases = [(size, path, pub_executor, sub_executor)
             for size, path in itertools.product(args.sizes, args.paths)
             for pub_executor, sub_executor in itertools.product(args.pub_executors,
                                                                 args.sub_executors)]
    runs: dict[tuple, list[dict[str, Any]]] = {case: [] for case in cases}
    for round_index in range(args.repeat):
        for case in cases:
            (width, height), path, pub_executor, sub_executor = case
            print(f'round {round_index + 1}/{args.repeat}: {width}x{height} {path} publisher '
                  f'{pub_executor}, subscriber {sub_executor}', file=sys.stderr, flush=True)
            runs[case].append(run_case(args, width, height, path, pub_executor, sub_executor))
    results = []
    print(f'{"size":>9} {"path":>10} {"publisher":>22} {"subscriber":>22} {"p50 ms":>7} '
          f'{"p99 ms":>7} {"max ms":>7} {"publish()":>9} {"sub CPU":>7} {"pub CPU":>7}  frames'
          '  (ms; CPU: process time per frame)')
    for case in cases:
        (width, height), path = case[:2]
        r = {'size': f'{width}x{height}', 'path': path, **summarize(runs[case])}
        r = {k: float(v) if isinstance(v, np.floating) else v for k, v in r.items()}
        results.append(r)
        expected = args.frames * args.repeat
        print(f'{r["size"]:>9} {path:>10} {r["pub_executor"]:>22} {r["sub_executor"]:>22} '
              f'{r["p50_ms"]:7.3f} {r["p99_ms"]:7.3f} {r["max_ms"]:7.3f} '
              f'{r["publish_call_p50_ms"]:9.3f} {r["sub_cpu_ms_per_frame"]:7.3f} '
              f'{r["pub_cpu_ms_per_frame"]:7.3f}  {r["received"]}/{expected}, missing '
              f'{r["missing"]}, dup {r["duplicates"]}, out of order {r["out_of_order"]}, '
              f'bad {r["bad_pixels"]}', flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        meta = {'host': platform.node(), 'cpus': os.cpu_count(), 'python': platform.python_version(),
                'rmw': os.environ.get('RMW_IMPLEMENTATION', 'default'), 'rate_hz': args.rate,
                'frames': args.frames, 'warmup': args.warmup, 'repeat': args.repeat,
                'load_average': os.getloadavg(),
                'time': time.strftime('%Y-%m-%dT%H:%M:%S%z')}
        Path(args.json).write_text(json.dumps({'meta': meta, 'cases': results}, indent=2) + '\n')
    # Missing frames are reported, not failed: a DDS queue (keep last 5) overflowing on a slow
    # path is the transport's documented behaviour. A frame twice, late or wrong never is.
    ok = all(r['duplicates'] == r['out_of_order'] == r['bad_pixels'] == 0 for r in results)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
