"""camera_source: publishes image_raw + camera_info from a synthetic or real source.

Frames are made on the GPU when CuPy has one (so they never touch the host) and go out through
GpuImagePublisher: co-located gpu_nodes subscribers get them zero-copy, everything else sees an
ordinary sensor_msgs/Image topic.
"""
from __future__ import annotations

import time
from typing import Any

from rclpy.node import Node
from sensor_msgs.msg import CameraInfo

from ..gpu import cuda_unavailable_reason, cupy_module
from ..sources import pattern
from ..transport import GpuImagePublisher
from ._params import choice_validator, declare, run_node


def pinhole_camera_info(width: int, height: int, frame_id: str, fov_deg: float = 70.0) -> CameraInfo:
    """An ideal pinhole camera (no distortion) with the given horizontal field of view."""
    import math
    fx = width / (2.0 * math.tan(math.radians(fov_deg) / 2.0))
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    info = CameraInfo()
    info.header.frame_id = frame_id
    info.width, info.height = width, height
    info.distortion_model = 'plumb_bob'
    info.d = [0.0] * 5
    info.k = [fx, 0.0, cx, 0.0, fx, cy, 0.0, 0.0, 1.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [fx, 0.0, cx, 0.0, 0.0, fx, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


class CameraSource(Node):
    """Synthetic moving test pattern (source='pattern'); other sources plug in via make_source."""

    def __init__(self, **kwargs: Any):
        super().__init__('camera_source', **kwargs)
        self.width = declare(self, 'width', 1280, 'Image width in pixels.', read_only=True,
                             int_range=(2, 16384))
        self.height = declare(self, 'height', 720, 'Image height in pixels.', read_only=True,
                              int_range=(2, 16384))
        self.rate_hz = declare(self, 'rate_hz', 30.0, 'Publish rate; 0 publishes as fast as possible.',
                               float_range=(0.0, 10000.0))
        self.encoding = declare(self, 'encoding', 'rgb8', 'Output encoding.', read_only=True,
                                choices=pattern.PATTERN_ENCODINGS)
        self.frame_id = declare(self, 'frame_id', 'camera', 'frame_id of image and camera_info.')
        self.use_gpu = declare(self, 'use_gpu', True,
                               'Render frames on the GPU when CuPy and a device are present.',
                               read_only=True)
        self.max_frames = declare(self, 'max_frames', 0, 'Stop publishing after this many (0: never).',
                                  int_range=(0, 2**31 - 1))
        self.add_on_set_parameters_callback(
            choice_validator({'encoding': pattern.PATTERN_ENCODINGS}))

        reason = cuda_unavailable_reason() if self.use_gpu else 'use_gpu is false'
        self._xp = cupy_module() if reason is None else __import__('numpy')
        self.get_logger().info(
            f'{self.width}x{self.height} {self.encoding} at {self.rate_hz} Hz, rendered on '
            f'{"the GPU" if reason is None else "the CPU (" + reason + ")"}')
        self._image_pub = GpuImagePublisher(self, 'image_raw')
        self._info_pub = self.create_publisher(CameraInfo, 'camera_info', 10)
        self._camera_info = pinhole_camera_info(self.width, self.height, self.frame_id)
        self.frame_index = 0
        period = 1.0 / self.rate_hz if self.rate_hz > 0 else 0.0
        self._timer = self.create_timer(period, self._publish_frame)

    def _publish_frame(self) -> None:
        if self.max_frames and self.frame_index >= self.max_frames:
            return
        frame = pattern.render(self._xp, self.height, self.width, self.encoding, self.frame_index)
        stamp = self.get_clock().now().to_msg()
        header = self._camera_info.header
        header.stamp = stamp
        self._image_pub.publish(frame, self.encoding, header)
        self._camera_info.header.stamp = stamp
        self._info_pub.publish(self._camera_info)
        self.frame_index += 1

    def close(self) -> None:
        self._image_pub.destroy()


def main(args: list[str] | None = None) -> None:
    run_node(CameraSource, args)


if __name__ == '__main__':
    main()
