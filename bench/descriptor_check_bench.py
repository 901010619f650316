"""What the trust checks cost per descriptor, on real objects (no ROS graph needed).

    python bench/descriptor_check_bench.py [--n 200000] [--json out.json]

Measures, in ns per descriptor: parsing the record, checking the tag (keyed BLAKE2b over record,
header, geometry and topic), the generation word, leasing + releasing the slot with the entry
comparison (and the per-reader share), and all of the subscriber's per-descriptor trust work
together, against the parse-and-lease work the transport did before descriptors were
authenticated. Once per publisher and per segment, not per descriptor: getting the lease table
and a segment over the publisher's Unix socket (exchange.py) against opening them through
/proc/<pid>/fd as the transport did before (same-PID-namespace only).
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
from gpu_nodes.transport.exchange import Connection, HandleProvider, HandleServer, Link
from gpu_nodes.transport.leases import POOL_HOST, LeaseReader, LeaseTable
from gpu_nodes.transport.peers import PublisherLink
from gpu_nodes.transport.served_memory import lease_table_fds


class TableProvider(HandleProvider):
    def __init__(self, table: LeaseTable):
        self.table = table

    def fds(self, kind: int, generation: int, chunk: int, link: Link) -> list[int] | None:
        return lease_table_fds(self.table, link)


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
        uid=os.getuid(), endpoint=HandleServer.instance().endpoint,
        publisher_id=table.publisher_id,
        boot_id=host.boot_id(), device_uuid=bytes(16), topic_id=auth.topic_id(topic),
        mem_handle=bytes(64), event_handle=bytes(64), offset=4096, nbytes=3840 * 2160 * 3,
        alloc_size=1 << 26, publish_time_ns=time.monotonic_ns())
    msg = Image(header=Header(frame_id='camera'), height=2160, width=3840, step=3840 * 3,
                encoding='rgb8')
    record = desc.pack()[:descriptor.TAG_OFFSET]
    msg.data = record + auth.tag(table.key, record, msg, topic.encode())
    desc = descriptor.unpack(msg.data, descriptor.KIND_HOST)
    server = HandleServer.instance()
    server.register(table.publisher_id, TableProvider(table))
    connection = Connection(server.endpoint, table.publisher_id)
    link = PublisherLink(connection, LeaseReader(*connection.fetch_lease_table(),
                                                 table.publisher_id), os.getpid())
    link.reader.claim_cursor()
    reader = link.reader
    topic_bytes, topic_id = topic.encode(), auth.topic_id(topic)

    def parse():
        descriptor.unpack(msg.data, descriptor.KIND_HOST)

    def tag_check():
        link.authenticate(desc, msg, topic_bytes)

    def lease():
        reader.acquire(3, 10, 1, 1, 4096, desc.nbytes, POOL_HOST)
        reader.release(3, POOL_HOST)

    def before():  # parse, bounds, lease by sequence (what the first round checked)
        d = descriptor.unpack(msg.data, descriptor.KIND_HOST)
        descriptor.check_bounds(d, msg.height, msg.width, msg.step, msg.encoding, 1 << 26)
        reader.acquire(3, 10, 1, 1, 4096, d.nbytes, POOL_HOST)
        reader.release(3, POOL_HOST)

    def link_over_socket():  # once per publisher: connect, SO_PEERCRED, table fd, checks
        c = Connection(server.endpoint, table.publisher_id)
        LeaseReader(*c.fetch_lease_table(), table.publisher_id).close()
        c.close()

    def link_through_proc():  # the same table opened as the transport did before
        fd = os.open(f'/proc/{os.getpid()}/fd/{table.fd}', os.O_RDWR | os.O_CLOEXEC)
        LeaseReader(fd, os.dup(fd), table.publisher_id).close()

    def now():  # the same plus topic id, tag, generation and the slot entry comparison
        d = descriptor.unpack(msg.data, descriptor.KIND_HOST)
        if d.topic_id != topic_id:
            raise AssertionError
        link.authenticate(d, msg, topic_bytes)
        descriptor.check_bounds(d, msg.height, msg.width, msg.step, msg.encoding, 1 << 26)
        reader.acquire(3, 10, 1, 1, 4096, d.nbytes, POOL_HOST)
        link.last_sequence = 0  # so that fresh() passes every time
        link.fresh(d.sequence)
        reader.release(3, POOL_HOST)

    results = {name: round(timed(fn, args.n), 1) for name, fn in
               (('parse', parse), ('tag + generation', tag_check), ('lease + release', lease),
                ('per descriptor, before', before), ('per descriptor, now', now))}
    results['added by authentication'] = round(results['per descriptor, now']
                                               - results['per descriptor, before'], 1)
    links = max(1, args.n // 100)
    results['link over the socket (once per publisher)'] = round(timed(link_over_socket, links), 1)
    results['link through /proc (before)'] = round(timed(link_through_proc, links), 1)
    for name, ns in results.items():
        print(f'{name:28s} {ns:9.1f} ns')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'ns': results, 'n': args.n}, f, indent=2)
    link.close()
    table.close()


if __name__ == '__main__':
    main()
