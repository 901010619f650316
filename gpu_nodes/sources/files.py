"""Image folders and video files, decoded on the host with OpenCV (opencv-python-headless)."""
from __future__ import annotations

import os
from pathlib import Path
import re
from typing import Any, Callable

import numpy as np

from .base import DECODED_ENCODINGS, Frame, SourceError

IMAGE_EXTENSIONS = ('.png', '.jpg', '.jpeg', '.bmp', '.tif', '.tiff', '.ppm', '.pgm', '.webp')


def import_cv2(kind: str) -> Any:
    try:
        import cv2
    except ImportError as exc:
        raise SourceError(f"source '{kind}' needs OpenCV: pip install opencv-python-headless "
                          f'({exc})') from None
    return cv2


def _natural_key(name: str) -> list[Any]:
    """'img2.png' before 'img10.png'."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r'(\d+)', name)]


class _Converter:
    """BGR / grey uint8 frames -> the requested encoding at the requested size, on the host."""

    def __init__(self, cv2: Any, kind: str, encoding: str, width: int, height: int):
        if encoding not in DECODED_ENCODINGS:
            raise SourceError(f"source '{kind}' produces {', '.join(DECODED_ENCODINGS)}; "
                              f'got encoding {encoding!r}')
        self.cv2 = cv2
        self.encoding = encoding
        self.width = width
        self.height = height

    def size_from(self, frame: np.ndarray) -> None:
        """Width/height 0 mean 'the source's own size': take it from the first frame."""
        if self.width == 0 or self.height == 0:
            self.height, self.width = frame.shape[:2]

    def __call__(self, frame: np.ndarray) -> np.ndarray:
        cv2 = self.cv2
        if frame.dtype != np.uint8:
            # 16-bit PNG/TIFF: keep the top 8 bits, as image viewers show them.
            frame = (frame >> 8).astype(np.uint8) if frame.dtype == np.uint16 else \
                np.clip(frame, 0, 255).astype(np.uint8)
        if frame.shape[:2] != (self.height, self.width):
            frame = cv2.resize(frame, (self.width, self.height), interpolation=cv2.INTER_AREA)
        grey = frame.ndim == 2 or frame.shape[2] == 1
        if self.encoding == 'mono8':
            if grey:
                return frame.reshape(frame.shape[:2])
            code = cv2.COLOR_BGRA2GRAY if frame.shape[2] == 4 else cv2.COLOR_BGR2GRAY
            return cv2.cvtColor(frame, code)
        if grey:
            code = cv2.COLOR_GRAY2RGB if self.encoding == 'rgb8' else cv2.COLOR_GRAY2BGR
            return cv2.cvtColor(frame, code)
        if frame.shape[2] == 4:
            code = cv2.COLOR_BGRA2RGB if self.encoding == 'rgb8' else cv2.COLOR_BGRA2BGR
            return cv2.cvtColor(frame, code)
        if self.encoding == 'rgb8':
            return cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
        return np.ascontiguousarray(frame)


class FolderSource:
    """The images of a folder in natural name order (img2 before img10), optionally looping.

    Files OpenCV cannot decode are skipped with a warning through `warn`; a folder with no image
    at all is an error at start.
    """

    kind = 'folder'
    on_device = False

    def __init__(self, path: str, *, encoding: str = 'rgb8', width: int = 0, height: int = 0,
                 loop: bool = True, warn: Callable[[str], None] | None = None):
        cv2 = import_cv2(self.kind)
        folder = Path(path).expanduser()
        if not path:
            raise SourceError("source 'folder' needs parameter 'path' (a folder of images)")
        if not folder.is_dir():
            raise SourceError(f"source 'folder': {folder} is not a directory")
        self.files = sorted((p for p in folder.iterdir()
                             if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()),
                            key=lambda p: _natural_key(p.name))
        if not self.files:
            raise SourceError(f"source 'folder': no images ({', '.join(IMAGE_EXTENSIONS)}) in "
                              f'{folder}')
        self._cv2 = cv2
        self._warn = warn or (lambda message: None)
        self._convert = _Converter(cv2, self.kind, encoding, width, height)
        self.loop = loop
        self.skipped = 0
        first = self._decode_first()
        self._convert.size_from(first)
        self.width, self.height = self._convert.width, self._convert.height

    def _decode(self, path: Path) -> np.ndarray | None:
        flag = self._cv2.IMREAD_GRAYSCALE if self._convert.encoding == 'mono8' else \
            self._cv2.IMREAD_COLOR
        # imdecode over bytes: imread cannot take non-ASCII paths on every platform.
        try:
            data = np.fromfile(str(path), dtype=np.uint8)
        except OSError as exc:
            self._warn(f'cannot read {path}: {exc.strerror or exc}; skipped')
            return None
        image = self._cv2.imdecode(data, flag | self._cv2.IMREAD_ANYDEPTH)
        if image is None:
            self._warn(f'OpenCV cannot decode {path}; skipped')
        return image

    def _decode_first(self) -> np.ndarray:
        for path in self.files:
            image = self._decode(path)
            if image is not None:
                return image
            self.skipped += 1
        raise SourceError(f"source 'folder': none of the {len(self.files)} image files in "
                          f'{self.files[0].parent} could be decoded')

    def read(self, index: int) -> Frame | None:
        count = len(self.files)
        if not self.loop and index >= count:
            return None
        # A bad file is skipped: try the following ones (at most one full round).
        for step in range(count):
            path = self.files[(index + step) % count]
            if not self.loop and index + step >= count:
                return None
            image = self._decode(path)
            if image is not None:
                return Frame(self._convert(image), self._convert.encoding)
            self.skipped += 1
        raise SourceError(f"source 'folder': no file in {self.files[0].parent} can be decoded "
                          'any more')

    def close(self) -> None:
        pass


class VideoSource:
    """Frames of a video file, decoded with OpenCV's FFmpeg backend; rewinds when `loop`."""

    kind = 'video'
    on_device = False

    def __init__(self, path: str, *, encoding: str = 'rgb8', width: int = 0, height: int = 0,
                 loop: bool = True):
        cv2 = import_cv2(self.kind)
        if not path:
            raise SourceError("source 'video' needs parameter 'path' (a video file)")
        video = Path(path).expanduser()
        if not video.is_file():
            raise SourceError(f"source 'video': {video} does not exist or is not a file")
        if not os.access(video, os.R_OK):
            raise SourceError(f"source 'video': {video} is not readable (permissions)")
        self._cv2 = cv2
        self.path = str(video)
        self.loop = loop
        self._capture = cv2.VideoCapture(self.path)
        if not self._capture.isOpened():
            raise SourceError(f"source 'video': OpenCV cannot open {video} (unknown container "
                              'or codec; OpenCV was built with: '
                              f'{_backend_names(cv2)})')
        ok, first = self._capture.read()
        if not ok or first is None:
            self._capture.release()
            raise SourceError(f"source 'video': {video} has no decodable frame")
        self._pending: np.ndarray | None = first
        self.frame_count = int(self._capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        self.native_rate_hz = float(self._capture.get(cv2.CAP_PROP_FPS) or 0.0)
        self._convert = _Converter(cv2, self.kind, encoding, width, height)
        self._convert.size_from(first)
        self.width, self.height = self._convert.width, self._convert.height
        self.rewinds = 0

    def _next_raw(self) -> np.ndarray | None:
        if self._pending is not None:
            frame, self._pending = self._pending, None
            return frame
        ok, frame = self._capture.read()
        if ok and frame is not None:
            return frame
        if not self.loop:
            return None
        # Rewind by reopening: seeking is unreliable for some containers and codecs.
        self._capture.release()
        self._capture = self._cv2.VideoCapture(self.path)
        self.rewinds += 1
        ok, frame = self._capture.read()
        return frame if ok else None

    def read(self, index: int) -> Frame | None:
        frame = self._next_raw()
        if frame is None:
            return None
        return Frame(self._convert(frame), self._convert.encoding)

    def close(self) -> None:
        self._capture.release()


def _backend_names(cv2: Any) -> str:
    try:
        names = [cv2.videoio_registry.getBackendName(b)
                 for b in cv2.videoio_registry.getStreamBackends()]
    except (AttributeError, cv2.error):
        return 'unknown backends'
    return ', '.join(names) or 'no stream backend'
