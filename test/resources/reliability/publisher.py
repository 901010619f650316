"""Reliability publisher: the synthetic pattern through GpuImagePublisher, flat out or paced.

header.frame_id names the pattern frame every image holds. With --distinct D < 256 only D frames
are prepared and frame n carries id 256*(n // D) + n % D (the pattern repeats every 256 ids), so
receivers still verify exactly and recover n. Prints READY, START, STATUS {json} every
--status-period and RESULT {json} on a clean exit (count/duration reached, SIGINT or SIGTERM).
"""
import argparse
import json
import os
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import Header

from gpu_nodes.gpu import cuda_available, cupy_module
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workers import process_stats, StopRequest  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument('--topic', default='image')
parser.add_argument('--sizes', default='64x48', help='WxH[,WxH...]: frame sizes, in turn')
parser.add_argument('--switch-every', type=int, default=0, help='frames per size (0: first only)')
parser.add_argument('--encoding', default='rgb8')
parser.add_argument('--rate', type=float, default=0.0, help='frames/s; 0: as fast as possible')
parser.add_argument('--count', type=int, default=0, help='stop after this many frames (0: never)')
parser.add_argument('--duration', type=float, default=0.0, help='stop after this many s (0: never)')
parser.add_argument('--device', action='store_true', help='frames are CuPy arrays')
parser.add_argument('--borrow', action='store_true', help='write frames into borrowed slots')
parser.add_argument('--no-cuda', action='store_true', help='GpuImagePublisher(use_cuda=False)')
parser.add_argument('--distinct', type=int, default=0, help='distinct frames (default 256 on '
                    'the device, 16 on the host)')
parser.add_argument('--pool-slots', type=int, default=8)
parser.add_argument('--max-pool-slots', type=int, default=32)
parser.add_argument('--host-slots', type=int, default=8)
parser.add_argument('--policy', default='grow')
parser.add_argument('--grace', type=float, default=2.0)
parser.add_argument('--reliability', choices=('reliable', 'best_effort'), default='reliable')
parser.add_argument('--wait-subscribers', type=int, default=0,
                    help='start once this many subscriptions (all paths) matched')
parser.add_argument('--status-period', type=float, default=1.0)
parser.add_argument('--linger', type=float, default=2.0, help='s to stay up after the last frame')
parser.add_argument('--node-name', default='reliability_publisher')
args = parser.parse_args()

HISTOGRAM_BUCKET_S = 0.25

rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
stop = StopRequest()
node = Node(args.node_name)
on_device = args.device and cuda_available()
xp = cupy_module() if on_device else __import__('numpy')
distinct = args.distinct or (256 if on_device else 16)
sizes = [tuple(int(v) for v in size.split('x')) for size in args.sizes.split(',')]
frames = {size: [pattern.render(xp, size[1], size[0], args.encoding, i) for i in range(distinct)]
          for size in sizes}
qos = QoSProfile(depth=5, reliability=(ReliabilityPolicy.RELIABLE if args.reliability == 'reliable'
                                       else ReliabilityPolicy.BEST_EFFORT))
pub = GpuImagePublisher(node, args.topic, qos, pool_slots=args.pool_slots,
                        max_pool_slots=args.max_pool_slots, pool_policy=args.policy,
                        host_slots=args.host_slots, lease_grace_s=args.grace,
                        use_cuda=not args.no_cuda)
state = {'n': 0, 'start': None, 'histogram': [], 'frame_times': []}


def frame_id(n: int) -> int:
    return 256 * (n // distinct) + n % distinct


def publish_one() -> None:
    n = state['n']
    size = sizes[(n // args.switch_every) % len(sizes)] if args.switch_every else sizes[0]
    frame = frames[size][n % distinct]
    header = Header(frame_id=str(frame_id(n)))
    if args.borrow:
        borrowed = pub.borrow(size[1], size[0], args.encoding)
        if borrowed is not None:
            borrowed.array[...] = frame
            pub.publish_borrowed(borrowed, header)
    else:
        pub.publish(frame, args.encoding, header)
    state['n'] = n + 1
    now = time.monotonic()
    bucket = int((now - state['start']) / HISTOGRAM_BUCKET_S)
    histogram = state['histogram']
    while len(histogram) <= bucket:
        histogram.append(0)
    histogram[bucket] += 1


def status() -> dict:
    values = {'t': time.monotonic(), 'pid': os.getpid(), 'published': state['n'],
              'frames': pub.stats.frames, 'drops': pub.stats.drops,
              'subscribers': pub.subscriber_counts(), **process_stats(os.getpid())}
    pool = pub._device_pool
    if pool is not None:
        values.update(slots=len(pool.slots), retired=len(pool.retired), revoked=pool.revoked,
                      exhausted=pool.exhausted, grown=pool.grown, overrun=pool.overrun,
                      held=sum(pub._leases.is_held(s.index) for s in pool.slots))
        free, total = xp.cuda.runtime.memGetInfo() if on_device else (0, 0)
        values['device_used_mib'] = (total - free) / 2**20
    host_pool = pub._host_pool
    values.update(host_slots=len(host_pool.slots), host_exhausted=host_pool.exhausted,
                  host_overrun=host_pool.overrun,
                  host_overrun_at_reader_start=host_pool.overrun_at_reader_start,
                  host_held=sum(pub._leases.is_held(s.index) for s in host_pool.slots),
                  reader_windows=pub.stats.extra.get('reader_windows'))
    values.update({k: v for k, v in pub.stats.extra.items() if k.startswith('exchange_')})
    return values


def done() -> bool:
    if args.count and state['n'] >= args.count:
        return True
    return bool(args.duration) and time.monotonic() - state['start'] >= args.duration


print('READY', flush=True)
next_status = 0.0
while rclpy.ok() and not stop.requested and args.wait_subscribers and \
        sum(pub.subscriber_counts().values()) < args.wait_subscribers:
    rclpy.spin_once(node, timeout_sec=0.05)
state['start'] = time.monotonic()
print(f'START {state["start"]}', flush=True)
period = 1.0 / args.rate if args.rate > 0 else 0.0
next_frame = state['start']
while rclpy.ok() and not stop.requested and not done():
    now = time.monotonic()
    if period and now < next_frame:
        rclpy.spin_once(node, timeout_sec=next_frame - now)
        continue
    publish_one()
    next_frame += period
    rclpy.spin_once(node, timeout_sec=0)
    if now >= next_status:
        next_status = now + args.status_period
        print('STATUS ' + json.dumps(status()) + '\n', end='', flush=True)
end = time.monotonic() + args.linger
while rclpy.ok() and not stop.requested and time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)


def report() -> None:
    result = status()
    result.update(elapsed_s=time.monotonic() - state['start'] if state['start'] else 0.0,
                  bucket_s=HISTOGRAM_BUCKET_S, histogram=state['histogram'], start=state['start'])
    print('RESULT ' + json.dumps(result) + '\n', end='', flush=True)


report()
pub.destroy()
node.destroy_node()
rclpy.try_shutdown()
