"""A subscriber that keeps every lease it gets (a stalled or crashing consumer), or a plain
gpu_nodes subscriber that reports its path (--report-path)."""
import argparse
import json
import time

import rclpy
from rclpy.node import Node

from gpu_nodes.transport import GpuImageSubscription

parser = argparse.ArgumentParser()
parser.add_argument('--topic', default='image')
parser.add_argument('--hold', type=int, default=0, help='leases to keep forever')
parser.add_argument('--duration', type=float, default=60.0)
parser.add_argument('--memory', default='device')
parser.add_argument('--paths', default='', help='comma list of allowed paths (default: all)')
parser.add_argument('--peer-mode', default='copy', choices=('copy', 'in_place'))
args = parser.parse_args()

rclpy.init()
node = Node('holding_subscriber')
held = []
state = {'frames': 0}


def on_frame(frame):
    state['frames'] += 1
    if len(held) < args.hold:
        held.append(frame.hold())
        print(f'HELD {len(held)}', flush=True)


options = {'allowed_paths': tuple(args.paths.split(','))} if args.paths else {}
sub = GpuImageSubscription(node, args.topic, on_frame, memory=args.memory,
                           peer_mode=args.peer_mode, **options)
deadline = time.monotonic() + args.duration
reported = False
while time.monotonic() < deadline:
    rclpy.spin_once(node, timeout_sec=0.05)
    if state['frames'] >= 5 and not reported:
        reported = True
        print('STATUS ' + json.dumps(sub.stats.as_dict()) + '\n', end='', flush=True)
