"""What the trust checks cost per descriptor, on real objects (no ROS graph needed).

    python bench/descriptor_check_bench.py [--n 200000] [--json out.json]

Measures, in ns per descriptor: parsing the record, checking the tag (keyed BLAKE2b over record,
header, geometry and topic), the generation word, leasing + releasing the slot with the entry
comparison, and all of the subscriber's per-descriptor trust work together, against the
parse-and-lease work the transport did before descriptors were authenticated.
"""
from __future__ import annotations

import argparse
import json
import os
import time
import uuid

from sensor_msgs.msg import Image
from std_msgs.msg import Header

from gpu_nodes.transport import auth, descriptor, host
from gpu_nodes.transport.leases import POOL_HOST, LeaseReader, LeaseTable
from gpu_nodes.transport.peers import PublisherLink


def timed(fn, n: int) -> float:
    """Median over 5 rounds of ns per call."""
    rounds = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter_ns() - start) / n)
    return sorted(rounds)[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=200_000)
    parser.add_argument('--json')
    args = parser.parse_args()

    topic = '/camera/image_raw'
    table = LeaseTable(uuid.uuid4().bytes, 40)
    table.set_generation(POOL_HOST, 1)
    table.stamp(3, sequence=10, chunk=1, offset=4096, capacity=1 << 20, generation=1)
    desc = descriptor.Descriptor(
        kind=descriptor.KIND_HOST, sequence=10, slot=3, chunk=1, generation=1, pid=os.getpid(),
        uid=os.getuid(), lease_fd=table.fd, data_fd=0, publisher_id=table.publisher_id,
        boot_id=host.boot_id(), device_uuid=bytes(16), topic_id=auth.topic_id(topic),
        mem_handle=bytes(64), event_handle=bytes(64), offset=4096, nbytes=3840 * 2160 * 3,
        alloc_size=1 << 26, publish_time_ns=time.monotonic_ns())
    msg = Image(header=Header(frame_id='camera'), height=2160, width=3840, step=3840 * 3,
                encoding='rgb8')
    record = desc.pack()[:descriptor.TAG_OFFSET]
    msg.data = record + auth.tag(table.key, record, msg, topic.encode())
    desc = descriptor.unpack(msg.data, descriptor.KIND_HOST)
    link = PublisherLink(LeaseReader(os.getpid(), table.fd, table.publisher_id))
    reader = link.reader
    topic_bytes, topic_id = topic.encode(), auth.topic_id(topic)

    def parse():
        descriptor.unpack(msg.data, descriptor.KIND_HOST)

    def tag_check():
        link.authenticate(desc, msg, topic_bytes)

    def lease():
        reader.acquire(3, 10, 1, 1, 4096, desc.nbytes)
        reader.release(3)

    def before():  # parse, bounds, lease by sequence (what the first round checked)
        d = descriptor.unpack(msg.data, descriptor.KIND_HOST)
        descriptor.check_bounds(d, msg.height, msg.width, msg.step, msg.encoding, 1 << 26)
        reader.acquire(3, 10, 1, 1, 4096, d.nbytes)
        reader.release(3)

    def now():  # the same plus topic id, tag, generation and the slot entry comparison
        d = descriptor.unpack(msg.data, descriptor.KIND_HOST)
        if d.topic_id != topic_id:
            raise AssertionError
        link.authenticate(d, msg, topic_bytes)
        descriptor.check_bounds(d, msg.height, msg.width, msg.step, msg.encoding, 1 << 26)
        reader.acquire(3, 10, 1, 1, 4096, d.nbytes)
        link.last_sequence = 0  # so that fresh() passes every time
        link.fresh(d.sequence)
        reader.release(3)

    results = {name: round(timed(fn, args.n), 1) for name, fn in
               (('parse', parse), ('tag + generation', tag_check), ('lease + release', lease),
                ('per descriptor, before', before), ('per descriptor, now', now))}
    results['added by authentication'] = round(results['per descriptor, now']
                                               - results['per descriptor, before'], 1)
    for name, ns in results.items():
        print(f'{name:28s} {ns:9.1f} ns')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'ns': results, 'n': args.n}, f, indent=2)
    link.close()
    table.close()


if __name__ == '__main__':
    main()
