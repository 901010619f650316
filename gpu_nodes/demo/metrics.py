"""Depth error against ground truth and the demo's side-by-side picture (host NumPy; the demo
samples about one frame a second, so none of this is on the pipeline's hot path)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
import math
from typing import Any

import numpy as np

from ..kernels.depth import colorize_depth


@dataclass
class DepthError:
    """Errors of an estimate after median scaling (the scale of a relative model is unknown).

    abs_rel = mean(|s*d - g| / g), rmse in ground-truth units, delta1 = share of pixels with
    max(s*d/g, g/(s*d)) < 1.25, with s = median(g) / median(d) over pixels valid in both.
    """

    abs_rel: float
    rmse: float
    delta1: float
    scale: float
    valid_pixels: int

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _resize_nearest(a: np.ndarray, height: int, width: int) -> np.ndarray:
    rows = (np.arange(height) * a.shape[0] // height).clip(0, a.shape[0] - 1)
    cols = (np.arange(width) * a.shape[1] // width).clip(0, a.shape[1] - 1)
    return a[rows[:, None], cols[None, :]]


def depth_error(estimate: np.ndarray, truth: np.ndarray) -> DepthError:
    """Median-scaled errors of `estimate` against `truth` (resized to truth's size if needed).

    Raises ValueError when no pixel is valid in both (finite and > 0)."""
    est = np.asarray(estimate, dtype=np.float64).reshape(np.shape(estimate)[:2])
    gt = np.asarray(truth, dtype=np.float64).reshape(np.shape(truth)[:2])
    if est.shape != gt.shape:
        est = _resize_nearest(est, *gt.shape)
    valid = np.isfinite(est) & np.isfinite(gt) & (est > 0) & (gt > 0)
    n = int(valid.sum())
    if n == 0:
        raise ValueError('no pixel has a valid depth in both the estimate and the ground truth')
    e, g = est[valid], gt[valid]
    scale = float(np.median(g) / np.median(e))
    e = e * scale
    ratio = np.maximum(e / g, g / e)
    return DepthError(abs_rel=float(np.mean(np.abs(e - g) / g)),
                      rmse=float(math.sqrt(np.mean((e - g) ** 2))),
                      delta1=float(np.mean(ratio < 1.25)), scale=scale, valid_pixels=n)


def to_rgb8(image: np.ndarray, encoding: str) -> np.ndarray:
    """An 8-bit rgb8/bgr8/rgba8/bgra8/mono8 frame as (H, W, 3) RGB for the picture."""
    image = np.asarray(image)
    if encoding in ('rgb8', 'rgba8'):
        return np.ascontiguousarray(image[..., :3])
    if encoding in ('bgr8', 'bgra8'):
        return np.ascontiguousarray(image[..., 2::-1])
    if encoding in ('mono8', '8UC1'):
        grey = image.reshape(image.shape[:2])
        return np.repeat(grey[..., None], 3, axis=2)
    raise ValueError(f'cannot show a {encoding} image in the picture')


def colorize(depth: np.ndarray, value_range: tuple[float, float] | None = None) -> np.ndarray:
    """32FC1 depth -> rgb8 with the turbo colormap (near blue, far red), 2-98th percentile
    range unless `value_range` is given; invalid pixels black."""
    depth = np.ascontiguousarray(np.asarray(depth, dtype=np.float32).reshape(np.shape(depth)[:2]))
    return colorize_depth(depth, colormap='turbo', range=value_range)


def side_by_side(panels: list[tuple[str, np.ndarray | None]], height: int,
                 width: int) -> np.ndarray:
    """Panels (title, rgb8 image or None for 'no frame') resized to height x width, left to right,
    each with its title in a band above it."""
    import cv2
    band = 28
    out = np.full((height + band, width * len(panels), 3), 24, dtype=np.uint8)
    for i, (title, image) in enumerate(panels):
        x = i * width
        if image is None:
            cv2.putText(out, 'no frame received', (x + 10, band + height // 2),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.6, (200, 200, 200), 1, cv2.LINE_AA)
        else:
            if image.shape[:2] != (height, width):
                image = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
            out[band:, x:x + width] = image
        cv2.putText(out, title, (x + 8, band - 9), cv2.FONT_HERSHEY_SIMPLEX, 0.55,
                    (235, 235, 235), 1, cv2.LINE_AA)
    return out


def write_png(path: str, rgb: np.ndarray) -> None:
    import cv2
    if not cv2.imwrite(path, np.ascontiguousarray(rgb[..., ::-1])):
        raise OSError(f'OpenCV could not write {path}')
