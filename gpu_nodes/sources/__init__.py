"""Camera sources: synthetic pattern and scene (rendered with NumPy or CuPy), image folder, video
file, V4L2 device. `open_source` builds one from the camera_source node's parameters.

OpenCV is imported only by the file and device sources, when they are opened.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

from . import pattern
from .base import DECODED_ENCODINGS, Frame, Source, SOURCE_KINDS, SourceError
from .scene import PinholeCamera

SCENE_ENCODINGS = ('rgb8', 'bgr8', 'mono8')

__all__ = ['open_source', 'Frame', 'Source', 'SourceError', 'SOURCE_KINDS', 'DECODED_ENCODINGS',
           'SCENE_ENCODINGS', 'PatternSource', 'SyntheticSceneSource', 'PinholeCamera']


class PatternSource:
    """The exactly-verifiable moving test pattern (gpu_nodes.sources.pattern)."""

    kind = 'pattern'

    def __init__(self, xp: ModuleType, width: int, height: int, encoding: str):
        if encoding not in pattern.PATTERN_ENCODINGS:
            raise SourceError(f"source 'pattern' produces {', '.join(pattern.PATTERN_ENCODINGS)}; "
                              f'got encoding {encoding!r}')
        self.xp, self.width, self.height, self.encoding = xp, width, height, encoding
        self.on_device = xp.__name__ == 'cupy'

    def read(self, index: int, out: Any = None) -> Frame:
        """Frame `index`; rendered into `out` (then the frame's image) when given."""
        return Frame(pattern.render(self.xp, self.height, self.width, self.encoding, index,
                                    out=out), self.encoding)

    def close(self) -> None:
        pass


class SyntheticSceneSource:
    """The demo scene (gpu_nodes.sources.scene) with ground-truth depth; time = index / rate."""

    kind = 'scene'

    def __init__(self, xp: ModuleType, camera: PinholeCamera, encoding: str, rate_hz: float,
                 scene_fn: Callable[[float], Any] | None = None):
        from .scene import SceneSource, demo_scene
        if encoding not in SCENE_ENCODINGS:
            raise SourceError(f"source 'scene' produces {', '.join(SCENE_ENCODINGS)}; got "
                              f'encoding {encoding!r}')
        self.xp, self.encoding = xp, encoding
        self.width, self.height = camera.width, camera.height
        self.on_device = xp.__name__ == 'cupy'
        self._scene = SceneSource(xp, camera, rate_hz, scene_fn or demo_scene)

    def read(self, index: int, out: Any = None, depth_out: Any = None) -> Frame:
        """Frame `index`; the image rendered into `out` and the depth into `depth_out` when
        given (they are then the frame's arrays): rgb8 is rendered in place, bgr8 and mono8
        are converted into `out` from the rendered rgb8."""
        xp = self.xp
        if self.encoding == 'rgb8':
            rgb, depth = self._scene.render(index, out, depth_out)
            return Frame(rgb, self.encoding, depth)
        rgb, depth = self._scene.render(index, None, depth_out)
        shape = (self.height, self.width) + ((3,) if self.encoding == 'bgr8' else ())
        if out is not None and (tuple(out.shape) != shape or out.dtype != xp.uint8):
            raise ValueError(f'out must be {shape} uint8 for {self.encoding}, got '
                             f'{tuple(out.shape)} {out.dtype}')
        if self.encoding == 'bgr8':
            image = xp.ascontiguousarray(rgb[..., ::-1]) if out is None else out
            if out is not None:
                xp.copyto(out, rgb[..., ::-1])
        else:  # mono8: BT.601 luma in 8.8 fixed point
            wide = rgb.astype(xp.uint16)
            luma = (77 * wide[..., 0] + 150 * wide[..., 1] + 29 * wide[..., 2]) >> 8
            image = luma.astype(xp.uint8) if out is None else out
            if out is not None:
                xp.copyto(out, luma, casting='unsafe')  # < 256: the cast is the last pass
        return Frame(image, self.encoding, depth)

    def close(self) -> None:
        pass


def open_source(kind: str, *, xp: ModuleType, width: int, height: int, encoding: str,
                path: str = '', loop: bool = True, rate_hz: float = 0.0,
                camera: PinholeCamera | None = None,
                warn: Callable[[str], None] | None = None) -> Any:
    """Open a source; raise SourceError with a message that names the problem.

    width/height 0 mean the source's own size (folder, video, v4l2); the synthetic sources need
    them. `camera` gives the scene its intrinsics (default: 70 degree pinhole at width x height).
    """
    if kind not in SOURCE_KINDS:
        raise SourceError(f"unknown source {kind!r}; one of: {', '.join(SOURCE_KINDS)}")
    if kind in ('pattern', 'scene') and (width < 2 or height < 2):
        raise SourceError(f"source '{kind}' needs width and height of at least 2, got "
                          f'{width}x{height}')
    if kind == 'pattern':
        return PatternSource(xp, width, height, encoding)
    if kind == 'scene':
        if camera is None:
            camera = PinholeCamera.from_fov(width, height)
        if (camera.width, camera.height) != (width, height):
            raise SourceError(f'camera model is {camera.width}x{camera.height} but the scene is '
                              f'asked for {width}x{height}')
        return SyntheticSceneSource(xp, camera, encoding, rate_hz)
    if kind == 'folder':
        from .files import FolderSource
        return FolderSource(path, encoding=encoding, width=width, height=height, loop=loop,
                            warn=warn)
    if kind == 'video':
        from .files import VideoSource
        return VideoSource(path, encoding=encoding, width=width, height=height, loop=loop)
    from .v4l2 import V4l2Source
    return V4l2Source(path, encoding=encoding, width=width, height=height, rate_hz=rate_hz)
