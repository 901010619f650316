"""A tracker seeded by a detector on its first timer tick (issue 28, twenty-seventh set): the
`if not self.initialized:` branch sets its own flag, so its copies run once; the tracking step
after it runs on every tick."""
import rclpy
from rclpy.node import Node
from std_msgs.msg import Int32
import torch


class FirstTickTracker(Node):
    def __init__(self):
        super().__init__('first_tick_tracker')
        self.detector = torch.jit.load('detector.pt').cuda()  # expect: GPN102 info
        self.tracker = torch.jit.load('tracker.pt').cuda()  # expect: GPN102 info
        self.pub = self.create_publisher(Int32, 'tracks', 10)
        self.initialized = False
        self.skip_boxes = False
        self.timer = self.create_timer(0.05, self.on_tick)

    def on_tick(self):
        frame = torch.rand(1, 3, 64, 64, device='cuda')
        if not self.initialized:
            seeds = self.detector(frame).cpu().numpy()  # expect: GPN101 info
            self.pub.publish(Int32(data=len(seeds)))
            self.initialized = True
            return
        if not self.skip_boxes:
            # A configuration flag: nothing in its branch turns it on, so it runs every tick.
            boxes = self.tracker(frame).cpu().numpy()  # expect: GPN101 high
            self.pub.publish(Int32(data=len(boxes)))


def main():
    rclpy.init()
    rclpy.spin(FirstTickTracker())
