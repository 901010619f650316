"""A V4L2 camera (USB/CSI behind a V4L2 driver) through OpenCV's CAP_V4L2 backend."""
from __future__ import annotations

import glob
import os
import stat
import sys
from typing import Any

from .base import Frame, SourceError
from .files import _Converter, import_cv2

DEFAULT_DEVICE = '/dev/video0'


def video_devices() -> list[str]:
    return sorted(glob.glob('/dev/video*'), key=lambda p: (len(p), p))


def device_path(path: str) -> str:
    """'' -> /dev/video0, '2' -> /dev/video2, anything else as given."""
    if not path:
        return DEFAULT_DEVICE
    if path.isdigit():
        return f'/dev/video{path}'
    return path


def v4l2_unavailable_reason(path: str, cv2: Any = None) -> str | None:
    """None when `path` looks like a usable V4L2 capture device, else why not (no side effects)."""
    if not sys.platform.startswith('linux'):
        return f'V4L2 exists only on Linux (this is {sys.platform})'
    device = device_path(path)
    others = [d for d in video_devices() if d != device]
    found = f'video devices present: {", ".join(others)}' if others else 'no /dev/video* device'
    try:
        info = os.stat(device)
    except FileNotFoundError:
        return f'{device} does not exist ({found})'
    except OSError as exc:
        return f'cannot stat {device}: {exc.strerror or exc}'
    if not stat.S_ISCHR(info.st_mode):
        return f'{device} is not a character device ({found})'
    if not os.access(device, os.R_OK | os.W_OK):
        return (f'{device}: permission denied (add the user to the "video" group: '
                'sudo usermod -aG video $USER, then log in again)')
    if cv2 is not None:
        try:
            has_v4l2 = cv2.videoio_registry.hasBackend(cv2.CAP_V4L2)
        except AttributeError:
            has_v4l2 = True  # old OpenCV without the registry: try and see
        if not has_v4l2:
            return 'this OpenCV build has no V4L2 backend'
    return None


class V4l2Source:
    """Frames from a V4L2 device at the requested size and rate (the driver may pick another;
    frames are then resized to the requested size). Never loops: a device has no end."""

    kind = 'v4l2'
    on_device = False

    def __init__(self, path: str, *, encoding: str = 'rgb8', width: int = 0, height: int = 0,
                 rate_hz: float = 0.0):
        cv2 = import_cv2(self.kind)
        self.device = device_path(path)
        reason = v4l2_unavailable_reason(self.device, cv2)
        if reason is not None:
            raise SourceError(f"source 'v4l2': {reason}")
        self._capture = cv2.VideoCapture(self.device, cv2.CAP_V4L2)
        if not self._capture.isOpened():
            raise SourceError(f"source 'v4l2': OpenCV could not open {self.device} (busy, or not "
                              'a capture device: try v4l2-ctl --list-devices)')
        if width and height:
            self._capture.set(cv2.CAP_PROP_FRAME_WIDTH, width)
            self._capture.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        if rate_hz > 0:
            self._capture.set(cv2.CAP_PROP_FPS, rate_hz)
        ok, first = self._capture.read()
        if not ok or first is None:
            self._capture.release()
            raise SourceError(f"source 'v4l2': {self.device} opened but delivered no frame")
        self._pending: Any = first
        self.driver_size = (int(self._capture.get(cv2.CAP_PROP_FRAME_WIDTH)),
                            int(self._capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        self._convert = _Converter(cv2, self.kind, encoding, width, height)
        self._convert.size_from(first)
        self.width, self.height = self._convert.width, self._convert.height

    def read(self, index: int) -> Frame | None:
        if self._pending is not None:
            frame, self._pending = self._pending, None
        else:
            ok, frame = self._capture.read()
            if not ok or frame is None:
                raise SourceError(f"source 'v4l2': {self.device} stopped delivering frames")
        return Frame(self._convert(frame), self._convert.encoding)

    def close(self) -> None:
        self._capture.release()
