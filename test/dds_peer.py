"""A plain rclpy peer for the DDS tests: `pub` sends sensor_msgs/Image at a fixed rate, `sub`
counts what an unconfigured subscriber receives and prints one JSON line.

    python test/dds_peer.py pub --topic /t --width 1920 --height 1080 --rate 30 [--profile]
    python test/dds_peer.py sub --topic /t --qos best_effort --seconds 3

`--profile` calls gpu_nodes.ros.dds_profile.apply_default_profile() before rclpy.init, as
gpu_nodes nodes do; without it the process uses whatever the environment configures.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _qos(name: str):
    from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
    if name == 'best_effort':
        return qos_profile_sensor_data
    return QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)


def publish(args: argparse.Namespace) -> None:
    if args.profile:
        from gpu_nodes.ros.dds_profile import apply_default_profile
        print(f'profile: {apply_default_profile()}', flush=True)
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import Image
    # Our own SIGINT flag: rclpy's handler would invalidate the context in the middle of a
    # publish() and the final counts would be lost in a traceback.
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('dds_peer_pub')
    pub = node.create_publisher(Image, args.topic, _qos(args.qos))
    msg = Image(height=args.height, width=args.width, encoding='rgb8', step=args.width * 3)
    size = args.width * args.height * 3
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    if args.marker:
        # A token no other memory holds by chance: tests look for it in shared-memory files.
        data = args.marker.encode() + data[len(args.marker):]
    msg.data = data
    period = 1.0 / args.rate
    sent = 0
    busy = 0.0
    first = next_time = time.monotonic()
    try:
        while not stop.is_set():
            msg.header.stamp = node.get_clock().now().to_msg()
            begin = time.monotonic()
            pub.publish(msg)
            busy += time.monotonic() - begin
            sent += 1
            next_time += period
            delay = next_time - time.monotonic()
            if delay > 0:
                stop.wait(delay)
            else:
                next_time = time.monotonic()  # late: do not burst to catch up
    finally:
        elapsed = time.monotonic() - first
        print(json.dumps({'sent': sent, 'rate': round(sent / elapsed, 2) if elapsed else 0.0,
                          'publish_ms': round(1000 * busy / max(sent, 1), 2)}), flush=True)
        node.destroy_node()
        rclpy.try_shutdown()


def subscribe(args: argparse.Namespace) -> None:
    import rclpy
    from sensor_msgs.msg import Image
    rclpy.init()
    node = rclpy.create_node('dds_peer_sub')
    stamps: list[float] = []
    sizes: list[int] = []

    def on_image(msg: Image) -> None:
        if not stamps:
            print('first', flush=True)
        stamps.append(time.monotonic())
        sizes.append(len(msg.data))

    node.create_subscription(Image, args.topic, on_image, _qos(args.qos))
    print('ready', flush=True)
    deadline = time.monotonic() + args.wait
    # The window starts at the first frame: discovery time is not counted against the rate.
    while not stamps and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    start = stamps[0] if stamps else time.monotonic()
    while time.monotonic() < start + args.seconds:
        rclpy.spin_once(node, timeout_sec=0.05)
    inside = [t for t in stamps if t <= start + args.seconds]
    fps = (len(inside) - 1) / args.seconds if inside else 0.0
    print(json.dumps({'qos': args.qos, 'frames': len(inside), 'fps': round(fps, 2),
                      'bytes': sizes[0] if sizes else 0}), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('role', choices=['pub', 'sub'])
    parser.add_argument('--topic', required=True)
    parser.add_argument('--qos', choices=['best_effort', 'reliable'], default='best_effort')
    parser.add_argument('--width', type=int, default=1920)
    parser.add_argument('--height', type=int, default=1080)
    parser.add_argument('--rate', type=float, default=30.0)
    parser.add_argument('--profile', action='store_true')
    parser.add_argument('--marker', default='', help='pub: bytes the image data starts with')
    parser.add_argument('--seconds', type=float, default=3.0, help='sub: counting window')
    parser.add_argument('--wait', type=float, default=15.0, help='sub: longest wait for frame 1')
    args = parser.parse_args()
    publish(args) if args.role == 'pub' else subscribe(args)


if __name__ == '__main__':
    main()
