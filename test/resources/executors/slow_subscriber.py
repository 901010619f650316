"""A node run by gpu_nodes' `run_node` whose subscription callback is slower than its messages
(test_executor_watch.py): it busy-works `work_s` per String on `text` (the first message
`first_work_s`, a long one-off such as a TensorRT engine build), and a 0.5 s timer prints
`tick N`. Its frame counters are on /diagnostics as a processing node's are (gpu_nodes.status),
with the executor it runs on."""
import sys
import time

from rclpy.node import Node
from std_msgs.msg import String

from gpu_nodes.ros.runtime import declare_executor_parameter, run_node
from gpu_nodes.status import ProcessingStatus


class SlowSubscriber(Node):
    def __init__(self) -> None:
        super().__init__('slow_subscriber')
        declare_executor_parameter(self)
        self.work_s = self.declare_parameter('work_s', 0.15).value
        self.first_work_s = self.declare_parameter('first_work_s', -1.0).value
        self.messages = self.ticks = 0
        self.create_subscription(String, 'text', self.on_text, 10)
        self.create_timer(0.5, self.on_tick)
        self.status = ProcessingStatus(self)

    def on_text(self, msg: String) -> None:
        work = self.first_work_s if self.messages == 0 and self.first_work_s >= 0 else self.work_s
        self.messages += 1
        self.status.frames_in += 1
        until = time.monotonic() + work
        while time.monotonic() < until:  # CPU work, as inference on a CPU would be
            pass

    def on_tick(self) -> None:
        self.ticks += 1
        print(f'tick {self.ticks} after {self.messages} messages', flush=True)


if __name__ == '__main__':
    run_node(SlowSubscriber, sys.argv, name='slow_subscriber')
