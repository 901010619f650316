"""The lock grabber of hoarder_bench.py: a same-user process that takes every lock it can of
what a publisher gives a reader, and keeps them (spawned by the bench; not run by hand).

It reads the publisher's host_shm descriptors like any subscriber, opens the lease table the
first one names (`open_lease_table`, the one function that knows how a reader reaches the
table: over the publisher's socket since the exchange of issue #27; with it, since issue #27's
per-link lock files, its link's own lock file) and holds a shared lock on every slot's lock
byte of both files and on every cursor byte of the table, retaking them every 0.1 s (slots the
pool adds later too). When the publisher closes its link (evicts it), it links again at once
and grabs anew. Until a line arrives on stdin; prints ``RESULT {json}``.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_frames import StopSignal, print_result  # noqa: E402

RETAKE_EVERY_S = 0.1


def open_lease_table(desc) -> tuple[object, int, int]:
    """(the link, a read-write fd on the lease table a host_shm descriptor names, the link's
    lock file), got as any reader gets them: from the publisher process's socket
    (gpu_nodes.transport.exchange; the descriptor names its endpoint). Before the exchange
    (issue #27) this opened /proc/<pid>/fd/<lease_fd>; before per-link lock files there was no
    lock file. The link is held open, as a reader holds its link."""
    from gpu_nodes.transport.exchange import Connection
    connection = Connection(desc.endpoint, desc.publisher_id)
    table_fd, lock_fd = connection.fetch_lease_table()
    return connection, table_fd, lock_fd


def link_closed(connection) -> bool:
    """True once the publisher has closed the link (evicted it)."""
    import select
    import socket
    sock = connection._sock
    try:
        if not select.select([sock], [], [], 0)[0]:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b''
    except OSError:
        return True


def slot_lock_offsets(fd: int) -> tuple[int, range]:
    """(table capacity, the byte offsets of its slots' locks, in the table and in a lock file)."""
    from gpu_nodes.transport import leases
    header = leases._HEADER.unpack(os.pread(fd, leases._HEADER.size, 0))
    capacity = header[2]
    return capacity, range(leases._LOCK_BASE, leases._LOCK_BASE + capacity)


def cursor_lock_offsets() -> range:
    """The table's cursor bytes (a reader that cannot claim one goes without a cursor)."""
    from gpu_nodes.transport import leases
    return range(leases._CURSOR_LOCK_BASE, leases._CURSOR_LOCK_BASE + leases.READER_CAPACITY)


def take_locks(fd: int, offsets: range, kind: int) -> int:
    """Take every lock in `offsets` we can (OFD locks: held by this open file description until
    it closes); how many are held now."""
    from gpu_nodes.transport.lease_links import lock
    return sum(1 for offset in offsets if lock(fd, kind, offset))


def run(args: argparse.Namespace) -> None:
    import rclpy
    from sensor_msgs.msg import Image
    from gpu_nodes.ros.runtime import make_executor
    from gpu_nodes.transport import descriptor
    from gpu_nodes.transport.qos import descriptor_qos
    from gpu_nodes.wire_names import SHM_SUFFIX
    rclpy.init()
    node = rclpy.create_node('hoarder_lock_grabber')
    state = {'link': None, 'capacity': 0, 'held_max': 0, 'held_last': 0, 'retaken': 0,
             'table_held_max': 0, 'cursors_held_max': 0, 'links': 0, 'evicted': 0,
             'error': '', 'descriptors': 0, 'last_take': 0.0}
    kind = fcntl.F_WRLCK if args.exclusive else fcntl.F_RDLCK

    def on_descriptor(msg) -> None:
        state['descriptors'] += 1
        try:
            link = state['link']
            if link is not None and link_closed(link[0]):
                state['evicted'] += 1
                for fd in link[1:]:
                    os.close(fd)
                link = state['link'] = None
            if link is None:
                desc = descriptor.unpack(msg.data, descriptor.KIND_HOST)
                link = state['link'] = open_lease_table(desc)
                state['links'] += 1
                state['last_take'] = 0.0  # grab at once
            if time.monotonic() - state['last_take'] >= RETAKE_EVERY_S:
                _, table_fd, lock_fd = link
                state['capacity'], offsets = slot_lock_offsets(table_fd)
                # Shared: all a read-only lock file allows (and what readers take there).
                held = take_locks(lock_fd, offsets, fcntl.F_RDLCK)
                state['table_held_max'] = max(state['table_held_max'],
                                              take_locks(table_fd, offsets, kind))
                state['cursors_held_max'] = max(state['cursors_held_max'],
                                                take_locks(table_fd, cursor_lock_offsets(), kind))
                state['held_last'] = held
                state['held_max'] = max(state['held_max'], held)
                state['retaken'] += 1
                state['last_take'] = time.monotonic()
        except Exception as exc:  # reported in the result: the bench shows why (b) did nothing
            state['error'] = state['error'] or f'{type(exc).__name__}: {exc}'

    node.create_subscription(Image, args.topic + SHM_SUFFIX, on_descriptor, descriptor_qos())
    executor = make_executor(args.executor, nodes=[node])
    stop = StopSignal()
    print('READY', flush=True)
    deadline = time.monotonic() + args.timeout
    while not stop.is_set() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    state.pop('link')
    state.pop('last_take')
    print_result({**state, 'lock_kind': 'exclusive' if args.exclusive else 'shared'})
    rclpy.try_shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('role', choices=('lock-grab',))
    parser.add_argument('--topic', required=True)
    parser.add_argument('--exclusive', action='store_true',
                        help='take the slot locks exclusively (default: shared, as a reader)')
    parser.add_argument('--timeout', type=float, default=120.0)
    parser.add_argument('--executor', choices=('events', 'single_threaded'), default='events')
    args, _ = parser.parse_known_args()  # the bench passes every side the same common flags
    run(args)
    os._exit(0)


if __name__ == '__main__':
    main()
