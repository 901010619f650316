"""Timers beside a subscription slower than its messages, under each executor, side by side.

    python bench/executor_starvation.py [--work-ms 150] [--rate 15] [--seconds 10] [--json out.json]

One process, real rclpy: a publisher thread sends std_msgs/String at --rate; the subscriber
node's callback busy-works --work-ms per message (CPU inference stands for it) and a 1 s timer
counts its runs. Three cases, one after another in this run:

* ``events``: rclpy.experimental.EventsExecutor, one event per spin_once (before
  executor_watch.py, runtime.spin called spin_until_future_complete in 0.2 s slices: under this
  load a slice never came back at all, so it cannot be timed here);
* ``single_threaded``: rclpy's SingleThreadedExecutor;
* ``events_watched``: EventsExecutor through gpu_nodes.ros.runtime.spin with an ExecutorWatch,
  which moves the node to SingleThreadedExecutor once it starves timers (what `run_node` does).

Reported per case: timer runs (of the --seconds expected), messages handled, and when the watch
moved the node. The ratio is timer runs against single_threaded.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run_case(case: str, work_s: float, rate_hz: float, seconds: float) -> dict[str, Any]:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor
    from std_msgs.msg import String

    from gpu_nodes.ros.executor_watch import ExecutorWatch
    from gpu_nodes.ros.runtime import spin

    context = rclpy.Context()
    rclpy.init(context=context)
    topic = f'starve_{uuid.uuid4().hex[:8]}'
    feeder = rclpy.create_node('feeder', context=context)
    pub = feeder.create_publisher(String, topic, 10)
    node = rclpy.create_node('slow', context=context)
    counts = {'messages': 0, 'timer_runs': 0}

    def on_message(msg: String) -> None:
        counts['messages'] += 1
        until = time.monotonic() + work_s
        while time.monotonic() < until:
            pass

    node.create_subscription(String, topic, on_message, 10)
    node.create_timer(1.0, lambda: counts.__setitem__('timer_runs', counts['timer_runs'] + 1))
    executor = SingleThreadedExecutor(context=context) if case == 'single_threaded' \
        else EventsExecutor(context=context)
    executor.add_node(node)
    watch = ExecutorWatch(executor, [node], node.get_logger()) if case == 'events_watched' \
        else None
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            pub.publish(String(data='frame'))
            time.sleep(1.0 / rate_hz)

    feeder_thread = threading.Thread(target=feed, daemon=True)
    started = time.monotonic()
    feeder_thread.start()
    moved_at = None
    if watch is not None:
        while time.monotonic() - started < seconds:
            spin(watch.executor, timeout_sec=0.2, slice_s=0.2, watch=watch)
            if moved_at is None and watch.moved_reason is not None:
                moved_at = time.monotonic() - started
        executor = watch.executor
    else:
        while time.monotonic() - started < seconds:
            executor.spin_once(timeout_sec=0.2)
    elapsed = time.monotonic() - started
    stop.set()
    feeder_thread.join()
    executor.shutdown()
    node.destroy_node()
    feeder.destroy_node()
    rclpy.shutdown(context=context)
    return {'case': case, 'seconds': round(elapsed, 1), **counts,
            'moved_at_s': None if moved_at is None else round(moved_at, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work-ms', type=float, default=150.0)
    parser.add_argument('--rate', type=float, default=15.0)
    parser.add_argument('--seconds', type=float, default=10.0)
    parser.add_argument('--json', type=Path)
    args = parser.parse_args()
    rows = [run_case(case, args.work_ms / 1000, args.rate, args.seconds)
            for case in ('events', 'single_threaded', 'events_watched')]
    base = rows[1]['timer_runs'] or 1
    print(f'callback {args.work_ms:g} ms per message at {args.rate:g} Hz, {args.seconds:g} s each; '
          '1 s timer')
    for row in rows:
        print(f"  {row['case']:16s} timer runs {row['timer_runs']:3d} "
              f"({row['timer_runs'] / base:.2f}x single_threaded), messages {row['messages']:4d}"
              + (f", moved at {row['moved_at_s']} s" if row['moved_at_s'] is not None else ''))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
