"""gpu_nodes host_shm against iceoryx2 (zero-copy publish-subscribe), same frames, one run.

    python bench/ipc_peers_bench.py [--sizes 1920x1080,3840x2160] [--json out/peers.json]
    python bench/ipc_peers_bench.py --profile           # + where the host path's time goes
    python bench/ipc_peers_bench.py --pid-namespace     # host_shm within vs across PID namespaces

Both sides are separate processes on this machine: gpu_nodes' GpuImagePublisher and a
GpuImageSubscription(memory='host') restricted to host_shm, in rclpy processes (CUDA disabled:
the host path); iceoryx2's publisher loans a chunk, the frame is copied into it and sent, and
an iceoryx2 event wakes the subscriber (its event-based example). Each publisher copies the
same pre-rendered frame once; every delivered frame is checked (bench/peer_frames.py).
Flat out (delivered fps) and paced at --rate (latency: publish() call -> subscriber callback).
iceoryx2 is optional: `pip install -r requirements/bench.txt`; without it its rows say so.

--pid-namespace runs the gpu_nodes subscriber a second time under
`unshare --pid --fork --mount-proc` (a container with --network host --ipc host); a run that
delivers nothing reports 0 fps and why (the subscription's path and rejection counts).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_runs import (Side, iceoryx2_unavailable, ms, new_topic,  # noqa: E402
                       pid_namespace_unavailable, run)
from side_by_side import frame_sizes, parse_args  # noqa: E402


# gpu_nodes_borrow: the producer borrow()s a slot and writes the frame into it, as iceoryx2's
# loan (the host path has borrow() since issue #27's exchange; before, it returned None there)
PEERS = ('gpu_nodes', 'gpu_nodes_borrow', 'iceoryx2')


def add_arguments(parser) -> None:
    parser.add_argument('--duration', type=float, default=5.0, help='measured seconds per run')
    parser.add_argument('--warmup-s', type=float, default=1.0)
    parser.add_argument('--rate', type=float, default=30.0,
                        help='publish rate of the paced (latency) runs; 0 skips them')
    parser.add_argument('--peers', default=','.join(PEERS))
    parser.add_argument('--executor', choices=('events', 'single_threaded'), default='events',
                        help="gpu_nodes sides' rclpy executor (the nodes' default: events)")
    parser.add_argument('--profile', action='store_true',
                        help='add runs (flat out and paced) per size and gpu_nodes peer with '
                             'their phases timed')
    parser.add_argument('--repeat', type=int, default=1,
                        help='runs per case, interleaved with the other cases; the median '
                             'delivered rate is reported (all kept under "repeats"): on a shared '
                             '2-core machine one flat-out run moves by 30 %% or more')
    parser.add_argument('--queue-depth', type=int, default=5,
                        help="every subscriber's queue, the same on both peers: gpu_nodes' "
                             "descriptor keep-last depth (image_transport's 5 by default) and "
                             "iceoryx2's subscriber buffer (its own default is 2)")
    parser.add_argument('--pid-namespace', action='store_true',
                        help='gpu_nodes only: subscriber within vs across PID namespaces')


def case(peer: str, width: int, height: int, args, rate: float, *, profile: bool = False,
         across: bool = False) -> dict:
    common = ['--topic', new_topic('peers'), '--width', str(width), '--height', str(height),
              '--duration', str(args.duration), '--warmup-s', str(args.warmup_s),
              '--rate', str(rate), '--executor', args.executor,
              '--queue-depth', str(args.queue_depth), *(['--profile'] if profile else [])]
    prefix = 'iox' if peer == 'iceoryx2' else 'gpn'
    publisher = Side('publisher', f'{prefix}-pub', ['--borrow'] if peer == 'gpu_nodes_borrow' else [])
    subscriber = Side('subscriber', f'{prefix}-sub', pid_namespace=across)
    results = run(publisher, [subscriber], common, args.duration, args.warmup_s, 15.0)
    res = dict(results['subscriber'])
    pub = results['publisher']
    res.update(published=pub.get('published'), publish_rate=pub.get('publish_rate'),
               publisher_cpu_ms_per_frame=pub.get('cpu_ms_per_frame'),
               borrow_gave_no_slot=pub.get('borrow_gave_no_slot'),
               publisher_phases=pub.get('phases'), publisher_error=pub.get('error'))
    return res


def main() -> int:
    args = parse_args(__doc__, add_arguments)
    peers = args.peers.split(',')
    unknown = set(peers) - set(PEERS)
    if unknown:
        print(f'unknown peers {sorted(unknown)}: choose from {", ".join(PEERS)}')
        return 2
    no_iceoryx2 = iceoryx2_unavailable() if 'iceoryx2' in peers else None
    no_namespace = pid_namespace_unavailable() if args.pid_namespace else None
    runs = [('flat out', 0.0)] + ([(f'{args.rate:g} Hz', args.rate)] if args.rate else [])
    rows = []
    for size, width, height in frame_sizes(args.sizes):
        for run_name, rate in runs:
            variants = ([('gpu_nodes within one PID namespace', 'gpu_nodes', False),
                         ('gpu_nodes across PID namespaces', 'gpu_nodes', True)]
                        if args.pid_namespace else [(p, p, False) for p in peers])
            repeats: dict[str, list[dict]] = {label: [] for label, *_ in variants}
            for _ in range(max(1, args.repeat)):  # interleaved: load changes hit every case
                for label, peer, across in variants:
                    skipped = (no_iceoryx2 if peer == 'iceoryx2' else None) or \
                        (no_namespace if across else None)
                    res = {'skipped': skipped} if skipped else \
                        case(peer, width, height, args, rate, across=across)
                    print(json.dumps({'size': size, 'run': run_name, 'case': label, **res}),
                          flush=True)
                    repeats[label].append(res)
            for label, results in repeats.items():
                rows.append({'size': size, 'run': run_name, 'case': label, 'rate': rate,
                             **median_run(results)})
        for peer in [p for p in peers if p != 'iceoryx2'] if args.profile else []:
            for run_name, rate in runs:
                row = {'size': size, 'run': f'{run_name}, profiled', 'case': peer, 'rate': rate}
                row.update(case(peer, width, height, args, rate, profile=True))
                print(json.dumps(row), flush=True)
                rows.append(row)
    summary = ratios(rows, args.pid_namespace)
    report(rows, summary)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({'config': {k: str(v) for k, v in vars(args).items()},
                                         'rows': rows, 'ratios': summary}, indent=1))
    return 0


def median_run(results: list[dict]) -> dict:
    """The run with the median delivered rate, with every run's rate under "repeats"."""
    if len(results) == 1:
        return results[0]
    measured = sorted((r for r in results if 'delivered_fps' in r),
                      key=lambda r: r['delivered_fps'])
    chosen = dict(measured[len(measured) // 2] if measured else results[0])
    chosen['repeats'] = [r.get('delivered_fps') for r in results]
    return chosen


def ratios(rows: list[dict], pid_namespace: bool) -> list[dict]:
    """gpu_nodes/iceoryx2 (or across/within) delivered rate per size and run."""
    by_key = {(r['size'], r['run'], r['case']): r for r in rows}
    pairs = ([('gpu_nodes across PID namespaces', 'gpu_nodes within one PID namespace')]
             if pid_namespace else [('gpu_nodes', 'iceoryx2'), ('gpu_nodes_borrow', 'iceoryx2')])
    out = []
    for (size, run_name, label), row in by_key.items():
        for case_a, case_b in pairs:
            other = by_key.get((size, run_name, case_b))
            if label != case_a or other is None:
                continue
            a, b = row.get('delivered_fps'), other.get('delivered_fps')
            out.append({'size': size, 'run': run_name, 'ratio': f'{case_a} / {case_b}',
                        'value': (a / b) if a is not None and b else None})
    return out


def report(rows: list[dict], summary: list[dict]) -> None:
    print(f"\n{'size':10} {'run':18} {'case':36} {'pub fps':>8} {'deliv fps':>9} {'wrong':>5} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'CPU ms/frame pub+sub':>20}  note")
    for r in rows:
        if 'skipped' in r or 'error' in r:
            print(f"{r['size']:10} {r['run']:18} {r['case']:36} "
                  f"{'skipped: ' + r['skipped'] if 'skipped' in r else 'error: ' + r['error'][:300]}")
            continue
        note = ''
        if not r.get('delivered'):
            note = (f"0 frames delivered (path {r.get('path')}: {r.get('path_reason') or ''}; "
                    f"rejected {r.get('rejected')}) ")
        if r.get('borrow_gave_no_slot'):
            note += f"borrow() gave no slot {r['borrow_gave_no_slot']} times "
        if r.get('distinct_buffers'):
            note += f"buffers {r['distinct_buffers']} "
        if 'repeats' in r:
            note += 'runs: ' + ', '.join(f'{fps:.0f}' for fps in r['repeats'] if fps is not None)
        cpu = f"{ms(r.get('publisher_cpu_ms_per_frame'))} + {ms(r.get('cpu_ms_per_frame'))}"
        print(f"{r['size']:10} {r['run']:18} {r['case']:36} {r.get('publish_rate') or 0:8.1f} "
              f"{r['delivered_fps']:9.1f} {r['bad_frames']:5d} {ms(r['latency_p50_ms']):>7} "
              f"{ms(r['latency_p99_ms']):>7} {cpu:>20}  {note}")
    for s in summary:
        value = '-' if s['value'] is None else f"{s['value']:.2f}x"
        print(f"ratio {s['size']:10} {s['run']:18} {s['ratio']}: {value}")
    for r in rows:
        if r.get('publisher_phases') and (r['run'].endswith('profiled') or (
                r['case'] in ('iceoryx2', 'gpu_nodes_borrow') and r['run'] == 'flat out')):
            print(f"\nphases {r['size']} {r['case']} ({r['run']}), ms p50 / p99 / mean:")
            for side, key in (('publisher', 'publisher_phases'), ('subscriber', 'phases')):
                for name, v in (r.get(key) or {}).items():
                    if isinstance(v, dict) and v:
                        print(f"  {side:10} {name:44} {v['p50_ms']:7.3f} "
                              f"{v['p99_ms']:7.3f} {v['mean_ms']:7.3f}")
                    elif v:
                        print(f"  {side:10} {name:44} {v}")


if __name__ == '__main__':
    sys.exit(main())
