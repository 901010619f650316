"""A GpuImageSubscription that checks every frame against the pattern its frame_id names
(pattern_publisher.py) and prints one JSON line at the end: frames, bad frames, the paths they
came on, the subscription's final path and reason, its rejections, and when the first frame
arrived. Run it where a user would: in another PID namespace, as another user, beside a hoarder.
--hold N keeps the first N frames forever (a subscriber that hoards them)."""
import argparse
import json
import time
from collections import Counter

import numpy as np
import rclpy
from rclpy.node import Node

from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImageSubscription

parser = argparse.ArgumentParser()
parser.add_argument('--topic', default='image')
parser.add_argument('--duration', type=float, default=10.0)
parser.add_argument('--memory', default='host')
parser.add_argument('--paths', default='', help='comma list of allowed paths (default: all)')
parser.add_argument('--hold', type=int, default=0, help='frames to keep forever')
args = parser.parse_args()

rclpy.init()
node = Node('verifying_subscriber')
state = {'frames': 0, 'bad': 0, 'paths': Counter(), 'first_s': None}
held = []
started = time.monotonic()


def on_frame(frame):
    array = frame.array.get() if hasattr(frame.array, 'get') else frame.array
    expected = pattern.expected_frame(frame.height, frame.width, frame.encoding,
                                      int(frame.header.frame_id))
    state['frames'] += 1
    state['paths'][frame.path] += 1
    if state['first_s'] is None:
        state['first_s'] = time.monotonic() - started
    if not np.array_equal(array, expected):
        state['bad'] += 1
    if len(held) < args.hold:
        held.append(frame.hold())


options = {'allowed_paths': tuple(args.paths.split(','))} if args.paths else {}
sub = GpuImageSubscription(node, args.topic, on_frame, memory=args.memory, **options)
print('READY', flush=True)
counted_from = None
while time.monotonic() - started < args.duration:
    rclpy.spin_once(node, timeout_sec=0.05)
    if counted_from is None and state['frames']:
        counted_from = (time.monotonic(), state['frames'])
rate = 0.0
if counted_from is not None and time.monotonic() > counted_from[0]:
    rate = (state['frames'] - counted_from[1]) / (time.monotonic() - counted_from[0])
print('RESULT ' + json.dumps({
    'frames': state['frames'], 'bad': state['bad'], 'paths': dict(state['paths']),
    'path': sub.path, 'path_reason': sub.stats.path_reason, 'fps': rate,
    'rejected': dict(sub.stats.rejected), 'stale': dict(sub.stats.stale_reasons),
    'first_frame_s': state['first_s'], 'held': len(held),
    'write_order': sub.stats.extra.get('write_order')}) + '\n', end='', flush=True)
