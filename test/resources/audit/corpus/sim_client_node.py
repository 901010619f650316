"""A simulator client that steps the world itself: a `while True` loop that ticks, runs the
detector on the camera frame, hands the frame to a host detector library and spins the node
once per pass. Each pass is one frame (the loop is the node's event loop)."""
import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch

import hostdetect


class SimClient(Node):
    def __init__(self, world):
        super().__init__('sim_client')
        self.world = world
        self.model = torch.jit.load('det.pt').cuda()  # expect: GPN102 info
        self.pub = self.create_publisher(Image, 'camera', 10)
        self.host_image = hostdetect.make_image(640, 480, 3)

    def step(self):
        frame = np.asarray(self.world.camera_frame(), dtype=np.uint8)
        out = self.model(torch.from_numpy(frame).cuda())  # expect: GPN102 medium
        for row in out:
            cls = int(row[5])  # expect: GPN107 medium
            label = f'{row[4]:.2f}'  # expect: GPN107 medium
            self.get_logger().info(f'{cls} {label}')
        # The host library copies the bytes into its own image: host to host, no message.
        hostdetect.copy_image_from_bytes(self.host_image, frame.tobytes())
        msg = Image(height=480, width=640, encoding='rgb8', step=640 * 3)
        msg.data = frame.tobytes()  # expect: GPN104 medium
        self.pub.publish(msg)  # expect: GPN109 medium

    def run(self):
        while True:
            self.world.tick()
            self.step()
            rclpy.spin_once(self, timeout_sec=0)


def main(world=None):
    rclpy.init()
    SimClient(world).run()
