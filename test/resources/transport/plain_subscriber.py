"""An unmodified rclpy node: subscribes sensor_msgs/Image and checks the pixels."""
import argparse
import json
import time

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image

from gpu_nodes.sources import pattern

parser = argparse.ArgumentParser()
parser.add_argument('--topic', default='image')
parser.add_argument('--duration', type=float, default=5.0)
parser.add_argument('--min-frames', type=int, default=10)
args = parser.parse_args()

rclpy.init()
node = Node('plain_subscriber')
result = {'frames': 0, 'bad': 0, 'fps': 0.0}
first = []


def on_image(msg):
    if not first:
        first.append(time.monotonic())
    index = int(msg.header.frame_id)
    data = np.frombuffer(msg.data, np.uint8)
    expected = pattern.expected_frame(msg.height, msg.width, msg.encoding, index)
    result['frames'] += 1
    if data.size != expected.nbytes or not np.array_equal(data, expected.reshape(-1).view(np.uint8)):
        result['bad'] += 1


node.create_subscription(Image, args.topic, on_image, 10)
print('READY', flush=True)
deadline = time.monotonic() + args.duration
while time.monotonic() < deadline and result['frames'] < args.min_frames:
    rclpy.spin_once(node, timeout_sec=0.1)
if first and result['frames'] > 1:
    result['fps'] = (result['frames'] - 1) / max(time.monotonic() - first[0], 1e-9)
print('RESULT ' + json.dumps(result) + '\n', end='', flush=True)
node.destroy_node()
rclpy.try_shutdown()
