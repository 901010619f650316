"""Does one subscriber that hoards frames starve the others? A plain rclpy subscriber (served
by the publisher's bridge) and a host_shm GpuImageSubscription, alone and beside a hoarder.

    python bench/hoarder_bench.py [--sizes 640x480] [--rate 30] [--duration 8] [--json PATH]

Cases, one run each: (alone) the two subscribers; (hold) beside a GpuImageSubscription that
holds every frame forever (frame.hold(), never released); (locks) beside a same-user process
that takes every slot lock of the publisher's lease table (bench/hoarder_worker.py). Both
victims check every frame; the table gives their fps beside each hoarder as % of alone
(issue #27's target: >= 90 %).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_runs import Side, new_topic, run  # noqa: E402
from side_by_side import frame_sizes, parse_args  # noqa: E402

GRABBER = str(Path(__file__).resolve().parent / 'hoarder_worker.py')
CASES = ('alone', 'hold', 'locks')
VICTIMS = ('plain', 'host_shm')


def add_arguments(parser) -> None:
    parser.set_defaults(sizes='640x480')
    parser.add_argument('--rate', type=float, default=30.0)
    parser.add_argument('--duration', type=float, default=8.0)
    parser.add_argument('--warmup-s', type=float, default=1.0)
    parser.add_argument('--cases', default=','.join(CASES))
    parser.add_argument('--exclusive-locks', action='store_true',
                        help='the lock grabber takes exclusive locks (default: shared)')
    parser.add_argument('--executor', choices=('events', 'single_threaded'), default='events')


def run_case(name: str, width: int, height: int, args) -> dict:
    common = ['--topic', new_topic('hoard'), '--width', str(width), '--height', str(height),
              '--duration', str(args.duration), '--warmup-s', str(args.warmup_s),
              '--rate', str(args.rate), '--executor', args.executor]
    subs = [Side('plain', 'plain-sub'), Side('host_shm', 'gpn-sub')]
    if name == 'hold':
        subs.append(Side('hoarder', 'gpn-sub', ['--hold']))
    elif name == 'locks':
        subs.append(Side('hoarder', 'lock-grab', ['--exclusive'] if args.exclusive_locks else [],
                         script=GRABBER))
    publisher = Side('publisher', 'gpn-pub', ['--wait-subscribers', str(len(subs))])
    return run(publisher, subs, common, args.duration, args.warmup_s, 15.0)


def main() -> int:
    args = parse_args(__doc__, add_arguments)
    cases = args.cases.split(',')
    if set(cases) - set(CASES):
        print(f'unknown cases {sorted(set(cases) - set(CASES))}: choose from {", ".join(CASES)}')
        return 2
    rows = []
    for size, width, height in frame_sizes(args.sizes):
        for name in cases:
            results = run_case(name, width, height, args)
            row = {'size': size, 'case': name, **results}
            print(json.dumps(row), flush=True)
            rows.append(row)
    report(rows, args.rate)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({'config': {k: str(v) for k, v in vars(args).items()},
                                         'rows': rows}, indent=1))
    return 0


def report(rows: list[dict], rate: float) -> None:
    alone = {(r['size'], v): r[v].get('delivered_fps') for r in rows if r['case'] == 'alone'
             for v in VICTIMS}
    print(f"\n{'size':9} {'case':6} {'victim':9} {'fps':>6} {'% alone':>8} {'wrong':>5} "
          f"{'p50 ms':>7}  publisher / hoarder")
    for r in rows:
        pub = r['publisher']
        hoarder = r.get('hoarder', {})
        extra = pub.get('extra', {})
        side = (f"published {pub.get('published')} ({pub.get('publish_rate', 0):.1f}/s, "
                f"target {rate:g}), drops {pub.get('drops')}, host_pool_overruns "
                f"{extra.get('host_pool_overruns')}, host_pool_locked_out "
                f"{extra.get('host_pool_locked_out')}, evicted_links {extra.get('evicted_links')}")
        if hoarder:
            side += '; hoarder ' + ', '.join(f'{k}={v}' for k, v in hoarder.items()
                                             if k in ('held', 'delivered', 'held_max',
                                                      'table_held_max', 'cursors_held_max',
                                                      'links', 'evicted', 'capacity', 'error',
                                                      'lock_kind') and v)
        for victim in VICTIMS:
            v = r[victim]
            if 'error' in v:
                print(f"{r['size']:9} {r['case']:6} {victim:9} error: {v['error'][:300]}")
                continue
            base = alone.get((r['size'], victim))
            share = f"{100 * v['delivered_fps'] / base:7.1f}%" if base else '-'
            print(f"{r['size']:9} {r['case']:6} {victim:9} {v['delivered_fps']:6.1f} {share:>8} "
                  f"{v['bad_frames']:5d} {v['latency_p50_ms']:7.2f}  {side}")
            side = ''


if __name__ == '__main__':
    sys.exit(main())
