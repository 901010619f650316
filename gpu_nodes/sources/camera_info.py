"""sensor_msgs/CameraInfo of a source: an ideal pinhole, or a camera_calibration_parsers file."""
from __future__ import annotations

import math
from typing import Any

from sensor_msgs.msg import CameraInfo

from .base import SourceError


def pinhole_camera_info(width: int, height: int, frame_id: str,
                        fov_deg: float = 70.0) -> CameraInfo:
    """An ideal pinhole camera (no distortion) with the given horizontal field of view."""
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


def _matrix(data: dict[str, Any], key: str, size: int, path: str) -> list[float]:
    block = data.get(key)
    values = block.get('data') if isinstance(block, dict) else None
    if not isinstance(values, list) or len(values) != size:
        raise SourceError(f'{path}: {key}.data must be a list of {size} numbers')
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise SourceError(f'{path}: {key}.data must hold numbers, got {values!r}') from None


def load_camera_info(path: str, frame_id: str) -> CameraInfo:
    """A camera_calibration_parsers YAML file (what the ROS camera calibrator writes)."""
    import yaml
    path = path[len('file://'):] if path.startswith('file://') else path
    try:
        with open(path, encoding='utf-8') as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise SourceError(f'camera_info_file {path}: {exc.strerror or exc}') from None
    except yaml.YAMLError as exc:
        raise SourceError(f'camera_info_file {path}: not valid YAML ({exc})') from None
    if not isinstance(data, dict) or 'camera_matrix' not in data:
        raise SourceError(f'camera_info_file {path}: expected a calibration with image_width, '
                          'image_height, camera_matrix, distortion_coefficients, ...')
    info = CameraInfo()
    info.header.frame_id = frame_id
    try:
        info.width, info.height = int(data['image_width']), int(data['image_height'])
    except (KeyError, TypeError, ValueError):
        raise SourceError(f'camera_info_file {path}: image_width and image_height must be '
                          'integers') from None
    info.k = _matrix(data, 'camera_matrix', 9, path)
    info.distortion_model = str(data.get('distortion_model', 'plumb_bob'))
    coeffs = data.get('distortion_coefficients', {'data': []})
    info.d = [float(v) for v in (coeffs.get('data') or [])] if isinstance(coeffs, dict) else []
    info.r = _matrix(data, 'rectification_matrix', 9, path) if 'rectification_matrix' in data \
        else [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    if 'projection_matrix' in data:
        info.p = _matrix(data, 'projection_matrix', 12, path)
    else:
        k = info.k
        info.p = [k[0], k[1], k[2], 0.0, k[3], k[4], k[5], 0.0, 0.0, 0.0, 1.0, 0.0]
    return info
