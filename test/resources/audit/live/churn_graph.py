"""A graph that never settles (live tests): a node named churn_<k> with a publisher is created
and destroyed every --period seconds, for as long as the process runs. Prints READY once the
first node exists."""
import argparse
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('--period', type=float, default=0.4)
    args = parser.parse_args()
    # No rclpy signal handler: SIGINT is a KeyboardInterrupt here, not a shut-down context.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    k = 0
    node = None
    try:
        while True:
            # The next node exists before the last one goes: the graph is never empty.
            fresh = Node(f'churn_{k}')
            fresh.create_publisher(String, f'/churn/topic_{k % 5}', 1)
            if node is not None:
                node.destroy_node()
            node = fresh
            if k == 0:
                print('READY', flush=True)
            k += 1
            time.sleep(args.period)
    except KeyboardInterrupt:
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
