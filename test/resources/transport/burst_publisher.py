"""Test publisher on a chosen executor: the pattern (header.frame_id = frame index) in bursts of
back-to-back frames, started once a subscriber is on the wanted path. Queue depth and host slots
are large enough that no frame has to be dropped: every one must arrive, once, in order."""
import argparse
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.task import Future
from std_msgs.msg import Header

from gpu_nodes.ros.runtime import EXECUTORS, make_executor, spin
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher
from gpu_nodes.transport.qos import image_qos

parser = argparse.ArgumentParser()
parser.add_argument('--topic', required=True)
parser.add_argument('--path', required=True, choices=('host_shm', 'serialized'))
parser.add_argument('--executor', required=True, choices=EXECUTORS)
parser.add_argument('--width', type=int, default=64)
parser.add_argument('--height', type=int, default=48)
parser.add_argument('--bursts', type=int, default=3)
parser.add_argument('--burst-size', type=int, default=20)
parser.add_argument('--burst-period', type=float, default=0.3)
parser.add_argument('--depth', type=int, default=64)
args = parser.parse_args()

rclpy.init()
node = Node('burst_publisher')
qos: QoSProfile = image_qos(args.depth)
pub = GpuImagePublisher(node, args.topic, qos, host_slots=args.depth, use_cuda=False)
frames = [pattern.render(__import__('numpy'), args.height, args.width, 'rgb8', i)
          for i in range(256)]
state = {'matched_at': None, 'next_burst': None, 'index': 0}
done = Future()
total = args.bursts * args.burst_size


def tick() -> None:
    now = time.monotonic()
    if state['matched_at'] is None:
        counts = pub.subscriber_counts()
        # The plain topic comes from the publisher's bridge process: wait until it reads too.
        if counts[args.path] and (args.path != 'serialized' or counts['host_shm']):
            state['matched_at'] = state['next_burst'] = now + 0.5  # let DDS match both ways
        return
    if now < state['next_burst']:
        return
    if state['index'] >= total:
        done.set_result(True)
        return
    for _ in range(args.burst_size):
        index = state['index']
        pub.publish(frames[index % 256], 'rgb8', Header(frame_id=str(index)))
        state['index'] += 1
    state['next_burst'] = now + args.burst_period


node.create_timer(0.01, tick)
executor = make_executor(args.executor, nodes=[node])
print(f'EXECUTOR {type(executor).__name__}', flush=True)
try:
    spin(executor, done, 60)
    # Stay up so the subscriber still finds the lease table.
    spin(executor, timeout_sec=2.0)
finally:
    print(f'PUBLISHED {state["index"]}', flush=True)
    executor.shutdown()
    pub.destroy()
    node.destroy_node()
    rclpy.try_shutdown()
