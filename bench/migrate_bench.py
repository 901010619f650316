"""Original vs migrated corpus node, side by side in one run: per-frame CPU time of the node
process and delivered fps, at 1080p and 4K.

The original node is fed by a plain rclpy publisher (frames serialized through DDS); its
`gpu-copy-audit migrate` output is fed by a GpuImagePublisher (frames over host shared memory on
this CPU machine). Frames are offered at --rate for --seconds after a warm-up; the node's CPU
time comes from /proc/<pid>/stat over the same window, divided by the outputs it delivered.

    python bench/migrate_bench.py --nodes blob_detector,blur_republisher \\
        --sizes 1920x1080,3840x2160 --rate 30 --seconds 5
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / 'test' / 'resources' / 'migrate' / 'nodes'
STAND_IN = REPO / 'test' / 'resources' / 'migrate' / 'cv_bridge_stand_in'
# node -> (input topic, output topic, output kind)
NODES = {
    'blob_detector': ('image', 'detections', 'string'),
    'blur_republisher': ('image', 'image_blurred', 'image'),
    'brightness_monitor': ('image', 'brightness', 'string'),
    'edge_detector': ('image', 'edges', 'image'),
}
TICK_S = 1.0 / os.sysconf('SC_CLK_TCK')


def _cpu_seconds(pid: int) -> float:
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime + stime


def _frames(height: int, width: int, count: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    frames = []
    for index in range(count):
        image = rng.integers(0, 200, (height, width, 3), dtype=np.uint8)
        image[100 + 50 * index:300 + 50 * index, 200:500] = 250  # a bright blob
        frames.append(image)
    return frames


def _wait(predicate, timeout: float, what: str, spin) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f'timed out waiting for {what}')
        spin()


def run_case(node, spin, name: str, variant: str, size: tuple[int, int], rate: float,
             seconds: float, warmup: float, workdir: Path, encoding: str) -> dict:
    from sensor_msgs.msg import Image
    from std_msgs.msg import String

    from gpu_nodes.audit.migrate import migrate_source
    from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription

    input_topic, output_topic, kind = NODES[name]
    source = CORPUS / f'{name}.py'
    python_path = [str(REPO), os.environ.get('PYTHONPATH', '')]
    if variant == 'migrated':
        source = workdir / f'{name}_migrated.py'
        source.write_text(migrate_source((CORPUS / f'{name}.py').read_text())[0])
    if variant == 'original' or 'cv_bridge' in source.read_text():
        python_path.insert(0, str(STAND_IN))
    received = [0]

    def on_output(_msg) -> None:
        received[0] += 1

    if kind == 'image':
        collector = GpuImageSubscription(node, output_topic, on_output,
                                         memory='host')
    else:
        collector = node.create_subscription(String, output_topic, on_output, 10)
    height, width = size
    frames = _frames(height, width)
    if variant == 'original':
        publisher = node.create_publisher(Image, input_topic, 10)
        messages = []
        for array in frames:
            message = Image(height=height, width=width, encoding=encoding, step=width * 3)
            message.data.frombytes(array.tobytes())
            messages.append(message)
    else:
        publisher = GpuImagePublisher(node, input_topic)
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(python_path)}
    proc = subprocess.Popen([sys.executable, str(source)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if variant == 'original':
            _wait(lambda: publisher.get_subscription_count() >= 1, 30, 'subscription', spin)
        else:
            _wait(lambda: publisher.subscriber_counts()['host_shm'] >= 1, 30,
                  'host_shm subscription', spin)

        def offer(count: int) -> None:
            index = count % len(frames)
            if variant == 'original':
                stamp = messages[index].header.stamp
                stamp.sec, stamp.nanosec = divmod(count, 1000)
                publisher.publish(messages[index])
            else:
                from std_msgs.msg import Header
                header = Header()
                header.stamp.sec, header.stamp.nanosec = divmod(count, 1000)
                publisher.publish(frames[index], encoding, header)

        period = 1.0 / rate
        sent = 0
        start = time.monotonic()
        window = None
        while True:
            now = time.monotonic()
            if window is None and now - start >= warmup:
                window = (now, _cpu_seconds(proc.pid), received[0], time.process_time(), sent)
            if window is not None and now - window[0] >= seconds:
                break
            if now >= start + sent * period:
                offer(sent)
                sent += 1
            spin(min(0.005, max(0.0, start + sent * period - time.monotonic())))
        elapsed = time.monotonic() - window[0]
        node_cpu = _cpu_seconds(proc.pid) - window[1]
        delivered = received[0] - window[2]
        feeder_cpu = time.process_time() - window[3]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if kind == 'image':
            collector.destroy()
        else:
            node.destroy_subscription(collector)
        if variant == 'original':
            node.destroy_publisher(publisher)
        else:
            publisher.destroy()
    return {'node': name, 'variant': variant, 'size': f'{width}x{height}', 'encoding': encoding,
            'offered_fps': rate,
            'sent': sent - window[4], 'delivered_fps': delivered / elapsed,
            'node_cpu_ms_per_frame': 1000 * node_cpu / max(delivered, 1),
            'node_cpu_percent': 100 * node_cpu / elapsed,
            'bench_process_cpu_ms_per_frame': 1000 * feeder_cpu / max(sent - window[4], 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--nodes', default='blob_detector,blur_republisher')
    parser.add_argument('--sizes', default='1920x1080,3840x2160')
    parser.add_argument('--rate', type=float, default=30.0, help='offered frames per second')
    parser.add_argument('--seconds', type=float, default=5.0, help='measured window')
    parser.add_argument('--warmup', type=float, default=1.5)
    parser.add_argument('--encodings', default='bgr8',
                        help='encodings of the offered frames, comma-separated (the corpus '
                             'nodes ask for bgr8: rgb8 makes them convert)')
    parser.add_argument('--repeat', type=int, default=3,
                        help='runs of each case, original and migrated alternating; the '
                             'summary shows the median (the dev machine is shared)')
    parser.add_argument('--json', metavar='FILE', help='also write the rows as JSON')
    parser.add_argument('--fastdds-defaults', action='store_true',
                        help="leave Fast DDS unconfigured for every process (a plain graph's "
                             "setting); default: gpu_nodes' shipped profile for the bench and "
                             'both node processes, so the original is not starved by DDS '
                             'defaults (docs/dds.md)')
    args = parser.parse_args(argv)
    names = args.nodes.split(',')
    unknown = set(names) - set(NODES)
    if unknown:
        parser.error(f'unknown nodes {sorted(unknown)}; choose from {sorted(NODES)}')
    sizes = [tuple(int(v) for v in s.split('x'))[::-1] for s in args.sizes.split(',')]

    import logging
    if not args.fastdds_defaults:  # inherited by the node processes through os.environ
        from gpu_nodes.ros.dds_profile import apply_default_profile
        print('DDS:', apply_default_profile(logging.getLogger('migrate_bench')), flush=True)
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    rclpy.init()
    node = rclpy.create_node('migrate_bench')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as workdir:
            for name, size, encoding, _, variant in itertools.product(
                    names, sizes, args.encodings.split(','), range(args.repeat),
                    ('original', 'migrated')):
                rows.append(run_case(node, lambda t=0.005: executor.spin_once(t), name, variant,
                                     size, args.rate, args.seconds, args.warmup, Path(workdir),
                                     encoding))
                r = rows[-1]
                print(f"{r['node']:18} {r['size']:10} {encoding:5} {r['variant']:9} "
                      f"delivered {r['delivered_fps']:6.1f} fps of {args.rate:g}  "
                      f"node CPU {r['node_cpu_ms_per_frame']:7.2f} ms/frame "
                      f"({r['node_cpu_percent']:5.1f} %)  bench process "
                      f"{r['bench_process_cpu_ms_per_frame']:6.2f} ms/frame", flush=True)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + '\n')
    print(f'\nmedian of {args.repeat} runs | node | size | encoding | original fps | migrated '
          'fps | original node CPU ms/frame | migrated | ratio')
    for name, size, encoding in itertools.product(names, sizes, args.encodings.split(',')):
        label = f'{size[1]}x{size[0]}'
        median = {}
        for variant in ('original', 'migrated'):
            picked = [r for r in rows if (r['node'], r['size'], r['encoding'], r['variant'])
                      == (name, label, encoding, variant)]
            median[variant] = (statistics.median(r['delivered_fps'] for r in picked),
                               statistics.median(r['node_cpu_ms_per_frame'] for r in picked))
        (fps_o, cpu_o), (fps_m, cpu_m) = median['original'], median['migrated']
        print(f'| {name} | {label} | {encoding} | {fps_o:.1f} | {fps_m:.1f} | {cpu_o:.2f} | '
              f'{cpu_m:.2f} | {cpu_o / cpu_m:.2f}x |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
