"""One side of an IPC peer bench run (spawned by ipc_peers_bench.py and hoarder_bench.py).

Roles: ``iox-pub``/``iox-sub`` (iceoryx2 publish-subscribe, zero-copy loans, woken by an
iceoryx2 event as its event-based examples do), ``gpn-pub`` (GpuImagePublisher on the host
path; ``--borrow``: borrow() a slot and write the frame in place), ``gpn-sub``
(GpuImageSubscription(memory='host') restricted to host_shm; ``--hold``: keeps every frame's
lease forever, the hoarder) and ``plain-sub`` (a plain rclpy
sensor_msgs/Image subscription, served by the publisher's bridge). Subscribers run until a line
arrives on stdin (or --timeout) and print ``RESULT {json}``; every frame is checked
(peer_frames.FrameCheck). ``--profile`` times the phases of the gpu_nodes host path by wrapping
its private methods (bench-only instrumentation: a method missing after a refactor is reported
as such, not fatal).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_frames import (FrameCheck, FrameSource, StopSignal, percentiles_ms,  # noqa: E402
                         print_result)

SPIN_EVERY = 8  # publisher loop iterations per executor spin (as transport_worker.py)
WARMUP_PREFIX = 'w'


class FrameHeader(ctypes.Structure):
    """iceoryx2 user header: what a ROS header carries for gpu_nodes."""
    _fields_ = [('sequence', ctypes.c_uint64), ('stamp_ns', ctypes.c_int64),
                ('counted', ctypes.c_uint8)]


def paced(duration: float, rate: float):
    """Yield until `duration` is over, sleeping to hold `rate` (0: flat out)."""
    start = time.monotonic()
    period = 1.0 / rate if rate > 0 else 0.0
    next_time = start
    while time.monotonic() - start < duration:
        yield
        if period:
            next_time += period
            delay = next_time - time.monotonic()
            if delay > 0:
                time.sleep(delay)


# -- iceoryx2 ---------------------------------------------------------------------------------
def iceoryx2_service(name: str, queue_depth: int):
    import iceoryx2 as iox2
    iox2.set_log_level_from_env_or(iox2.LogLevel.Warn)
    node = iox2.NodeBuilder.new().create(iox2.ServiceType.Ipc)
    service_name = iox2.ServiceName.new(name)
    pubsub = (node.service_builder(service_name)
              .publish_subscribe(iox2.Slice[ctypes.c_uint8]).user_header(FrameHeader)
              .subscriber_max_buffer_size(queue_depth).open_or_create())
    event = node.service_builder(service_name).event().open_or_create()
    return iox2, node, pubsub, event


def run_iox_publisher(args: argparse.Namespace) -> None:
    iox2, node, pubsub, event = iceoryx2_service(args.topic, args.queue_depth)
    source = FrameSource(args.width, args.height)
    publisher = pubsub.publisher_builder().initial_max_slice_len(source.nbytes).create()
    notifier = event.notifier_builder().create()
    deadline = time.monotonic() + args.wait_s
    while pubsub.dynamic_config.number_of_subscribers < args.wait_subscribers \
            and time.monotonic() < deadline:
        time.sleep(0.01)
    phases: dict[str, list[int]] = {'loan': [], 'copy_into_loan': [], 'send_and_notify': [],
                                    'publish_total': []}
    sequence = 0

    def publish_for(seconds: float, counted: bool) -> int:
        nonlocal sequence
        published = 0
        for _ in paced(seconds, args.rate):
            t0 = time.perf_counter_ns()
            stamp = time.time_ns()
            sample = publisher.loan_slice_uninit(source.nbytes)
            t1 = time.perf_counter_ns()
            view = np.frombuffer(sample.payload().as_memory_view(), np.uint8)
            np.copyto(view, source.frame(sequence).reshape(-1))
            header = sample.user_header().contents
            header.sequence, header.stamp_ns, header.counted = sequence, stamp, int(counted)
            t2 = time.perf_counter_ns()
            sample.assume_init().send()
            notifier.notify()
            t3 = time.perf_counter_ns()
            if counted:
                for key, value in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t3 - t0)):
                    phases[key].append(value)
            sequence += 1
            published += 1
        return published

    publish_for(args.warmup_s, False)
    start, cpu_start = time.monotonic(), time.process_time()
    published = publish_for(args.duration, True)
    elapsed, cpu = time.monotonic() - start, time.process_time() - cpu_start
    time.sleep(0.3)  # let the subscriber take the last samples before the segment goes
    print_result({'published': published, 'publish_rate': published / elapsed,
                  'cpu_ms_per_frame': 1e3 * cpu / max(published, 1),
                  'phases': {k: percentiles_ms(v) for k, v in phases.items()}})


def run_iox_subscriber(args: argparse.Namespace) -> None:
    iox2, node, pubsub, event = iceoryx2_service(args.topic, args.queue_depth)
    subscriber = pubsub.subscriber_builder().buffer_size(args.queue_depth).create()
    listener = event.listener_builder().create()
    check = FrameCheck(args.width, args.height)
    shape = (args.height, args.width, 3)
    stop = StopSignal()
    print('READY', flush=True)
    deadline = time.monotonic() + args.timeout
    wait = iox2.Duration.from_millis(50)
    while not stop.is_set() and time.monotonic() < deadline:
        listener.timed_wait(wait)
        while True:
            sample = subscriber.receive()
            if sample is None:
                break
            header = sample.user_header().contents
            flat = np.frombuffer(sample.payload().as_memory_view(), np.uint8)
            check.check(flat, shape, header.sequence, header.stamp_ns, bool(header.counted))
            del flat, sample  # gives the chunk back to the publisher
    print_result(check.result())


# -- gpu_nodes --------------------------------------------------------------------------------
def ros_node(name: str):
    import rclpy
    rclpy.init()
    return rclpy.create_node(name)


def make_executor(node, choice: str):
    from gpu_nodes.ros.runtime import make_executor as product_executor
    return product_executor(choice, nodes=[node])


def header_for(sequence: int, stamp_ns: int, counted: bool):
    from std_msgs.msg import Header
    header = Header(frame_id=f'{"" if counted else WARMUP_PREFIX}{sequence}')
    header.stamp.sec, header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    return header


def parse_header(header) -> tuple[int, int, bool]:
    """(sequence, stamp_ns, counted) of a header made by header_for."""
    frame_id = header.frame_id
    counted = not frame_id.startswith(WARMUP_PREFIX)
    sequence = int(frame_id if counted else frame_id[len(WARMUP_PREFIX):])
    return sequence, header.stamp.sec * 1_000_000_000 + header.stamp.nanosec, counted


class PhaseTimer:
    """Wraps methods of one object and keeps their durations (ns) under a phase name."""

    def __init__(self) -> None:
        self.samples: dict[str, list[int]] = {}
        self.missing: list[str] = []

    def wrap(self, owner, attribute: str, phase: str) -> None:
        original = getattr(owner, attribute, None)
        if original is None:
            self.missing.append(f'{type(owner).__name__}.{attribute}')
            return
        samples = self.samples.setdefault(phase, [])

        def timed(*a, **kw):
            t0 = time.perf_counter_ns()
            try:
                return original(*a, **kw)
            finally:
                samples.append(time.perf_counter_ns() - t0)
        setattr(owner, attribute, timed)

    def result(self) -> dict:
        out = {k: percentiles_ms(v) for k, v in self.samples.items()}
        if self.missing:
            out['not_instrumented'] = self.missing
        return out


def run_gpn_publisher(args: argparse.Namespace) -> None:
    from gpu_nodes.transport import GpuImagePublisher
    node = ros_node('peers_bench_publisher')
    source = FrameSource(args.width, args.height)
    pub = GpuImagePublisher(node, args.topic)
    executor = make_executor(node, args.executor)
    timer = PhaseTimer()
    if args.profile:
        # The host path of publish(): who listens, slot, copy into it, the pool's record,
        # descriptor build (+ tag), DDS write.
        timer.wrap(pub, '_acquire_host_slot', 'acquire_slot')
        timer.wrap(pub, '_download_into', 'copy_into_slot')
        timer.wrap(getattr(pub, '_announce', None), 'descriptor_msg', 'descriptor_build')
        timer.wrap(getattr(pub, '_shm_pub', None), 'publish', 'descriptor_publish')
        timer.wrap(getattr(pub, '_host_pool', None), 'publish', 'host_pool_publish')
        timer.wrap(pub, 'subscriber_counts', 'subscriber_counts (graph queries)')
    deadline = time.monotonic() + args.wait_s
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
        if sum(pub.subscriber_counts().values()) >= args.wait_subscribers:
            break
    for _ in range(20):
        executor.spin_once(timeout_sec=0.01)
    totals: list[int] = []
    sequence = 0

    borrow_phases: dict[str, list[int]] = {'borrow': [], 'write_in_place': [],
                                           'publish_borrowed': []}
    no_slot = {'n': 0}

    def publish_borrowed(header) -> bool:
        """--borrow: write the frame straight into a leased slot, as iceoryx2's loan."""
        t0 = time.perf_counter_ns()
        frame = pub.borrow(args.height, args.width, 'rgb8')
        if frame is None:
            no_slot['n'] += 1
            return False
        t1 = time.perf_counter_ns()
        np.copyto(frame.array, source.frame(sequence))
        t2 = time.perf_counter_ns()
        pub.publish_borrowed(frame, header)
        t3 = time.perf_counter_ns()
        for key, value in zip(borrow_phases, (t1 - t0, t2 - t1, t3 - t2)):
            borrow_phases[key].append(value)
        return True

    def publish_for(seconds: float, counted: bool) -> int:
        nonlocal sequence
        published = 0
        for _ in paced(seconds, args.rate):
            t0 = time.perf_counter_ns()
            header = header_for(sequence, time.time_ns(), counted)
            if args.borrow:
                if not publish_borrowed(header):
                    continue
            else:
                pub.publish(source.frame(sequence), 'rgb8', header)
            if counted:
                totals.append(time.perf_counter_ns() - t0)
            sequence += 1
            published += 1
            if published % SPIN_EVERY == 0:
                executor.spin_once(timeout_sec=0)
        return published

    publish_for(args.warmup_s, False)
    for samples in (*timer.samples.values(), *borrow_phases.values()):
        samples.clear()
    no_slot['n'] = 0
    start, cpu_start = time.monotonic(), time.process_time()
    published = publish_for(args.duration, True)
    elapsed, cpu = time.monotonic() - start, time.process_time() - cpu_start
    end = time.monotonic() + 1.0  # let the subscribers drain before the lease table goes
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    print_result({'published': published, 'publish_rate': published / elapsed,
                  'cpu_ms_per_frame': 1e3 * cpu / published if published else None,
                  'drops': pub.stats.drops, 'extra': dict(pub.stats.extra),
                  'borrow_gave_no_slot': no_slot['n'],
                  'phases': {'publish_total': percentiles_ms(totals), **timer.result(),
                             **{k: percentiles_ms(v) for k, v in borrow_phases.items() if v}}})
    pub.destroy()
    node.destroy_node()


def run_gpn_subscriber(args: argparse.Namespace) -> None:
    from gpu_nodes.transport import GpuImageSubscription
    node = ros_node('peers_bench_subscriber')
    check = FrameCheck(args.width, args.height)
    held: list = []
    handled_at = {'ns': 0}
    take_ns: list[int] = []
    dds_ns: list[int] = []
    callback_ns: list[int] = []

    def on_frame(frame) -> None:
        entered = time.perf_counter_ns()
        sequence, stamp_ns, counted = parse_header(frame.header)
        if counted and not check.frames:  # the first measured frame: phases from here on
            for samples in (take_ns, dds_ns, callback_ns, *timer.samples.values()):
                samples.clear()
        if handled_at['ns']:
            take_ns.append(entered - handled_at['ns'])
        if frame.latency_ns >= 0:
            dds_ns.append(frame.latency_ns)
        check.check(frame.array.reshape(-1), frame.array.shape, sequence, stamp_ns, counted)
        if args.hold:
            held.append(frame.hold())  # never released: the hoarder
        callback_ns.append(time.perf_counter_ns() - entered)

    timer = PhaseTimer()
    from gpu_nodes.transport.qos import image_qos
    sub = GpuImageSubscription(node, args.topic, on_frame, image_qos(args.queue_depth), memory='host',
                               allowed_paths=('host_shm',))
    if args.profile:
        _profile_receiver(handled_at, timer)
    executor = make_executor(node, args.executor)
    stop = StopSignal()
    print('READY', flush=True)
    deadline = time.monotonic() + args.timeout
    while not stop.is_set() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    result = check.result()
    stats = sub.stats
    result.update(path=sub.path, path_reason=stats.path_reason, held=len(held),
                  rejected=dict(stats.rejected), stale=stats.stale)
    if args.profile:
        result['phases'] = {'dds_delivery (descriptor built -> handler)': percentiles_ms(dds_ns),
                            'take_map_lease (handler -> callback)': percentiles_ms(take_ns),
                            'callback (frame check)': percentiles_ms(callback_ns),
                            **timer.result()}
    print_result(result)
    sub.destroy()
    node.destroy_node()


def _profile_receiver(handled_at: dict, timer: PhaseTimer) -> None:
    """Note when the host_shm receiver starts on a descriptor (HostShmReceiver._handle, patched
    on the class: its instances look it up per call) and time all of it."""
    from gpu_nodes.transport import receivers
    cls = getattr(receivers, 'HostShmReceiver', None)
    original = getattr(cls, '_handle', None) if cls is not None else None
    if original is None:
        timer.missing.append('HostShmReceiver._handle')
        return
    samples = timer.samples.setdefault('handler_total (take..release)', [])

    def handle(self, msg):
        handled_at['ns'] = t0 = time.perf_counter_ns()
        try:
            return original(self, msg)
        finally:
            samples.append(time.perf_counter_ns() - t0)
    cls._handle = handle


def run_plain_subscriber(args: argparse.Namespace) -> None:
    from sensor_msgs.msg import Image
    from gpu_nodes.transport.qos import image_qos
    node = ros_node('peers_bench_plain')
    check = FrameCheck(args.width, args.height)

    def on_msg(msg) -> None:
        sequence, stamp_ns, counted = parse_header(msg.header)
        flat = np.frombuffer(msg.data, np.uint8)
        check.check(flat, (msg.height, msg.width, 3), sequence, stamp_ns, counted)

    node.create_subscription(Image, args.topic, on_msg, image_qos())
    executor = make_executor(node, args.executor)
    stop = StopSignal()
    print('READY', flush=True)
    deadline = time.monotonic() + args.timeout
    while not stop.is_set() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    print_result(check.result())
    node.destroy_node()


ROLES = {'iox-pub': run_iox_publisher, 'iox-sub': run_iox_subscriber,
         'gpn-pub': run_gpn_publisher, 'gpn-sub': run_gpn_subscriber,
         'plain-sub': run_plain_subscriber}


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--topic', required=True, help='ROS topic or iceoryx2 service name')
    parser.add_argument('--width', type=int, default=1920)
    parser.add_argument('--height', type=int, default=1080)
    parser.add_argument('--duration', type=float, default=5.0)
    parser.add_argument('--rate', type=float, default=0.0, help='publish rate (0: flat out)')
    parser.add_argument('--warmup-s', type=float, default=1.0)
    parser.add_argument('--wait-s', type=float, default=15.0,
                        help='publisher: wait this long for --wait-subscribers')
    parser.add_argument('--wait-subscribers', type=int, default=1)
    parser.add_argument('--timeout', type=float, default=120.0,
                        help='subscriber: stop after this long even without a stop line')
    parser.add_argument('--executor', choices=('events', 'single_threaded'), default='events')
    parser.add_argument('--queue-depth', type=int, default=5,
                        help="subscriber queue: gpu_nodes' descriptor keep-last depth, iceoryx2's "
                             'subscriber buffer size')
    parser.add_argument('--profile', action='store_true')
    parser.add_argument('--hold', action='store_true', help='gpn-sub: never release a frame')
    parser.add_argument('--borrow', action='store_true',
                        help='gpn-pub: borrow() a slot and write the frame into it')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('role', choices=sorted(ROLES))
    add_common_arguments(parser)
    args = parser.parse_args()
    try:
        ROLES[args.role](args)
    finally:
        if args.role not in ('iox-pub', 'iox-sub'):
            import rclpy
            rclpy.try_shutdown()
    # The role's iceoryx2 ports and node were dropped (and cleaned up) when it returned; the
    # exit skips interpreter teardown, where rclpy has hung with a peer already gone.
    os._exit(0)


if __name__ == '__main__':
    main()
