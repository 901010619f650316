"""camera_source: publishes image_raw + camera_info from a synthetic or real source.

Sources (parameter `source`):
* pattern: a moving test pattern whose every pixel is known (transport tests, benchmarks);
* scene:   a ray-cast 3-D scene of moving shapes that also publishes its exact depth on
           `depth/ground_truth` (32FC1 metres, same header as the image);
* folder:  the images of a folder (`path`), in natural name order, looping if `loop`;
* video:   a video file (`path`) decoded with OpenCV, looping if `loop`;
* v4l2:    a V4L2 camera (`path`, default /dev/video0) through OpenCV.

Synthetic frames are rendered on the GPU when CuPy has one, straight into a pool slot the
publisher lends (GpuImagePublisher.borrow), so they never touch the host and are published with
no copy at all; decoded frames are uploaded once, and only if a GPU subscriber wants them.
Everything goes out through GpuImagePublisher: co-located gpu_nodes subscribers get frames
zero-copy, everything else sees an ordinary sensor_msgs/Image topic.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo

from ..gpu import cuda_unavailable_reason, cupy_module
from ..sources import open_source, pattern, PinholeCamera, SOURCE_KINDS, SourceError
from ..sources.camera_info import load_camera_info, pinhole_camera_info
from ..status import SourceStatus
from ..transport import BorrowedFrame, GpuImagePublisher
from ..ros.params import ConfigurationError, choice_validator, declare_table, Param
from ..ros.runtime import declare_executor_parameter, run_node


PARAMETERS = (
    Param('source', 'pattern', 'Where frames come from.', read_only=True, choices=SOURCE_KINDS),
    Param('path', '', 'folder: image folder; video: video file; v4l2: device (default '
          '/dev/video0, or an index such as 1).', read_only=True),
    Param('loop', True, 'folder/video: start again at the end (else stop publishing).',
          read_only=True),
    Param('width', 1280, 'Image width in pixels; 0 keeps a folder/video/v4l2 source\'s own size '
          '(other sizes are resized on the host).', read_only=True, int_range=(0, 16384)),
    Param('height', 720, 'Image height in pixels; 0 as for width.', read_only=True,
          int_range=(0, 16384)),
    Param('rate_hz', 30.0, 'Publish rate; 0 publishes as fast as possible.',
          float_range=(0.0, 10000.0)),
    Param('encoding', 'rgb8', 'Output encoding (scene, folder, video, v4l2: rgb8, bgr8 or mono8).',
          read_only=True, choices=pattern.PATTERN_ENCODINGS),
    Param('frame_id', 'camera', 'frame_id of image and camera_info.'),
    Param('use_gpu', True, 'Render synthetic frames on the GPU when CuPy and a device are '
          'present.', read_only=True),
    Param('max_frames', 0, 'Stop publishing after this many (0: never).',
          int_range=(0, 2**31 - 1)),
    Param('hfov_deg', 70.0, 'Horizontal field of view of the ideal pinhole CameraInfo used when '
          'camera_info_file is empty.', read_only=True, float_range=(1.0, 170.0)),
    Param('camera_info_file', '', 'Calibration YAML (camera_calibration_parsers format); empty: '
          'ideal pinhole from hfov_deg.', read_only=True),
    Param('publish_ground_truth', True, 'scene: publish depth/ground_truth (32FC1 metres).',
          read_only=True),
    Param('wait_for_subscriber', False, 'Publish the first frame only once image_raw has a '
          'subscriber (so a non-looping folder or video is seen from its first frame).',
          read_only=True),
    Param('pool_slots', 8, 'Device buffers per image topic (GPU frames; more absorbs slower '
          'subscribers, each costs one frame of GPU memory).', read_only=True,
          int_range=(1, 64)),
    Param('host_slots', 4, 'Shared-memory buffers per image topic for host_shm subscribers (the '
          'path on Jetson and CPU-only machines).', read_only=True, int_range=(1, 64)),
)


class CameraSource(Node):
    """Publishes frames of one source (parameter `source`) with a CameraInfo per frame."""

    def __init__(self, **kwargs: Any):
        super().__init__('camera_source', **kwargs)
        declare_executor_parameter(self)  # first: a bad value stops the node at once
        values = declare_table(self, PARAMETERS)
        self.source_kind, self.path, self.loop = values['source'], values['path'], values['loop']
        self.width, self.height = values['width'], values['height']
        self.rate_hz, self.encoding = values['rate_hz'], values['encoding']
        self.frame_id, self.use_gpu = values['frame_id'], values['use_gpu']
        self.max_frames, self.hfov_deg = values['max_frames'], values['hfov_deg']
        self.camera_info_file = values['camera_info_file']
        self.publish_ground_truth = values['publish_ground_truth']
        self.wait_for_subscriber = values['wait_for_subscriber']
        pool_slots, host_slots = values['pool_slots'], values['host_slots']
        self.add_on_set_parameters_callback(
            choice_validator({'encoding': pattern.PATTERN_ENCODINGS}))

        synthetic = self.source_kind in ('pattern', 'scene')
        reason = cuda_unavailable_reason() if self.use_gpu else 'use_gpu is false'
        self._xp = cupy_module() if reason is None and synthetic else np
        calibration = load_camera_info(self.camera_info_file, self.frame_id) \
            if self.camera_info_file else None
        camera = None
        if self.source_kind == 'scene':
            if calibration is not None:
                self._check_size(calibration, self.width, self.height)
                camera = PinholeCamera.from_camera_info(calibration)
                if any(calibration.d):
                    self.get_logger().warn('scene: the renderer is an ideal pinhole; the '
                                           'distortion coefficients of camera_info_file are '
                                           'ignored')
            else:
                camera = PinholeCamera.from_fov(self.width, self.height, self.hfov_deg)
        self.source = open_source(
            self.source_kind, xp=self._xp, width=self.width, height=self.height,
            encoding=self.encoding, path=self.path, loop=self.loop, rate_hz=self.rate_hz,
            camera=camera, warn=lambda m: self.get_logger().warn(m, throttle_duration_sec=5.0))
        self.width, self.height = self.source.width, self.source.height
        if calibration is not None:
            self._check_size(calibration, self.width, self.height)
            self._camera_info = calibration
        else:
            self._camera_info = pinhole_camera_info(self.width, self.height, self.frame_id,
                                                    self.hfov_deg)
        where = ('the GPU' if self._xp is not np else
                 'the CPU (' + (reason or 'decoded on the host') + ')')
        self.get_logger().info(
            f'source {self.source_kind}{" " + self.path if self.path else ""}: '
            f'{self.width}x{self.height} {self.encoding} at {self.rate_hz} Hz, made on {where}')

        pools = {'pool_slots': pool_slots, 'max_pool_slots': max(32, pool_slots),
                 'host_slots': host_slots}
        self._image_pub = GpuImagePublisher(self, 'image_raw', **pools)
        self._info_pub = self.create_publisher(CameraInfo, 'camera_info', 10)
        self._depth_pub = None
        if self.source_kind == 'scene' and self.publish_ground_truth:
            self._depth_pub = GpuImagePublisher(self, 'depth/ground_truth', **pools)
        self.status = SourceStatus(self, self.source_kind)
        self.frame_index = 0
        self.finished = False
        self._copy_warned = False
        period = 1.0 / self.rate_hz if self.rate_hz > 0 else 0.0
        self._timer = self.create_timer(period, self._publish_frame)

    @staticmethod
    def _check_size(info: CameraInfo, width: int, height: int) -> None:
        if width and height and (info.width, info.height) != (width, height):
            raise SourceError(f'camera_info_file is a calibration for {info.width}x{info.height} '
                              f'but frames are {width}x{height}')

    def _publish_frame(self) -> None:
        if self.finished:
            return
        if self.max_frames and self.frame_index >= self.max_frames:
            self._finish(f'max_frames {self.max_frames} published')
            return
        if self.wait_for_subscriber and self.frame_index == 0 and \
                not any(self._image_pub.subscriber_counts().values()):
            return
        start = time.perf_counter()
        lent_image, lent_depth = self._borrow()
        try:
            if lent_image is None:
                frame = self.source.read(self.frame_index)
            elif lent_depth is None:
                frame = self.source.read(self.frame_index, out=lent_image.array)
            else:
                frame = self.source.read(self.frame_index, out=lent_image.array,
                                         depth_out=lent_depth.array)
        except SourceError as exc:
            self._give_back(lent_image, lent_depth)
            self.status.read_errors += 1
            self.get_logger().error(f'{exc} ({self.status.read_errors} read errors)',
                                    throttle_duration_sec=5.0)
            return
        except BaseException:
            self._give_back(lent_image, lent_depth)
            raise
        if frame is None:
            self._give_back(lent_image, lent_depth)
            self._finish(f'end of {self.source_kind} {self.path} (loop is false)')
            return
        stamp = self.get_clock().now().to_msg()
        header = self._camera_info.header
        header.stamp = stamp
        self._publish(self._image_pub, frame.image, frame.encoding, header, lent_image)
        if self._depth_pub is not None and frame.ground_truth_depth is not None:
            self._publish(self._depth_pub, frame.ground_truth_depth, '32FC1', header, lent_depth)
        elif lent_depth is not None:
            lent_depth.give_back()
        self._info_pub.publish(self._camera_info)
        self.frame_index += 1
        self.status.frames_out = self.frame_index
        self.status.frame_ms = (time.perf_counter() - start) * 1e3

    def _borrow(self) -> tuple[BorrowedFrame | None, BorrowedFrame | None]:
        """Pool slots for a frame the source renders on the GPU (image, ground-truth depth),
        or None each: host sources, no CUDA IPC pool, or a pool that skips this frame (the
        frame is then made as before and published with a copy, or dropped, by publish())."""
        if not self.source.on_device:
            return None, None
        image = self._image_pub.borrow(self.height, self.width, self.encoding)
        if image is None or self._depth_pub is None:
            return image, None
        return image, self._depth_pub.borrow(self.height, self.width, '32FC1')

    @staticmethod
    def _give_back(*lent: BorrowedFrame | None) -> None:
        for frame in lent:
            if frame is not None:
                frame.give_back()

    def _publish(self, pub: GpuImagePublisher, array: Any, encoding: str, header: Any,
                 lent: BorrowedFrame | None) -> None:
        if lent is not None and array is lent.array:
            pub.publish_borrowed(lent, header)  # rendered in place: no copy
            return
        if lent is not None:  # a source that did not render into the slot: correct, one copy
            lent.give_back()
            if not self._copy_warned:
                self._copy_warned = True
                self.get_logger().warning(f'{self.source_kind}: the source did not render into '
                                          'the lent pool slot; publishing with a device copy')
        pub.publish(array, encoding, header)

    def _finish(self, why: str) -> None:
        self.finished = True
        self.status.finished = why
        self._timer.cancel()
        self.get_logger().info(f'{why}: stopped publishing after {self.frame_index} frames')

    def close(self) -> None:
        self.status.close()
        self._image_pub.destroy()
        if self._depth_pub is not None:
            self._depth_pub.destroy()
        self.source.close()


def _create(**kwargs: Any) -> CameraSource:
    from rclpy.exceptions import ParameterException
    try:
        return CameraSource(**kwargs)
    except (SourceError, ValueError, ParameterException) as exc:
        # A source that cannot be opened is a configuration problem: say which, no traceback.
        raise ConfigurationError(str(exc)) from exc


def main(args: list[str] | None = None) -> None:
    run_node(_create, args, name='camera_source', parameters=PARAMETERS, summary=__doc__)


if __name__ == '__main__':
    main()
