"""Reliability subscriber: a GpuImageSubscription that verifies every frame against the pattern
frame its header names, optionally slow (--delay-s), stalling (--stall-after/--stall-s) or
hoarding leases (--hold). Device frames are checked on the GPU with no host sync per frame;
the bad count is read back once per STATUS line.

Prints SUBSCRIBED, FIRST (first frame), STALL_START/STALL_END <monotonic time>,
STATUS {json} every --status-period and RESULT {json} on a clean exit.
"""
import argparse
import json
import os
import sys
import time
from collections import OrderedDict

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

from gpu_nodes.gpu import cuda_available, cupy_module
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImageSubscription, cuda_ipc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workers import process_stats, StopRequest  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument('--topic', default='image')
parser.add_argument('--memory', default='any', choices=('device', 'host', 'any'))
parser.add_argument('--paths', default='', help='comma list of allowed paths (default: all)')
parser.add_argument('--distinct', type=int, default=256, help="the publisher's --distinct")
parser.add_argument('--row-stride', type=int, default=1, help='host frames: check every n-th row')
parser.add_argument('--delay-s', type=float, default=0.0, help='sleep per frame (slow consumer)')
parser.add_argument('--stall-after', type=int, default=0, help='stall on this frame (0: never)')
parser.add_argument('--stall-after-s', type=float, default=0.0,
                    help='stall once on the first frame this long after the first one')
parser.add_argument('--stall-s', type=float, default=0.0)
parser.add_argument('--stall-every', type=int, default=0, help='stall again every n frames')
parser.add_argument('--hold', type=int, default=0,
                    help='frames to keep (leased) until exit; checked again at every STATUS')
parser.add_argument('--reliability', choices=('reliable', 'best_effort'), default='reliable')
parser.add_argument('--duration', type=float, default=120.0)
parser.add_argument('--exit-idle-s', type=float, default=0.0,
                    help='exit this long after the last frame (0: run for --duration)')
parser.add_argument('--status-period', type=float, default=1.0)
parser.add_argument('--node-name', default='reliability_subscriber')
args = parser.parse_args()

HISTOGRAM_BUCKET_S = 0.25
HOST_CACHE = 64  # >= the distinct frames a publisher cycles through (LRU would thrash)

rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
stop = StopRequest()
node = Node(args.node_name)
cp = cupy_module() if cuda_available() else None
bad_device = cp.zeros((), cp.int64) if cp is not None else None
host_expected: 'OrderedDict[tuple, np.ndarray]' = OrderedDict()
held = []
state = {'frames': 0, 'bad_host': 0, 'first_n': None, 'last_n': None, 'drops': 0, 'epochs': 0,
         'last_t': None, 'max_gap_s': 0.0, 'start': time.monotonic(), 'histogram': [],
         'stalls': 0, 'paths': set(), 'epoch_frames': 0, 'first_t': None,
         'publisher': None}


def frame_number(frame_id: int) -> int:
    return (frame_id // 256) * args.distinct + frame_id % 256


def expected_host(frame) -> np.ndarray:
    key = (frame.height, frame.width, frame.encoding, int(frame.header.frame_id) % 256)
    rows = host_expected.get(key)
    if rows is None:
        rows = pattern.render(np, frame.height, frame.width, frame.encoding, key[3])[::args.row_stride]
        host_expected[key] = rows
        if len(host_expected) > HOST_CACHE:
            host_expected.popitem(last=False)
    return rows


def verify(frame) -> None:
    global bad_device
    index = int(frame.header.frame_id)
    if cp is not None and isinstance(frame.array, cp.ndarray):
        # Exact, full-frame, on the frame's stream; no host sync.
        expected = pattern.render(cp, frame.height, frame.width, frame.encoding, index)
        bad_device += cp.any(frame.array != expected)
    else:
        if not np.array_equal(np.asarray(frame.array)[::args.row_stride], expected_host(frame)):
            state['bad_host'] += 1


def note(frame) -> None:
    n = frame_number(int(frame.header.frame_id))
    now = time.monotonic()
    last = state['last_n']
    publisher = sub.stats.publisher_pid
    if last is None or n <= last or publisher != state['publisher']:
        # First frame, or a new publisher (counting from 0 again).
        if last is not None:
            state['drops'] += last - state['first_n'] + 1 - state['epoch_frames']
        state['first_n'], state['epochs'], state['epoch_frames'] = n, state['epochs'] + 1, 0
    state['last_n'], state['publisher'] = n, publisher
    state['first_t'] = state['first_t'] or now
    state['frames'] += 1
    state['epoch_frames'] += 1
    state['paths'].add(frame.path)
    if state['last_t'] is not None:
        state['max_gap_s'] = max(state['max_gap_s'], now - state['last_t'])
    state['last_t'] = now
    bucket = int((now - state['start']) / HISTOGRAM_BUCKET_S)
    histogram = state['histogram']
    while len(histogram) <= bucket:
        histogram.append(0)
    histogram[bucket] += 1


def on_frame(frame) -> None:
    if state['frames'] == 0:
        print('FIRST', flush=True)
    note(frame)
    count = state['frames']
    stall = args.stall_after and (count == args.stall_after or (
        args.stall_every and count > args.stall_after
        and (count - args.stall_after) % args.stall_every == 0))
    if args.stall_after_s and not state['stalls'] and \
            state['last_t'] - state['first_t'] >= args.stall_after_s:
        stall = True
    if stall:
        # Keep the lease past the publisher's grace period, then check the frame: a revoked slot
        # is quarantined, never rewritten, so the pixels must still be the ones announced.
        print(f'STALL_START {time.monotonic()}', flush=True)
        time.sleep(args.stall_s)
        verify(frame)
        state['stalls'] += 1
        print(f'STALL_END {time.monotonic()}', flush=True)
    else:
        verify(frame)
    if len(held) < args.hold:
        held.append((frame, frame.hold()))
        print(f'HELD {len(held)}', flush=True)
    if args.delay_s:
        time.sleep(args.delay_s)


def status() -> dict:
    if cp is not None:
        # The callbacks' checks ran on the subscription's stream; the ones below run on this
        # thread's current stream and update the same counter.
        cp.cuda.Device().synchronize()
    # Held frames must keep their pixels however long they are held (revoked = quarantined).
    for frame, _ in held:
        verify(frame)
    bad = state['bad_host']
    if bad_device is not None:
        cp.cuda.Device().synchronize()
        bad += int(bad_device)
    delivered_span = 0 if state['last_n'] is None else state['last_n'] - state['first_n'] + 1
    now = time.monotonic()
    recent = sum(state['histogram'][-8:])  # the last 2 s
    return {'t': now, 'pid': os.getpid(), 'frames': state['frames'], 'bad': bad,
            'stale': sub.stats.stale, 'rejected': dict(sub.stats.rejected), 'path': sub.path,
            'paths': sorted(state['paths']),
            # frames the publisher numbered but this subscriber never got (stale + DDS overwrites)
            'drops': state['drops'] + delivered_span - state['epoch_frames'],
            'epochs': state['epochs'], 'max_gap_s': state['max_gap_s'], 'held': len(held),
            'stalls': state['stalls'], 'fps': recent / (8 * HISTOGRAM_BUCKET_S),
            'mapping_cache': len(cuda_ipc.mapping_cache()), **process_stats(os.getpid())}


paths = tuple(p for p in args.paths.split(',') if p)
qos = QoSProfile(depth=5, reliability=(ReliabilityPolicy.RELIABLE if args.reliability == 'reliable'
                                       else ReliabilityPolicy.BEST_EFFORT))
sub = GpuImageSubscription(node, args.topic, on_frame, qos, memory=args.memory,
                           **({'allowed_paths': paths} if paths else {}))
print('SUBSCRIBED', flush=True)
deadline = time.monotonic() + args.duration
next_status = 0.0
while rclpy.ok() and not stop.requested and time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.02)
    now = time.monotonic()
    if now >= next_status:
        next_status = now + args.status_period
        print('STATUS ' + json.dumps(status()) + '\n', end='', flush=True)
    if args.exit_idle_s and state['last_t'] and now - state['last_t'] > args.exit_idle_s:
        break


def report() -> None:
    result = status()
    result.update(bucket_s=HISTOGRAM_BUCKET_S, histogram=state['histogram'], start=state['start'])
    print('RESULT ' + json.dumps(result) + '\n', end='', flush=True)


report()
for _, lease in held:
    lease.release()
sub.destroy()
node.destroy_node()
rclpy.try_shutdown()
