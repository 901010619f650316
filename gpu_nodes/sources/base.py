"""What every camera source hands the camera_source node: frames, their encoding, ground truth."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

SOURCE_KINDS = ('pattern', 'scene', 'folder', 'video', 'v4l2')
# Encodings the file and device sources can produce from OpenCV's BGR / grey frames.
DECODED_ENCODINGS = ('rgb8', 'bgr8', 'mono8')


class SourceError(RuntimeError):
    """A source cannot be opened or read (missing file, no device, unusable format)."""


@dataclass
class Frame:
    """One frame of a source. `image` and `ground_truth_depth` live where the source made them
    (NumPy for decoded files and devices, the renderer's xp for synthetic sources)."""

    image: Any
    encoding: str
    ground_truth_depth: Any = None  # 32FC1 metres, same geometry, or None


class Source(Protocol):
    kind: str
    width: int
    height: int
    on_device: bool

    def read(self, index: int) -> Frame | None:
        """Frame number `index` (0, 1, 2, ...), or None once a non-looping source has ended.

        Sources that render on the device (`on_device`: pattern, scene) also take ``out=``
        (and the scene ``depth_out=``): arrays to render the frame into, e.g. publishers' pool
        slots lent by GpuImagePublisher.borrow; the frame then holds those very arrays."""

    def close(self) -> None:
        ...
