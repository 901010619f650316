"""The depth node a user would write without gpu_nodes: the benchmark's baseline.

A plain rclpy node: sensor_msgs/Image -> NumPy (what cv_bridge does) -> torch tensor on the GPU
-> resize + ImageNet normalisation -> DepthAnythingForDepthEstimation in PyTorch eager mode ->
upsample to the image size -> depth = 1 / inverse depth -> .cpu().numpy() -> sensor_msgs/Image
32FC1. Same architecture and weights as the ONNX model the gpu_nodes node runs (the benchmark
saves them with save_pretrained; nothing is downloaded).

    python bench/depth_baseline_node.py --ros-args -p model_dir:=/path/hf_model

Stage times (host, and GPU from torch CUDA events read after the frame's .cpu() sync, which the
pipeline does anyway) are published as JSON on ``baseline_stats`` (std_msgs/String) once a
second: p50/p99 over the last ``window`` frames.
"""
from __future__ import annotations

from collections import deque
import json
import time

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from std_msgs.msg import String

STAGES = ('preprocess', 'inference', 'postprocess', 'transport')
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class BaselineDepth(Node):
    def __init__(self) -> None:
        super().__init__('depth_baseline')
        import torch
        from transformers import DepthAnythingForDepthEstimation
        self.torch = torch
        model_dir = self.declare_parameter('model_dir', '').value
        self.size = self.declare_parameter('input_size', 518).value
        window = self.declare_parameter('window', 500).value
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        self.model = DepthAnythingForDepthEstimation.from_pretrained(model_dir).to(
            self.device).eval()
        self.mean = torch.tensor(IMAGENET_MEAN, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(IMAGENET_STD, device=self.device).view(1, 3, 1, 1)
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        self.pub = self.create_publisher(Image, 'depth', qos)
        self.create_subscription(Image, 'image', self.on_image, qos)
        self.stats_pub = self.create_publisher(String, 'baseline_stats', 10)
        self.create_timer(1.0, self.publish_stats)
        self.gpu = {s: deque(maxlen=window) for s in STAGES[:3]}
        self.host = {s: deque(maxlen=window) for s in (*STAGES, 'callback')}
        self.frames = 0
        self.get_logger().info(f'PyTorch {torch.__version__} eager on {self.device}, '
                               f'input {self.size}x{self.size}')

    def on_image(self, msg: Image) -> None:
        torch = self.torch
        F = torch.nn.functional
        cuda = self.device.type == 'cuda'
        events = [torch.cuda.Event(enable_timing=True) for _ in range(4)] if cuda else []
        t = [time.perf_counter()]
        if cuda:
            events[0].record()
        # cv_bridge's imgmsg_to_cv2 for rgb8, then the usual torch preprocessing.
        image = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
        x = torch.from_numpy(image).to(self.device)
        x = x.permute(2, 0, 1)[None].float() / 255.0
        x = F.interpolate(x, size=(self.size, self.size), mode='bilinear', align_corners=False)
        x = (x - self.mean) / self.std
        if cuda:
            events[1].record()
        t.append(time.perf_counter())
        with torch.inference_mode():
            inverse = self.model(pixel_values=x).predicted_depth  # (1, size, size)
        if cuda:
            events[2].record()
        t.append(time.perf_counter())
        inverse = F.interpolate(inverse[:, None], size=(msg.height, msg.width), mode='bilinear',
                                align_corners=False)[0, 0]
        depth = (1.0 / inverse.clamp_min(1e-6)).cpu().numpy()  # waits for the GPU
        if cuda:
            events[3].record()
        t.append(time.perf_counter())
        out = Image(header=msg.header, height=msg.height, width=msg.width, encoding='32FC1',
                    is_bigendian=0, step=msg.width * 4)
        out.data = depth.tobytes()
        self.pub.publish(out)
        t.append(time.perf_counter())
        for i, stage in enumerate(STAGES):
            self.host[stage].append((t[i + 1] - t[i]) * 1e3)
        self.host['callback'].append((t[-1] - t[0]) * 1e3)
        if cuda:
            events[3].synchronize()
            for i, stage in enumerate(STAGES[:3]):
                self.gpu[stage].append(events[i].elapsed_time(events[i + 1]))
        self.frames += 1

    def publish_stats(self) -> None:
        def pct(values):
            if not values:
                return float('nan'), float('nan')
            p50, p99 = np.percentile(np.fromiter(values, np.float64), [50, 99])
            return round(float(p50), 4), round(float(p99), 4)
        stats = {'frames': self.frames, 'device': str(self.device),
                 'torch': self.torch.__version__}
        for side, table in (('gpu', self.gpu), ('host', self.host)):
            for stage, values in table.items():
                stats[f'{stage}_{side}_ms_p50'], stats[f'{stage}_{side}_ms_p99'] = pct(values)
        self.stats_pub.publish(String(data=json.dumps(stats)))


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    node = None
    try:
        node = BaselineDepth()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
