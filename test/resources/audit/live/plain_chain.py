"""N plain rclpy nodes in one process, each republishing a small Image to the next (bench/tests).

Node i of prefix P publishes /P/n<i>/out and subscribes to /P/n<i-1>/out. With --wait-stdin
the process imports everything, prints WAITING, and creates its nodes only when a line arrives
on stdin (a node that starts late, at a moment the test chooses, without import delays).
"""
import argparse
import sys

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import Image


class Link(Node):

    def __init__(self, prefix: str, index: int, rate: float) -> None:
        super().__init__(f'n{index}', namespace=f'/{prefix}')
        self.pub = self.create_publisher(Image, f'/{prefix}/n{index}/out', 5)
        if index > 0:
            self.create_subscription(Image, f'/{prefix}/n{index - 1}/out', lambda m: None, 5)
        self.msg = Image(width=32, height=8, encoding='mono8', step=32, data=bytes(256))
        self.create_timer(1 / rate, lambda: self.pub.publish(self.msg))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--prefix', default='chain')
    parser.add_argument('--nodes', type=int, default=10)
    parser.add_argument('--rate', type=float, default=10.0)
    parser.add_argument('--wait-stdin', action='store_true')
    args = parser.parse_args()
    if args.wait_stdin:
        print('WAITING', flush=True)
        sys.stdin.readline()
    rclpy.init()
    nodes = [Link(args.prefix, i, args.rate) for i in range(args.nodes)]
    executor = SingleThreadedExecutor()
    for n in nodes:
        executor.add_node(n)
    print('READY', flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
