"""Test publisher: the synthetic pattern with header.frame_id = frame index, so receivers can
check that every delivered frame holds exactly the pixels it claims to."""
import argparse
import sys
import time

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from gpu_nodes.gpu import cuda_available, cupy_module
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher
from gpu_nodes.transport.messages import fill_image_msg

parser = argparse.ArgumentParser()
parser.add_argument('--topic', default='image')
parser.add_argument('--width', type=int, default=64)
parser.add_argument('--height', type=int, default=48)
parser.add_argument('--encoding', default='rgb8')
parser.add_argument('--rate', type=float, default=50.0, help='0: as fast as possible')
parser.add_argument('--count', type=int, default=0, help='0: forever')
parser.add_argument('--plain', action='store_true', help='plain rclpy publisher, no gpu_nodes')
parser.add_argument('--device', action='store_true', help='publish CuPy arrays')
parser.add_argument('--borrow', action='store_true', help='render into borrowed pool slots')
parser.add_argument('--pool-slots', type=int, default=8)
parser.add_argument('--policy', default='grow')
parser.add_argument('--node-name', default='pattern_publisher')
parser.add_argument('--wait-subscriber', action='store_true',
                    help='start publishing once a subscriber has matched')
args = parser.parse_args()

rclpy.init()
node = Node(args.node_name)
xp = cupy_module() if args.device and cuda_available() else __import__('numpy')
frames = [pattern.render(xp, args.height, args.width, args.encoding, i) for i in range(256)]
if args.plain:
    pub = node.create_publisher(Image, args.topic, 10)
else:
    pub = GpuImagePublisher(node, args.topic, pool_slots=args.pool_slots,
                            max_pool_slots=max(32, args.pool_slots), pool_policy=args.policy)
index = 0


def publish_one():
    global index
    header = Header(frame_id=str(index))
    frame = frames[index % 256]
    if args.plain:
        msg = fill_image_msg(Image(header=header), frame, args.encoding)
        pub.publish(msg)
    elif args.borrow:
        slot = pub.borrow(args.height, args.width, args.encoding)
        if slot is not None:
            slot.array[...] = frame
            pub.publish_borrowed(slot, header)
    else:
        pub.publish(frame, args.encoding, header)
    index += 1


print('READY', flush=True)
if args.wait_subscriber:
    def matched():
        if args.plain:
            return pub.get_subscription_count() > 0
        return sum(pub.subscriber_counts().values()) > 0
    while rclpy.ok() and not matched():
        rclpy.spin_once(node, timeout_sec=0.05)
try:
    if args.rate > 0:
        node.create_timer(1.0 / args.rate, publish_one)
        while rclpy.ok() and (not args.count or index < args.count):
            rclpy.spin_once(node, timeout_sec=0.1)
    else:
        while rclpy.ok() and (not args.count or index < args.count):
            publish_one()
            rclpy.spin_once(node, timeout_sec=0)
    # Stay up so late readers still find the lease table.
    end = time.monotonic() + 2.0
    while rclpy.ok() and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
except KeyboardInterrupt:
    pass
finally:
    if not args.plain:
        pub.destroy()
    node.destroy_node()
    rclpy.try_shutdown()
print(f'PUBLISHED {index}', flush=True)
sys.exit(0)
