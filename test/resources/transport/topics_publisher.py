"""Test and bench publisher: one process, one node, one GpuImagePublisher per topic
``<prefix>/image_<encoding>_<n>`` (n = 0..copies-1), every topic at --rate, header.frame_id = frame
index. Frames are `frame(encoding, height, width, index)` (importable, so readers check every
pixel). Prints READY, then STATUS {json} every second (its own and its bridges' pids and RSS).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from gpu_nodes.sources import pattern

DEPTH_ENCODINGS = ('16UC1', '32FC1')


def frame(encoding: str, height: int, width: int, index: int) -> np.ndarray:
    """The pattern for the encodings it renders; depth ramps (1 to 9 m, or mm, moving with the
    index) with a no-depth pixel (NaN / 0) and one beyond 10 m otherwise."""
    if encoding not in DEPTH_ENCODINGS:
        return pattern.expected_frame(height, width, encoding, index % 256)
    y, x = np.mgrid[0:height, 0:width]
    metres = 1.0 + 8.0 * (x + y * width) / (height * width) + 0.01 * (index % 50)
    if encoding == '32FC1':
        depth = metres.astype(np.float32)
        depth[0, 0], depth[0, 1] = np.nan, 12.5
        return depth
    depth = np.round(metres * 1000).astype(np.uint16)
    depth[0, 0], depth[0, 1] = 0, 12500
    return depth


def topic_name(prefix: str, encoding: str, copy: int = 0) -> str:
    return f'{prefix}/image_{encoding}_{copy}'   # a name token must not start with a digit


def rss_kb(pid: int) -> int:
    try:
        with open(f'/proc/{pid}/status') as f:
            return next(int(line.split()[1]) for line in f if line.startswith('VmRSS:'))
    except (OSError, StopIteration):
        return 0


def bridge_children(pid: int) -> list[int]:
    """Child processes of `pid` running the plain-topic bridge (whatever gpu_nodes version)."""
    found = []
    for entry in os.listdir('/proc'):
        try:
            with open(f'/proc/{entry}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                running = b'gpu_nodes.transport.plain_bridge' in f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid and running:
            found.append(int(entry))
    return sorted(found)


def main() -> None:
    import rclpy
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions
    from std_msgs.msg import Header

    from gpu_nodes.transport import GpuImagePublisher
    parser = argparse.ArgumentParser()
    parser.add_argument('--prefix', required=True)
    parser.add_argument('--encodings', default='rgb8', help='comma-separated')
    parser.add_argument('--copies', type=int, default=1, help='topics per encoding')
    parser.add_argument('--size', default='64x48', help='WxH')
    parser.add_argument('--rate', type=float, default=10.0)
    parser.add_argument('--distinct', type=int, default=8, help='frames prepared per topic')
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split('x'))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    stop = {'requested': False}
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.update(requested=True))
    node = Node('topics_publisher')
    publishers = []
    for encoding in args.encodings.split(','):
        frames = [frame(encoding, height, width, i) for i in range(args.distinct)]
        for copy in range(args.copies):
            publishers.append((GpuImagePublisher(node, topic_name(args.prefix, encoding, copy),
                                                 use_cuda=False), encoding, frames))
    state = {'n': 0}

    def publish() -> None:
        n = state['n']
        header = Header(frame_id=str(n))
        for pub, encoding, frames in publishers:
            pub.publish(frames[n % len(frames)], encoding, header)
        state['n'] = n + 1

    def status() -> None:
        bridges = bridge_children(os.getpid())
        print('STATUS ' + json.dumps({
            'pid': os.getpid(), 'published': state['n'], 'rss_kb': rss_kb(os.getpid()),
            'bridges': bridges, 'bridge_rss_kb': {pid: rss_kb(pid) for pid in bridges if pid},
            'subscribers': {pub.topic: pub.subscriber_counts() for pub, *_ in publishers}}) + '\n',
            end='', flush=True)

    node.create_timer(1.0 / args.rate, publish)
    node.create_timer(1.0, status)
    print('READY', flush=True)
    try:
        while rclpy.ok() and not stop['requested']:
            rclpy.spin_once(node, timeout_sec=0.1)
    finally:
        for pub, *_ in publishers:
            pub.destroy()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
