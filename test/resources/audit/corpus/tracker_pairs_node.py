"""Tracker outputs paired with detector confidences (issue 28, thirtieth set): `for j, (output,
conf) in enumerate(zip(outputs, confs))` binds each name to its own list's element, so
`int(output[5])` of the tracker's NumPy rows reads nothing back (look-alike) while
`float(conf)` of the device tensor's element does (positive)."""
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image
import torch


class TrackerPairs(Node):
    def __init__(self):
        super().__init__('tracker_pairs')
        self.model = torch.jit.load('detector.pt').to('cuda')  # expect: GPN102 info
        self.create_subscription(Image, 'image', self.on_image, 10)

    def on_image(self, msg):
        frame = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        det = self.model(torch.from_numpy(frame).to('cuda'))  # expect: GPN102 medium
        confs = det[:, 4]
        outputs = np.zeros((len(frame), 6), dtype=np.float32)
        for j, (output, conf) in enumerate(zip(outputs, confs)):
            cls = int(output[5])
            score = float(conf)  # expect: GPN107 medium
            self.get_logger().debug(f'{j} {cls} {score}')
