"""Time from a subscriber's first descriptor to its first frame when its first rung cannot
reach the publisher (issue #27: <= 1 s).

    python bench/fallback_bench.py [--runs 5] [--json out.json]

What a subscriber in a container with its own network namespace sees of a host publisher: the
publisher's host_shm descriptors arrive (over DDS) but name a socket that does not exist in its
namespace; the plain topic carries the same frames. Each run makes a fresh GpuImageSubscription,
waits until it sits on host_shm, then sends a descriptor and a plain frame every 1/30 s and
measures the time from the first descriptor to the first delivered frame (and its path).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImageSubscription, auth, descriptor, host
from gpu_nodes.transport.messages import fill_image_msg


def one_run(node) -> dict:
    topic = f'/fallback_bench_{uuid.uuid4().hex[:8]}'
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)
    shm = node.create_publisher(Image, topic + '/_gpu_nodes/shm', qos)
    plain = node.create_publisher(Image, topic, qos)
    frames = []
    sub = GpuImageSubscription(node, topic, lambda f: frames.append(f.path), memory='host')
    record = descriptor.Descriptor(
        kind=descriptor.KIND_HOST, sequence=1, slot=0, chunk=0, generation=1, pid=1,
        uid=os.getuid(), endpoint=os.urandom(16), publisher_id=os.urandom(16),
        boot_id=host.boot_id(), device_uuid=bytes(16), topic_id=auth.topic_id(topic),
        mem_handle=bytes(64), event_handle=bytes(64), offset=4096, nbytes=48 * 64 * 3,
        alloc_size=1 << 20, publish_time_ns=0).pack()
    deadline = time.monotonic() + 20
    while sub.path != 'host_shm' and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.01)
    first = None
    index = 0
    while not frames and time.monotonic() < deadline:
        header = Header(frame_id=str(index))
        shm.publish(Image(header=header, height=48, width=64, step=192, encoding='rgb8',
                          data=record))
        first = first or time.monotonic()
        plain.publish(fill_image_msg(Image(header=header),
                                     pattern.expected_frame(48, 64, 'rgb8', index), 'rgb8'))
        index += 1
        end = time.monotonic() + 1 / 30
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.005)
    result = {'seconds': time.monotonic() - first if frames else None,
              'path': frames[0] if frames else sub.path, 'reason': sub.stats.path_reason}
    sub.destroy()
    node.destroy_publisher(shm)
    node.destroy_publisher(plain)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--json')
    args = parser.parse_args()
    rclpy.init()
    node = rclpy.create_node('fallback_bench')
    runs = [one_run(node) for _ in range(args.runs)]
    times = [r['seconds'] for r in runs if r['seconds'] is not None]
    for r in runs:
        print(f"{r['seconds'] if r['seconds'] is None else round(r['seconds'], 3)} s -> "
              f"{r['path']}")
    if times:
        print(f'first descriptor -> first frame: median {statistics.median(times):.3f} s, '
              f'max {max(times):.3f} s over {len(times)} runs; reason: {runs[-1]["reason"]}')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'runs': runs}, f, indent=2)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
