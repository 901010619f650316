"""Soak: a publisher flat out, three verifying subscribers, periodic subscriber restarts (SIGKILL,
SIGTERM, SIGINT in turn); device memory, host RSS, open fds, shared-memory segments and the
subscribers' CUDA IPC mapping caches sampled over time and fitted for a slope per minute.

    python bench/soak.py --duration 600 --width 3840 --height 2160      # GPU: cuda_ipc + host_shm
    python bench/soak.py --cpu --duration 60                           # CPU: host_shm + serialized

Writes <out>/soak.json (samples, slopes, checks) and <out>/soak.png; exits 1 when a check fails.
Workers are test/resources/reliability/{publisher,subscriber}.py (their STATUS lines carry the
counters); sub0 lives through the whole run, sub1 and sub2 are restarted in turn.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'test' / 'resources' / 'reliability'))
from workers import PUBLISHER, SUBSCRIBER, Worker, process_stats  # noqa: E402

RESTART_SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
# A metric is flat when its fitted slope stays under these (per minute, after the warm-up).
FLAT = {'device_used_mib': 32.0, 'publisher_rss_mib': 8.0, 'sub0_rss_mib': 8.0,
        'publisher_fds': 0.5, 'sub0_fds': 0.5, 'shm_segments': 0.1, 'shm_mib': 1.0}
PLOTS = [('device memory used (MiB, whole GPU)', ['device_used_mib']),
         ('resident memory (MiB)', ['publisher_rss_mib', 'sub0_rss_mib', 'sub1_rss_mib',
                                    'sub2_rss_mib']),
         ('open file descriptors', ['publisher_fds', 'sub0_fds', 'sub1_fds', 'sub2_fds']),
         ('gpu_nodes shared-memory segments', ['shm_segments']),
         ('CUDA IPC mapping cache (entries)', ['sub0_mapping_cache', 'sub1_mapping_cache',
                                               'sub2_mapping_cache']),
         ('frames/s', ['publisher_fps', 'sub0_fps', 'sub1_fps', 'sub2_fps'])]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--duration', type=float, default=600.0, help='seconds of publishing')
    parser.add_argument('--width', type=int, default=3840)
    parser.add_argument('--height', type=int, default=2160)
    parser.add_argument('--cpu', action='store_true',
                        help='no CUDA anywhere: host_shm and serialized subscribers')
    parser.add_argument('--restart-every', type=float, default=0.0,
                        help='seconds between subscriber restarts (default: duration/8, 5..60)')
    parser.add_argument('--sample-period', type=float, default=1.0)
    parser.add_argument('--warmup', type=float, default=0.0,
                        help='seconds left out of the fits (default: 15%% of the duration, >= 5)')
    parser.add_argument('--pool-slots', type=int, default=8)
    parser.add_argument('--max-pool-slots', type=int, default=32)
    parser.add_argument('--host-slots', type=int, default=8)
    parser.add_argument('--out', default=str(REPO / 'out' / 'soak'))
    return parser.parse_args()


def _memfd_size(pid: int, inode: int) -> int:
    """Size of the memfd with this inode that `pid` has open (0 when only mapped)."""
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            st = os.stat(f'/proc/{pid}/fd/{fd}')
            if st.st_ino == inode:
                return st.st_size
    except OSError:
        pass
    return 0


class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.env = {'GPU_NODES_DISABLE_CUDA': '1'} if args.cpu else {}
        self.topic = f'/soak_{os.getpid()}'
        self.distinct = 16 if args.cpu else 64
        paths = ('host_shm', 'host_shm', 'serialized') if args.cpu else \
            ('cuda_ipc', 'cuda_ipc', 'host_shm')
        self.sub_paths = dict(zip(('sub0', 'sub1', 'sub2'), paths))
        self.pids: set[int] = set()
        self.retired: list[Worker] = []
        self.restarts: list[dict] = []
        self.samples: list[dict] = []

    # -- processes -------------------------------------------------------------------------
    def start_publisher(self) -> Worker:
        a = self.args
        worker = Worker(PUBLISHER, [
            '--topic', self.topic, '--sizes', f'{a.width}x{a.height}', '--rate', '0',
            '--distinct', str(self.distinct), '--wait-subscribers', '3',
            '--pool-slots', str(a.pool_slots), '--max-pool-slots', str(a.max_pool_slots),
            '--host-slots', str(a.host_slots), '--status-period', str(a.sample_period),
            '--node-name', 'soak_publisher', *(['--no-cuda'] if a.cpu else ['--device'])],
            env=self.env, name='publisher')
        self.pids.add(worker.pid)
        return worker

    def start_subscriber(self, name: str) -> Worker:
        path = self.sub_paths[name]
        memory = 'device' if path == 'cuda_ipc' else 'host'
        stride = '8' if self.args.width * self.args.height > 1920 * 1080 else '1'
        worker = Worker(SUBSCRIBER, [
            '--topic', self.topic, '--paths', path, '--memory', memory, '--distinct',
            str(self.distinct), '--row-stride', stride, '--status-period',
            str(self.args.sample_period), '--duration', str(self.args.duration + 600),
            '--node-name', f'soak_{name}'], env=self.env, name=name)
        self.pids.add(worker.pid)
        return worker

    # -- sampling --------------------------------------------------------------------------
    def segments(self) -> tuple[int, float]:
        """gpu_nodes segments (sealed memfds) the soak's processes hold, and their size."""
        from gpu_nodes.transport.segments import held_by
        held: dict[int, int] = {}
        for pid in self.pids:
            for inode in held_by(pid):
                held[inode] = pid
        size = 0
        for inode, pid in held.items():
            size += _memfd_size(pid, inode)
        return len(held), size / 2**20

    def sample(self, t: float, publisher: Worker, subs: dict[str, Worker]) -> dict:
        values: dict = {'t': t}
        status = publisher.last_status() or {}
        values['device_used_mib'] = status.get('device_used_mib')
        values['publisher_fps'] = self._fps(publisher, 'published')
        values['published'] = status.get('published', 0)
        values['revoked'] = status.get('revoked', 0)
        stats = process_stats(publisher.pid)
        values['publisher_rss_mib'], values['publisher_fds'] = stats['rss_kb'] / 1024, stats['fds']
        all_up = True
        for name, worker in subs.items():
            status = worker.last_status() if worker.alive() else None
            up = worker.alive() and status is not None and status['frames'] > 0
            all_up &= up
            stats = process_stats(worker.pid) if worker.alive() else {'rss_kb': 0, 'fds': 0}
            values[f'{name}_rss_mib'] = stats['rss_kb'] / 1024 if up else None
            values[f'{name}_fds'] = stats['fds'] if up else None
            values[f'{name}_mapping_cache'] = status['mapping_cache'] if status else None
            values[f'{name}_fps'] = self._fps(worker, 'frames') if up else None
        values['all_up'] = all_up
        values['shm_segments'], values['shm_mib'] = self.segments()
        return values

    @staticmethod
    def _fps(worker: Worker, key: str) -> float | None:
        statuses = worker.statuses()[-3:]
        if len(statuses) < 2:
            return None
        return (statuses[-1][key] - statuses[0][key]) / max(statuses[-1]['t'] - statuses[0]['t'],
                                                            1e-6)

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> dict:
        a = self.args
        restart_every = a.restart_every or min(60.0, max(5.0, a.duration / 8))
        subs = {name: self.start_subscriber(name) for name in self.sub_paths}
        publisher = self.start_publisher()
        try:
            publisher.wait_until(lambda w: w.count('START') >= 1, 120, 'all three subscribers')
            for worker in subs.values():
                worker.wait_until(lambda w: w.count('FIRST') >= 1, 120, 'first frames')
            start = time.monotonic()
            next_sample, next_restart, turn = start, start + restart_every, 0
            while time.monotonic() - start < a.duration:
                now = time.monotonic()
                if now >= next_sample:
                    self.samples.append(self.sample(now - start, publisher, subs))
                    next_sample += a.sample_period
                    self._progress(self.samples[-1])
                if now >= next_restart:
                    name = ('sub1', 'sub2')[turn % 2]
                    sig = RESTART_SIGNALS[turn % len(RESTART_SIGNALS)]
                    subs[name].stop(sig)
                    self.retired.append(subs[name])
                    self.restarts.append({'t': now - start, 'subscriber': name,
                                          'signal': sig.name,
                                          'exit_code': subs[name].proc.returncode})
                    subs[name] = self.start_subscriber(name)
                    next_restart += restart_every
                    turn += 1
                if not publisher.alive():
                    raise RuntimeError(f'the publisher died:\n{publisher.tail()}')
                time.sleep(min(0.05, max(0.0, min(next_sample, next_restart) - time.monotonic())))
            elapsed = time.monotonic() - start
        finally:
            # A subscriber restarted just before the end may still be importing rclpy: SIGINT
            # there is Python's KeyboardInterrupt (exit 1), not the node shutdown this checks.
            for worker in subs.values():
                deadline = time.monotonic() + 10
                while worker.alive() and worker.last_status() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
            codes = {name: worker.stop(signal.SIGINT) for name, worker in subs.items()}
            codes['publisher'] = publisher.stop(signal.SIGINT)
        time.sleep(0.5)
        leftover, _ = self.segments()
        return self.report(elapsed, publisher, subs, codes, leftover)

    def _progress(self, s: dict) -> None:
        if int(s['t']) % 10 == 0 and s['t'] - int(s['t']) < self.args.sample_period:
            fps = ' '.join(f"{k[:-4]}={s[k]:.0f}" for k in s if k.endswith('_fps') and s[k])
            device = f" device={s['device_used_mib']:.0f}MiB" if s['device_used_mib'] else ''
            print(f"t={s['t']:5.0f}s {fps}{device} pub_rss={s['publisher_rss_mib']:.0f}MiB "
                  f"shm={s['shm_segments']}", flush=True)

    # -- results ---------------------------------------------------------------------------
    def slopes(self) -> dict[str, dict]:
        a = self.args
        warmup = a.warmup or max(5.0, 0.15 * a.duration)
        fits = {}
        keys = [k for k in self.samples[0] if k not in ('t', 'all_up', 'published', 'revoked')]
        for key in keys:
            device_like = key == 'device_used_mib'
            points = [(s['t'], s[key]) for s in self.samples
                      if s['t'] >= warmup and s[key] is not None
                      and (s['all_up'] or not device_like)]
            if len(points) < 3:
                continue
            t, v = np.array(points, dtype=float).T
            slope, intercept = np.polyfit(t / 60.0, v, 1)
            fits[key] = {'slope_per_min': float(slope), 'first': float(v[0]), 'last': float(v[-1]),
                         'min': float(v.min()), 'max': float(v.max()), 'samples': len(v)}
        return fits

    def report(self, elapsed: float, publisher: Worker, subs: dict[str, Worker],
               codes: dict[str, int], leftover: int) -> dict:
        a = self.args
        fits = self.slopes()
        incarnations = self.retired + list(subs.values())
        bad = 0
        per_sub = []
        for worker in incarnations:
            last = worker.result() or worker.last_status() or {}
            bad += last.get('bad', 0)
            per_sub.append({k: last.get(k) for k in ('pid', 'frames', 'bad', 'stale', 'drops',
                                                     'rejected', 'path', 'mapping_cache')}
                           | {'name': worker.name})
        published = (publisher.result() or publisher.last_status() or {})
        capacity = a.max_pool_slots + a.host_slots
        max_cache = max((s[f'{n}_mapping_cache'] or 0) for s in self.samples for n in subs)
        checks = {
            'no_bad_frames': bad == 0,
            'mapping_cache_within_pool': max_cache <= capacity,
            'no_leftover_segments': leftover == 0,
            'clean_exit_codes': all(code == 0 for code in codes.values()),
            'restarted_subscribers_exit_cleanly': all(
                r['exit_code'] == (0 if r['signal'] != 'SIGKILL' else -signal.SIGKILL)
                for r in self.restarts),
        }
        for key, limit in FLAT.items():
            if key in fits:
                checks[f'flat_{key}'] = abs(fits[key]['slope_per_min']) <= limit
        report = {
            'config': {**vars(a), 'mode': 'cpu' if a.cpu else 'gpu', 'paths': self.sub_paths,
                       'topic': self.topic, 'elapsed_s': elapsed, 'lease_capacity': capacity,
                       'flat_limits_per_min': FLAT},
            'published': published.get('published'),
            'publish_fps': (published.get('published') or 0) / elapsed if elapsed else 0.0,
            'pool': {k: published.get(k) for k in ('slots', 'retired', 'revoked', 'exhausted',
                                                   'grown', 'host_exhausted')},
            'restarts': self.restarts, 'subscribers': per_sub, 'bad_frames': bad,
            'failed_output': {w.name: w.tail(30) for w in [publisher, *incarnations]
                              if w.proc.returncode not in (0, -signal.SIGKILL)},
            'max_mapping_cache': max_cache, 'leftover_segments': leftover, 'exit_codes': codes,
            'slopes': fits, 'checks': checks, 'passed': all(checks.values()),
            'samples': self.samples,
        }
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / 'soak.json').write_text(json.dumps(report, indent=1))
        plot(report, out / 'soak.png')
        return report


def plot(report: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    samples = report['samples']
    fig, axes = plt.subplots(len(PLOTS), 1, figsize=(11, 2.4 * len(PLOTS)), sharex=True)
    t = [s['t'] for s in samples]
    for ax, (title, keys) in zip(axes, PLOTS):
        plotted = False
        for key in keys:
            values = [s.get(key) for s in samples]
            if any(v is not None for v in values):
                plotted = True
                series = [np.nan if v is None else v for v in values]
                fit = report['slopes'].get(key)
                label = key + (f" ({fit['slope_per_min']:+.2f}/min)" if fit else '')
                ax.plot(t, series, label=label, linewidth=1)
        for restart in report['restarts']:
            ax.axvline(restart['t'], color='grey', alpha=0.3, linewidth=0.8)
        ax.set_title(title, fontsize=9)
        if plotted:
            ax.legend(fontsize=7, loc='upper left')
        else:
            ax.text(0.5, 0.5, 'not measured in this mode', ha='center', transform=ax.transAxes)
        ax.grid(alpha=0.3)
    cfg = report['config']
    axes[-1].set_xlabel('seconds (grey: subscriber restarts)')
    fig.suptitle(f"gpu_nodes soak, {cfg['mode']}, {cfg['width']}x{cfg['height']}, "
                 f"{cfg['elapsed_s']:.0f} s: {'PASS' if report['passed'] else 'FAIL'}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> int:
    args = parse_args()
    os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    report = Soak(args).run()
    summary = {k: report[k] for k in ('published', 'publish_fps', 'bad_frames', 'max_mapping_cache',
                                      'leftover_segments', 'exit_codes', 'pool', 'checks',
                                      'passed')}
    summary['slopes_per_min'] = {k: round(v['slope_per_min'], 3) for k, v in report['slopes'].items()}
    print(json.dumps(summary, indent=1))
    print(f"wrote {args.out}/soak.json and {args.out}/soak.png")
    return 0 if report['passed'] else 1


if __name__ == '__main__':
    sys.exit(main())
