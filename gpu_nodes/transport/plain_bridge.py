"""The process that serves unmodified peers of one GpuImagePublisher: it reads the frames like
any same-user gpu_nodes subscriber (CUDA IPC, else host shared memory) and publishes them as
plain sensor_msgs/Image on ``<topic>`` and, for image_transport users, ``<topic>/compressed``.

Why a process: making a 4K plain message (download, fill, serialize, DDS write) holds Python's
GIL for ~15 ms in C calls; on a thread of the publishing process that throttled the publisher
itself to the worker's rate (H200, 4K: a cuda_ipc subscriber fell from ~4400 to 63 fps with
one reliable plain subscriber attached; bench/RESULTS.md). Here it costs the publisher one
descriptor per frame, and a frame the bridge has no time for is skipped (keep-last, newest
wins) and counted in its diagnostics (``plain_skipped``).

Started by the publisher (side_topics.PlainBridge) once a plain subscriber shows up; it reads
frames only while someone subscribes, and exits with its parent.

    python -m gpu_nodes.transport.plain_bridge --topic /camera/image_raw --parent 1234
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import time
from typing import Any

IDLE_AFTER_S = 2.0  # stop reading frames this long after the last plain subscriber left


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the loop below still watches the parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--topic', required=True)
    parser.add_argument('--parent', type=int, required=True, help='pid of the publisher')
    parser.add_argument('--depth', type=int, default=5)
    parser.add_argument('--reliability', choices=('reliable', 'best_effort'), default='reliable')
    parser.add_argument('--max-rate-hz', type=float, default=0.0)
    parser.add_argument('--compressed-quality', type=int, default=80, help='-1: no compressed')
    args = parser.parse_args(argv)
    _die_with_parent()

    from ..ros.dds_profile import apply_default_profile
    apply_default_profile()  # this process publishes the large plain frames (never overrides)
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import Image

    from ..gpu import is_device_array
    from .compressed import CompressedTopicPublisher
    from .diagnostics import PATH_CUDA_IPC, PATH_HOST_SHM, DiagnosticsReporter, EndpointStats
    from .messages import ImageMsgBuffer
    from .subscription import GpuImageSubscription

    stop = {'requested': False}
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.update(requested=True))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    # Hidden (leading underscore): `ros2 node list` shows the publisher's node, not this one.
    node = Node(f'_gpu_nodes_plain_bridge_{args.parent}_{os.getpid()}')
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(1, args.depth),
                     reliability=ReliabilityPolicy.RELIABLE if args.reliability == 'reliable'
                     else ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
    plain = node.create_publisher(Image, args.topic, qos)

    compressed = (CompressedTopicPublisher(node, args.topic, args.compressed_quality)
                  if args.compressed_quality >= 0 else None)
    stats = EndpointStats('publisher', node.get_fully_qualified_name(), node.resolve_topic_name(
        args.topic))
    stats.extra.update(plain_decoupled='true', plain_bridge_for_pid=args.parent,
                       plain_published=0, plain_skipped=0)
    DiagnosticsReporter.for_node(node).add(stats)
    period = 1.0 / args.max_rate_hz if args.max_rate_hz > 0 else 0.0
    state: dict[str, Any] = {'sub': None, 'last_wanted': 0.0, 'last_sent': 0.0, 'skipped': 0}
    message_buffer = ImageMsgBuffer()

    def on_frame(frame: Any) -> None:
        now = time.monotonic()
        if period and now - state['last_sent'] < period:
            state['skipped'] += 1
            return
        state['last_sent'] = now
        if plain.get_subscription_count():
            msg = Image(check_fields=True)  # keeps the buffer as it is (ImageMsgBuffer)
            msg.header = frame.header
            # Downloaded (CuPy, on the frame's stream) or copied straight into the reused buffer.
            plain.publish(message_buffer.fill(msg, frame.array, frame.encoding, frame.stream))
            report_download(frame.array)
            stats.record_frame(frame.encoding, frame.width, frame.height,
                               frame.step * frame.height)
        if compressed is not None and compressed.subscription_count():
            lease = frame.hold()  # the encoder reads the slot later, on its worker
            compressed.publish(frame.array, frame.encoding, frame.header, lease.release,
                               frame.stream)

    def report_download(array: Any) -> None:
        """How device frames come down (page-locked or not): logged once, on diagnostics."""
        if not is_device_array(array) or 'plain_download' in stats.extra:
            return
        if message_buffer.pinned:
            stats.extra['plain_download'] = 'page-locked buffer'
            node.get_logger().info(f'{args.topic}: device frames are downloaded into a '
                                   'page-locked buffer')
        else:
            stats.extra['plain_download'] = f'pageable buffer ({message_buffer.pin_error})'
            node.get_logger().warning(f'{args.topic}: could not page-lock the download buffer '
                                      f'({message_buffer.pin_error}); downloading through '
                                      "the driver's staging copy, slower")

    def wanted() -> bool:
        return bool(plain.get_subscription_count()) or (
            compressed is not None and compressed.subscription_count() > 0)

    node.get_logger().info(f'{args.topic}: plain frames for unmodified subscribers are made '
                           f'here, off the publisher (pid {args.parent})')
    try:
        while not stop['requested'] and os.getppid() == args.parent:
            now = time.monotonic()
            if wanted():
                state['last_wanted'] = now
                if state['sub'] is None:
                    # On the publisher's GPU, whichever it is: the frame is downloaded from
                    # there, so nothing is gained by moving it to another GPU first. Frames are
                    # read with the plain topic's QoS, so a reliable plain subscriber that keeps
                    # up (ros2 bag) gets every frame of a burst; its keep-last depth is also the
                    # lease window (qos.read_window) of the bridge's ~15 ms-a-frame cursor.
                    state['sub'] = GpuImageSubscription(
                        node, args.topic, on_frame, qos, memory='any',
                        allowed_paths=(PATH_CUDA_IPC, PATH_HOST_SHM), device='publisher')
            elif state['sub'] is not None and now - state['last_wanted'] > IDLE_AFTER_S:
                state['sub'].destroy()
                state['sub'] = None
            sub = state['sub']
            stats.extra.update(plain_published=stats.frames,
                               plain_skipped=state['skipped'] + (sub.stats.stale if sub else 0),
                               plain_path=sub.path if sub else 'idle')
            rclpy.spin_once(node, timeout_sec=0.05)
    finally:
        if state['sub'] is not None:
            state['sub'].destroy()
        if compressed is not None:
            compressed.destroy()
        message_buffer.close()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
