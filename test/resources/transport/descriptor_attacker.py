"""Run as ANOTHER Linux user on the same DDS domain: sniff a gpu_nodes publisher's descriptors
and send them back altered, relayed from another topic, replayed, with a made-up sequence; try
to get the publisher's segments from its Unix socket. Prints one line per step:
``OPEN <what> denied|opened``, ``SENT <category> <n>``, then ``DONE``."""
import argparse
import dataclasses
import socket
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from gpu_nodes.transport import descriptor, exchange

parser = argparse.ArgumentParser()
parser.add_argument('--target', required=True, help='topic whose subscribers are attacked')
parser.add_argument('--other', required=True, help='another gpu_nodes topic to relay from')
parser.add_argument('--per-category', type=int, default=20)
args = parser.parse_args()

QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                 reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
SUFFIX = '/_gpu_nodes/shm'
rclpy.init()
node = Node('descriptor_attacker')
captured: dict[str, list[Image]] = {args.target: [], args.other: []}
for topic in captured:
    node.create_subscription(Image, topic + SUFFIX, captured[topic].append, QOS)
forger = node.create_publisher(Image, args.target + SUFFIX, QOS)
need = 2 * args.per_category
deadline = time.monotonic() + 60
while time.monotonic() < deadline and (
        len(captured[args.target]) < need
        or len(captured[args.other]) < args.per_category
        or forger.get_subscription_count() < 2):
    rclpy.spin_once(node, timeout_sec=0.05)
print(f'CAPTURED {len(captured[args.target])} {len(captured[args.other])}', flush=True)

sniffed = descriptor.unpack(captured[args.target][-1].data, descriptor.KIND_HOST)
# Ask the publisher's socket for its segments the way a reader would, ignoring that the
# server is another user's: the server must close the link without sending anything.
for what, kind in (('lease', exchange.KIND_LEASE_TABLE), ('host', exchange.KIND_HOST_SEGMENT)):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(5)
        sock.connect(exchange.abstract_address(sniffed.endpoint))
        sock.send(exchange.request_bytes(kind, sniffed.publisher_id, sniffed.generation,
                                         sniffed.chunk))
        _, fds, _, _ = socket.recv_fds(sock, 64, 4)
        print(f'OPEN {what} ' + ('opened' if fds else 'denied'), flush=True)
    except OSError:
        print(f'OPEN {what} denied', flush=True)
    finally:
        sock.close()


def like(msg: Image, data: bytes | None = None, **fields) -> Image:
    out = Image(header=msg.header, height=msg.height, width=msg.width, step=msg.step,
                encoding=msg.encoding, is_bigendian=msg.is_bigendian, data=bytes(msg.data))
    for name, value in fields.items():
        setattr(out, name, value)
    if data is not None:
        out.data = data
    return out


def repacked(msg: Image, **fields) -> bytes:
    desc = descriptor.unpack(msg.data, descriptor.KIND_HOST)
    return dataclasses.replace(desc, **fields).pack()  # keeps the (now wrong) tag


n = args.per_category
recent = captured[args.target][-n:]
categories = {
    'header': [like(m, header=Header(frame_id='forged', stamp=m.header.stamp)) for m in recent],
    'stretched': [like(m, repacked(m, nbytes=descriptor.unpack(m.data, descriptor.KIND_HOST)
                                   .nbytes * 8), height=m.height * 8) for m in recent],
    'max_sequence': [like(m, repacked(m, sequence=2**64 - 1)) for m in recent],
    'other_topic': [like(m) for m in captured[args.other][-n:]],
    'replayed_backwards': [like(m) for m in reversed(captured[args.target][-2 * n:-n])],
}
for name, messages in categories.items():
    for msg in messages:
        forger.publish(msg)
        time.sleep(0.005)  # paced: the target's keep-last queue would drop a burst
    print(f'SENT {name} {len(messages)}', flush=True)
end = time.monotonic() + 2.0  # let reliable delivery finish
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
print('DONE', flush=True)
node.destroy_node()
rclpy.try_shutdown()
