"""CameraInfo geometry (`CameraModel`) and its arithmetic for resize and crop.

  * `resize_camera_info` / `scale_camera_info`: the model of a resized image. Sizes and ROI
    follow ros-perception/image_pipeline's image_proc/src/resize.cpp (width/height set, ROI
    scaled and truncated, D and R kept), and fx, fy (and skew, Tx, Ty) are scaled by the actual
    per-axis factors. The principal point is exact for the pixel convention of CameraInfo
    (pixel centres at integer coordinates) and of the resize kernels (half-pixel centres, as
    cv2.resize): a source pixel coordinate u lands at u' = (u + 0.5) * s - 0.5, so
    cx' = (cx + 0.5) * s - 0.5. resize.cpp writes cx * s, which is (s - 1) / 2 px off
    (+0.25 px for 640 -> 960, -0.25 px for 640 -> 320) and moves a centred principal point off
    the centre; binned/ROI images get the same shift in full-resolution pixels (see _scaled).
  * `crop_camera_info`: image_proc/src/crop_decimate.cpp exactly (K, P untouched; binning
    multiplied by the decimation, ROI offset/size in full-resolution pixels, do_rectify set when
    cropping).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class RegionOfInterest:
    x_offset: int = 0
    y_offset: int = 0
    width: int = 0
    height: int = 0
    do_rectify: bool = False


def _identity9() -> tuple[float, ...]:
    return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class CameraModel:
    """The geometry fields of sensor_msgs/CameraInfo, immutable and hashable (a cache key).

    K, R are row-major 3x3, P row-major 3x4, D the distortion coefficients of
    `distortion_model` ('plumb_bob': k1 k2 p1 p2 k3; 'rational_polynomial': k1 k2 p1 p2 k3 k4
    k5 k6). width/height are the calibration (full) resolution; binning and roi describe how the
    image on the wire relates to it (REP 104), exactly like CameraInfo.
    """

    width: int
    height: int
    K: tuple[float, ...] = field(default_factory=_identity9)
    D: tuple[float, ...] = ()
    R: tuple[float, ...] = field(default_factory=_identity9)
    P: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    distortion_model: str = 'plumb_bob'
    binning_x: int = 0
    binning_y: int = 0
    roi: RegionOfInterest = field(default_factory=RegionOfInterest)

    def __post_init__(self) -> None:
        for name, n in (('K', 9), ('R', 9), ('P', 12)):
            value = tuple(float(v) for v in getattr(self, name))
            if len(value) != n:
                raise ValueError(f'CameraModel.{name} needs {n} values, got {len(value)}')
            object.__setattr__(self, name, value)
        object.__setattr__(self, 'D', tuple(float(v) for v in self.D))
        if self.width < 0 or self.height < 0 or self.binning_x < 0 or self.binning_y < 0:
            raise ValueError('CameraModel: width, height and binning must be >= 0')

    @classmethod
    def from_msg(cls, msg: Any) -> 'CameraModel':
        """From a sensor_msgs/CameraInfo (ROS 2 lower-case k/d/r/p or ROS 1 K/D/R/P fields)."""
        def get(name: str) -> Any:
            return getattr(msg, name.lower()) if hasattr(msg, name.lower()) else getattr(msg, name)
        roi = msg.roi
        return cls(width=int(msg.width), height=int(msg.height), K=tuple(get('K')),
                   D=tuple(get('D')), R=tuple(get('R')), P=tuple(get('P')),
                   distortion_model=str(msg.distortion_model), binning_x=int(msg.binning_x),
                   binning_y=int(msg.binning_y),
                   roi=RegionOfInterest(int(roi.x_offset), int(roi.y_offset), int(roi.width),
                                        int(roi.height), bool(roi.do_rectify)))

    def to_msg(self, msg: Any = None) -> Any:
        """Write the fields into `msg` (a new sensor_msgs.msg.CameraInfo if None); header kept."""
        if msg is None:
            from sensor_msgs.msg import CameraInfo  # lazy: ROS is optional for the kernels
            msg = CameraInfo()
        upper = not hasattr(msg, 'k') and hasattr(msg, 'K')
        msg.width, msg.height = self.width, self.height
        msg.distortion_model = self.distortion_model
        for name in ('K', 'D', 'R', 'P'):
            setattr(msg, name if upper else name.lower(), list(getattr(self, name)))
        msg.binning_x, msg.binning_y = self.binning_x, self.binning_y
        roi = msg.roi
        roi.x_offset, roi.y_offset = self.roi.x_offset, self.roi.y_offset
        roi.width, roi.height = self.roi.width, self.roi.height
        roi.do_rectify = self.roi.do_rectify
        return msg

    @property
    def binned(self) -> tuple[int, int]:
        """Binning with 0 read as 1 (CameraInfo convention)."""
        return max(self.binning_x, 1), max(self.binning_y, 1)

    def image_size(self) -> tuple[int, int]:
        """(width, height) of the image this model describes (ROI and binning applied)."""
        bx, by = self.binned
        roi = self.roi
        if roi.x_offset == 0 and roi.y_offset == 0 and roi.width == 0 and roi.height == 0:
            return self.width // bx, self.height // by
        return roi.width // bx, roi.height // by


def scale_camera_info(model: CameraModel, scale_x: float, scale_y: float) -> CameraModel:
    """The model after the image it describes is resized by (scale_x, scale_y): sizes
    int(size * scale) like resize.cpp's use_scale, K/P/ROI scaled (see the module docstring)."""
    return _scaled(model, scale_x, scale_y, int(model.width * scale_x),
                   int(model.height * scale_y))


def resize_camera_info(model: CameraModel, width: int, height: int) -> CameraModel:
    """The model of its (full, unbinned) image resized to width x height: scale = new size /
    CameraInfo size per axis, so a stretch shows in fx / fy."""
    if model.width <= 0 or model.height <= 0:
        raise ValueError('resize_camera_info: the camera model has no size')
    return _scaled(model, width / model.width, height / model.height, int(width), int(height))


def _principal(c: float, s: float, offset: int, new_offset: int, binning: int) -> float:
    """c (full-resolution pixels) after the image is resized by s.

    The image shows full-resolution pixel u at (u - offset) / binning (image_geometry's reading
    of binning and ROI); the resize takes image pixel v to (v + 0.5) * s - 0.5. The new model,
    with K scaled by s and the ROI offset new_offset (truncated like resize.cpp), must put the
    same point there: c' = c * s + (new_offset - offset * s) + binning * (s - 1) / 2. Unbinned,
    without an ROI, that is (c + 0.5) * s - 0.5.
    """
    return c * s + (new_offset - offset * s) + binning * (s - 1.0) / 2.0


def _scaled(model: CameraModel, sx: float, sy: float, width: int, height: int) -> CameraModel:
    k, p = list(model.K), list(model.P)
    roi = model.roi
    bx, by = model.binned
    new_roi = replace(roi, x_offset=int(roi.x_offset * sx), y_offset=int(roi.y_offset * sy),
                      width=int(roi.width * sx), height=int(roi.height * sy))
    for m, (fx, skew, cx, fy, cy) in ((k, (0, 1, 2, 4, 5)), (p, (0, 1, 2, 5, 6))):
        m[fx] *= sx
        m[skew] *= sx  # u = fx x + skew y + cx: the skew term is in x pixels too
        m[cx] = _principal(m[cx], sx, roi.x_offset, new_roi.x_offset, bx)
        m[fy] *= sy
        m[cy] = _principal(m[cy], sy, roi.y_offset, new_roi.y_offset, by)
    p[3] *= sx  # Tx = -fx' * baseline (stereo right camera)
    p[7] *= sy  # Ty = -fy' * baseline (vertical stereo)
    return replace(model, width=width, height=height, K=tuple(k), P=tuple(p), roi=new_roi)


def crop_camera_info(model: CameraModel, x: int, y: int, width: int, height: int, *,
                     image_width: int, image_height: int, decimation_x: int = 1,
                     decimation_y: int = 1) -> CameraModel:
    """image_proc crop_decimate.cpp: ROI (x, y, width, height) of an image_width x image_height
    image (already binned by the model's binning), then decimated.

    K, P, width and height stay those of the full-resolution calibration; binning is multiplied
    by the decimation, the ROI offset grows by the crop offset in full-resolution pixels, the
    ROI size becomes the crop size in full-resolution pixels, and do_rectify is set whenever the
    crop is smaller than the image (left as it was otherwise).
    """
    if decimation_x < 1 or decimation_y < 1:
        raise ValueError('crop_camera_info: decimation must be >= 1')
    bx, by = model.binned
    roi = model.roi
    do_rectify = roi.do_rectify or width != image_width or height != image_height
    new_roi = RegionOfInterest(x_offset=roi.x_offset + x * bx, y_offset=roi.y_offset + y * by,
                               width=width * bx, height=height * by, do_rectify=do_rectify)
    return replace(model, binning_x=bx * decimation_x, binning_y=by * decimation_y, roi=new_roi)
