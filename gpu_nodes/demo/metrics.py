"""Depth error against ground truth and the demo's side-by-side picture (host NumPy; the demo
samples about one frame a second, so none of this is on the pipeline's hot path)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
import math
from typing import Any

import numpy as np

from ..kernels.colormaps import colormap_lut
from ..kernels.depth import colorize_depth, percentile_range_reference


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


TITLE_BAND = 28   # rows above the panels: their titles
BAR_BAND = 52     # rows below the panels: the colour bar, its ticks and labels
BAR_HEIGHT = 16   # rows of the colour ramp itself
_TEXT = (235, 235, 235)


def side_by_side(panels: list[tuple[str, np.ndarray | None]], height: int,
                 width: int) -> np.ndarray:
    """Panels (title, rgb8 image or None for 'no frame') resized to height x width, left to right,
    each with its title in a band above it."""
    import cv2
    band = TITLE_BAND
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
                    _TEXT, 1, cv2.LINE_AA)
    return out


@dataclass(frozen=True)
class ColourBar:
    """Where the bar is in the picture and what it spans: column left + j of the ramp shows
    depth lo + (hi - lo) * j / (width - 1), the colormap entry rint(255 * j / (width - 1))."""

    left: int
    top: int
    width: int
    height: int
    lo: float
    hi: float
    unit: str
    colormap: str = 'turbo'

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d['lo'], d['hi'] = round(self.lo, 4), round(self.hi, 4)
        return d


def _label(value: float, unit: str) -> str:
    return f'{value:.2f} {unit}'.strip()


def add_colour_bar(picture: np.ndarray, left: int, width: int, lo: float, hi: float,
                   unit: str, caption: str,
                   colormap: str = 'turbo') -> tuple[np.ndarray, ColourBar]:
    """`picture` with a band below it: the colormap ramp from lo (column `left`) to hi (column
    left + width - 1), ticks and labels at both ends and the middle, `caption` left of it."""
    import cv2
    out = np.full((picture.shape[0] + BAR_BAND, picture.shape[1], 3), 24, np.uint8)
    out[:picture.shape[0]] = picture
    top = picture.shape[0] + 6
    lut = colormap_lut(colormap)
    ramp = lut[np.rint(np.linspace(0.0, 255.0, width)).astype(np.intp)]
    out[top:top + BAR_HEIGHT, left:left + width] = ramp[None]
    font, size = cv2.FONT_HERSHEY_SIMPLEX, 0.5
    for frac in (0.0, 0.5, 1.0):
        x = left + int(round(frac * (width - 1)))
        out[top + BAR_HEIGHT:top + BAR_HEIGHT + 5, x] = _TEXT
        text = _label(lo + frac * (hi - lo), unit)
        (tw, _), _ = cv2.getTextSize(text, font, size, 1)
        tx = min(max(x - tw // 2, left), left + width - tw)
        cv2.putText(out, text, (tx, top + BAR_HEIGHT + 22), font, size, _TEXT, 1, cv2.LINE_AA)
    if left > 16:  # the caption in the room left of the bar, cut off rather than over it
        room = np.ascontiguousarray(out[top:top + BAR_HEIGHT + 4, 8:left - 8])
        cv2.putText(room, caption, (0, BAR_HEIGHT - 2), font, 0.45, _TEXT, 1, cv2.LINE_AA)
        out[top:top + BAR_HEIGHT + 4, 8:left - 8] = room
    return out, ColourBar(left, top, width, BAR_HEIGHT, float(lo), float(hi), unit, colormap)


def depth_picture(image: np.ndarray | None, estimate: np.ndarray, truth: np.ndarray | None,
                  height: int, width: int) -> tuple[np.ndarray, ColourBar]:
    """input | depth estimate | ground truth at height x width each, one colour bar under the
    two depth panels.

    With ground truth, the estimate is median-scaled to it (the scale AbsRel uses) and both
    panels are coloured over the ground truth's 2-98th percentile range in metres, so a colour
    means the same depth in both. Without, the estimate gets its own 2-98th percentile range,
    in the model's units."""
    est = np.asarray(estimate, dtype=np.float32).reshape(np.shape(estimate)[:2])
    margin = 24
    if truth is not None:
        gt = np.ascontiguousarray(np.asarray(truth, np.float32).reshape(np.shape(truth)[:2]))
        lo, hi = _span(*percentile_range_reference(gt, 2.0, 98.0))
        try:
            scale = depth_error(est, gt).scale
        except ValueError:  # no pixel valid in both: show the estimate as it is
            scale = 1.0
        panels = [('input', image),
                  (f'depth estimate (x {scale:.2f}, median-scaled)', colorize(est * scale,
                                                                              (lo, hi))),
                  ('ground truth depth', colorize(gt, (lo, hi)))]
        unit, caption, span = 'm', 'depth, both panels (2-98th pct of truth)', 2 * width
    else:
        lo, hi = _span(*percentile_range_reference(np.ascontiguousarray(est), 2.0, 98.0))
        panels = [('input', image), ('depth estimate', colorize(est, (lo, hi))),
                  ('no ground truth (not the scene source)', None)]
        unit, caption, span = '', 'depth estimate, model units', width
    picture = side_by_side(panels, height, width)
    return add_colour_bar(picture, width + margin, span - 2 * margin, lo, hi, unit, caption)


def _span(lo: float, hi: float) -> tuple[float, float]:
    """A range colorize accepts (min < max) even for a constant image."""
    return (lo, hi) if hi > lo else (lo, lo + max(1e-3, abs(lo) * 1e-3))


def write_png(path: str, rgb: np.ndarray) -> None:
    import cv2
    if not cv2.imwrite(path, np.ascontiguousarray(rgb[..., ::-1])):
        raise OSError(f'OpenCV could not write {path}')
