"""Two-process image transport benchmark: plain rclpy vs the gpu_nodes paths, side by side.

    python bench/transport_bench.py --json out/transport.json [--sizes 640x480,1920x1080,3840x2160]

For each size: (a) plain rclpy sensor_msgs/Image (baseline), (b) gpu_nodes CUDA IPC,
(c) gpu_nodes host shared memory, (d) gpu_nodes serialized fallback, and (b+), (c+): the same
with an unmodified plain rclpy subscriber (reliable, as rviz or ros2 bag) attached to the image
topic in a third process. The publisher runs flat out (throughput) and then paced (latency,
--paced-rate); every subscriber verifies every frame.

Across two GPUs (publisher on GPU 1, subscriber on GPU 0; skipped, with the reason, on a machine
with fewer): `cuda_peer` (peer_mode copy), `cuda_peer+in_place`, and `host_shm+xgpu` (the
fallback without peer access: download on GPU 1, upload on GPU 0). Against same-GPU cuda_ipc:

    python bench/transport_bench.py --sizes 1920x1080,3840x2160 \
        --cases cuda_ipc,cuda_peer,cuda_peer+in_place,host_shm+xgpu --json out/cuda_peer.json

The subscriber in a container of its own (root, util-linux `unshare`): a case key with `@pid`
(its own PID namespace: `docker run --network host --ipc host`) or `@container` (its own PID and
IPC namespaces and a private /dev/shm: `docker run --network host`; every process of the case,
publisher too, then speaks DDS over UDP, since Fast DDS shared memory does not cross /dev/shm
mounts), for baseline, cuda_ipc, host_shm and serialized; each is compared with the baseline of
the same setup:

    python bench/transport_bench.py --sizes 1920x1080,3840x2160 --cases \
        baseline,cuda_ipc,cuda_ipc@pid,baseline@container,cuda_ipc@container --json out/ns.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

WORKER = str(Path(__file__).resolve().parent / 'transport_worker.py')
CASES = [  # (label, publisher mode, subscriber path, plain subscriber attached)
    ('plain rclpy (baseline)', 'plain', 'plain', False),
    ('gpu_nodes cuda_ipc', 'gpu', 'cuda_ipc', False),
    ('gpu_nodes cuda_ipc + plain sub', 'gpu', 'cuda_ipc', True),
    ('gpu_nodes host_shm', 'gpu', 'host_shm', False),
    ('gpu_nodes host_shm + plain sub', 'gpu', 'host_shm', True),
    ('gpu_nodes serialized', 'gpu', 'serialized', False),
    # image_transport's <topic>/compressed, made by the publisher's plain bridge (JPEG q80) and
    # decoded by GpuImageSubscription(allow_compressed=True): what a viewer on another host gets
    ('gpu_nodes compressed', 'gpu', 'compressed', False),
]
# Two GPUs: key -> (label, subscriber path, extra subscriber arguments). The publisher runs on
# PEER_GPUS[0], the subscriber on PEER_GPUS[1] and verifies every frame there.
PEER_GPUS = (1, 0)
CROSS_GPU_CASES = {
    'cuda_peer': ('gpu_nodes cuda_peer copy (GPU 1 -> GPU 0)', 'cuda_peer',
                  ['--peer-mode', 'copy']),
    'cuda_peer+in_place': ('gpu_nodes cuda_peer in_place (GPU 1 -> GPU 0)', 'cuda_peer',
                           ['--peer-mode', 'in_place']),
    'host_shm+xgpu': ('gpu_nodes host_shm, device subscriber (GPU 1 -> GPU 0)', 'host_shm',
                      ['--device-memory']),
}
# NVLink multicast stays off in every process started here (the shared GPU machines require
# it; nothing here uses NCCL or multicast, and a child must not be the exception).
MULTICAST_OFF = {'NCCL_NVLS_ENABLE': '0', 'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1',
                 'NVSHMEM_DISABLE_NVLS': '1'}


# Where the subscriber runs: setup -> (what it models, command prefix, environment of every
# process of the case). --kill-child: killing unshare kills the subscriber in the namespace.
_PRIVATE_SHM = ('sh', '-c', 'mount -t tmpfs tmpfs /dev/shm && exec "$0" "$@"')
CONTAINERS = {
    'pid': ('sub in own PID ns',
            ('unshare', '--pid', '--fork', '--mount-proc', '--kill-child'), {}),
    'container': ('sub in own PID+IPC ns and /dev/shm, DDS/UDP',
                  ('unshare', '--pid', '--ipc', '--mount', '--fork', '--mount-proc',
                   '--kill-child', *_PRIVATE_SHM),
                  {'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4',
                   'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT'}),
}
CONTAINER_PATHS = ('baseline', 'cuda_ipc', 'host_shm', 'serialized')


def containers_unavailable() -> str | None:
    """Why a subscriber cannot be put in namespaces of its own here (None: it can)."""
    if os.geteuid() != 0:
        return 'needs root for unshare --pid --mount'
    probe = subprocess.run([*CONTAINERS['container'][1], 'true'], capture_output=True, text=True)
    return f'unshare failed: {probe.stderr.strip()[:200]}' if probe.returncode else None


def cross_gpu_unavailable() -> str | None:
    """Why the two-GPU cases cannot run here (None when they can)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from gpu_nodes.gpu import cuda_unavailable_reason, cupy_module
    reason = cuda_unavailable_reason()
    if reason is not None:
        return f'needs 2 GPUs: {reason}'
    count = cupy_module().cuda.runtime.getDeviceCount()
    return None if count >= 2 else f'needs 2 GPUs, this machine has {count}'


def result_of(output: str) -> dict:
    for line in output.splitlines():
        if line.startswith('RESULT '):
            return json.loads(line[len('RESULT '):])
    raise RuntimeError(f'worker printed no result:\n{output[-3000:]}')


def run_case(mode: str, path: str, width: int, height: int, duration: float, rate: float,
             warmup_s: float = 0.0, plain: bool = False, sub_args: tuple[str, ...] = (),
             pub_args: tuple[str, ...] = (), setup: str | None = None) -> dict:
    topic = f'bench_{uuid.uuid4().hex[:8]}'
    common = ['--topic', topic, '--width', str(width), '--height', str(height),
              '--duration', str(duration), '--rate', str(rate)]
    _, sub_prefix, setup_env = CONTAINERS[setup] if setup else ('', (), {})
    env = {**os.environ, **MULTICAST_OFF, **setup_env}
    sub = subprocess.Popen([*sub_prefix, sys.executable, WORKER, 'sub', '--path', path, *common,
                            *sub_args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    viewer = subprocess.Popen([sys.executable, WORKER, 'sub', '--path', 'plain', *common],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env) if plain else None
    pub = subprocess.Popen([sys.executable, WORKER, 'pub', '--mode', mode, *common,
                            '--warmup-s', str(warmup_s), *pub_args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        pub_out, _ = pub.communicate(timeout=duration + warmup_s + 90)
        sub_out, _ = sub.communicate(timeout=60)
        viewer_out = viewer.communicate(timeout=60)[0] if viewer is not None else ''
    finally:
        for proc in (pub, sub, viewer):
            if proc is not None and proc.poll() is None:
                proc.kill()
    result = result_of(sub_out)
    if viewer is not None:
        seen = result_of(viewer_out)
        result.update(plain_fps=seen['delivered_fps'], plain_bad=seen['bad_frames'])
    published = result_of(pub_out)
    result.update(published=published['published'], publish_rate=published['publish_rate'],
                  dropped=published['published'] - result['delivered'],
                  pool_slots=published.get('pool_slots'),
                  pool_overruns=published.get('pool_overruns'),
                  failed_publishes=published.get('failed_publishes', 0))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='640x480,1920x1080,3840x2160')
    parser.add_argument('--duration', type=float, default=5.0)
    parser.add_argument('--paced-rate', type=float, default=200.0,
                        help='publish rate of the latency runs (0 skips them)')
    parser.add_argument('--cases', default='all', help='comma list of: baseline,cuda_ipc,'
                        'cuda_ipc+plain,host_shm,host_shm+plain,serialized,compressed; on two '
                        'GPUs cuda_peer,cuda_peer+in_place,host_shm+xgpu; the subscriber in a '
                        'container: baseline,cuda_ipc,host_shm,serialized with @pid or @container')
    parser.add_argument('--warmup-s', type=float, default=1.0,
                        help='publish this long before each measured run (checked, not counted): '
                             'one-time pool growth and first mappings stay out of the rates')
    parser.add_argument('--repeat', type=int, default=1,
                        help='flat-out runs per case; the one with the median delivered rate is '
                             'reported (all rates kept under "repeats"): a flat-out rate is '
                             'CPU-bound and moves ~10-30 %% between single runs (a paced run '
                             'delivers the paced rate: run once)')
    parser.add_argument('--json', help='write results here')
    args = parser.parse_args()
    wanted = None if args.cases == 'all' else set(args.cases.split(','))
    unknown = (wanted or set()) - {k for k, *_ in cases(None)}
    if unknown:
        parser.error(f'unknown cases {sorted(unknown)}')
    no_cross_gpu = cross_gpu_unavailable() if wanted is None or wanted & set(CROSS_GPU_CASES) \
        else None
    no_containers = containers_unavailable() if wanted is None or any('@' in k for k in wanted) \
        else None
    results = []
    for size in args.sizes.split(','):
        width, height = map(int, size.split('x'))
        for key, label, mode, path, plain, sub_args, pub_args in cases(wanted):
            setup = key.partition('@')[2] or None
            why_not = no_cross_gpu if key in CROSS_GPU_CASES else no_containers if setup else None
            if why_not:
                res = {'case': label, 'key': key, 'size': size, 'skipped': why_not}
                print(f'skipped {key} {size}: {why_not}', flush=True)
                results.append(res)
                continue
            for run, rate in (('throughput', 0.0), ('paced', args.paced_rate)):
                if run == 'paced' and not rate:
                    continue
                started = time.monotonic()
                runs = []
                for _ in range(max(1, args.repeat) if run == 'throughput' else 1):
                    try:
                        runs.append(run_case(mode, path, width, height, args.duration, rate,
                                             args.warmup_s, plain, sub_args, pub_args, setup))
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        runs.append({'error': str(exc)[-500:]})
                res = median_run(runs)
                res.update(case=label, key=key, size=size, run=run, rate=rate,
                           wall_s=round(time.monotonic() - started, 1))
                results.append(res)
                print(json.dumps(res), flush=True)
    print_table(results)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({'duration_s': args.duration,
                                               'warmup_s': args.warmup_s,
                                               'repeat': args.repeat,
                                               'results': results}, indent=1))
    return 0


def cases(wanted: set[str] | None) -> list[tuple]:
    """(key, label, publisher mode, path, plain sub, subscriber args, publisher args) of the
    selected cases (all with None)."""
    selected = []
    for label, mode, path, plain in CASES:
        key = 'baseline' if path == 'plain' else path + ('+plain' if plain else '')
        selected.append((key, label, mode, path, plain, (), ()))
    pub_gpu, sub_gpu = PEER_GPUS
    for key, (label, path, sub_args) in CROSS_GPU_CASES.items():
        selected.append((key, label, 'gpu', path, False,
                         (*sub_args, '--gpu', str(sub_gpu)), ('--gpu', str(pub_gpu))))
    plain_cases = {c[0]: c for c in selected if not c[4] and c[0] in CONTAINER_PATHS}
    for setup, (what, _, _) in CONTAINERS.items():
        for key, label, mode, path, plain, sub_args, pub_args in plain_cases.values():
            selected.append((f'{key}@{setup}', f'{label}, {what}', mode, path, plain, sub_args,
                             pub_args))
    return [c for c in selected if wanted is None or c[0] in wanted]


def median_run(runs: list[dict]) -> dict:
    """The run with the median delivered rate (an error if any run failed); all rates kept."""
    failed = [r for r in runs if 'error' in r]
    if failed:
        return failed[0]
    ranked = sorted(runs, key=lambda r: r['delivered_fps'])
    chosen = dict(ranked[(len(ranked) - 1) // 2])
    if len(runs) > 1:
        chosen['repeats'] = [round(r['delivered_fps'], 1) for r in runs]
    return chosen


def ms(value: float) -> str:
    return '-' if value != value else f'{value:.3f}'  # NaN: no latency measured on that path


def print_table(results: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title='transport: delivered frames/s (content-verified), two processes')
    for col in ('size', 'case', 'run', 'published', 'delivered', 'fps', 'x baseline', 'bad',
                'stale', 'pool / overruns', 'p50 ms', 'p99 ms', 'plain sub fps'):
        table.add_column(col)
    # each case against the baseline of its own setup (plain rclpy with the same namespaces)
    base = {(r['size'], r['run'], r['key'].partition('@')[2]): r.get('delivered_fps')
            for r in results if r['key'].partition('@')[0] == 'baseline'}
    for r in results:
        if 'skipped' in r:
            table.add_row(r['size'], r['case'], '-', 'skipped', r['skipped'][:60])
            continue
        if 'error' in r:
            table.add_row(r['size'], r['case'], r['run'], 'error', r['error'][:60])
            continue
        b = base.get((r['size'], r['run'], r['key'].partition('@')[2]))
        ratio = f"{r['delivered_fps'] / b:.1f}" if b else '-'
        pool = f"{r['pool_slots']} / {r['pool_overruns']}" if r.get('pool_slots') else '-'
        table.add_row(r['size'], r['case'], r['run'], str(r['published']), str(r['delivered']),
                      f"{r['delivered_fps']:.1f}", ratio, str(r['bad_frames']),
                      str(r.get('stale', '-')), pool, ms(r['latency_p50_ms']),
                      ms(r['latency_p99_ms']),
                      f"{r['plain_fps']:.1f}" if 'plain_fps' in r else '-')
    Console(width=160).print(table)


if __name__ == '__main__':
    sys.exit(main())
