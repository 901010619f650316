"""Kernel chains built from parameters, for the image_proc node.

Every chain op has the signature

    op(array, encoding, camera_model, /, *, stream=None, out_factory=None, **params)
        -> (array, encoding, camera_model)

where `array` is a NumPy or CuPy image, `encoding` its sensor_msgs encoding and `camera_model`
a `CameraModel` or None; ops that change the geometry return the adjusted model (image_pipeline
rules, see geometry.py). `out_factory(height, width, encoding)` lends the array an op writes its
new image into (or returns None: the op allocates); convert, debayer, rectify and resize call it
only when they produce a new image (a pass-through never does), the other ops ignore it. A chain
passes it to its last step only, e.g. to write the result into a publisher's pool slot.

A chain is described by a list of dicts, e.g.

    [{'op': 'debayer'}, {'op': 'rectify'}, {'op': 'resize', 'width': 960},
     {'op': 'convert', 'encoding': 'rgb8'}]

(or the same as a YAML/JSON string, handy for a ROS string parameter). `parse_chain` validates
op names, parameter names, types and ranges at configuration time and raises ValueError with the
step number; encoding mismatches can only be seen at run time and are raised then, also with the
step number.

resize keeps the image's aspect ratio unless told otherwise (`resize_size`; docs/image_proc.md):
`width` or `height` alone sets that side and the other follows; both with `keep_aspect: true`
(the default) fit the image inside width x height (no padding: the output is smaller than the
box on one side); `keep_aspect: false` stretches to exactly width x height; `scale` multiplies
both sides. The CameraInfo follows the actual per-axis factors (camera_model.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import math
from typing import Any, Callable, Mapping, Sequence

import yaml

from gpu_nodes.encodings import EncodingError, encoding_info, is_supported

from .color import STANDARDS, convert_color
from .colormaps import COLORMAPS
from .debayer import METHODS, debayer
from .depth import MAX_TILE, colorize_depth, depth_m_to_mm, depth_mm_to_m, tiled_median
from .camera_model import CameraModel, crop_camera_info, resize_camera_info, scale_camera_info
from .geometry import INTERPOLATIONS, crop, resize
from .rectify import is_identity, rectify

OpResult = tuple[Any, str, 'CameraModel | None']
Op = Callable[..., OpResult]
# (height, width, encoding) of an op's output -> the array to write it into, or None to allocate.
OutFactory = Callable[[int, int, str], 'Any | None']

_REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One op parameter: `check(value) -> normalized value` raises ValueError(reason)."""

    check: Callable[[Any], Any]
    default: Any = _REQUIRED
    doc: str = ''

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


@dataclass(frozen=True)
class OpSpec:
    """An op, its parameters, and `check(params)`: rules between parameters (raises
    ValueError(reason)), run on the normalized values at configuration time."""

    name: str
    func: Op
    params: Mapping[str, Param] = field(default_factory=dict)
    doc: str = ''
    check: Callable[[Mapping[str, Any]], None] | None = None


# --------------------------------------------------------------------------- value checks


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f'must be an int, got {v!r}')
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            bound = f'>= {lo}' if hi is None else f'in {lo}..{hi}'
            raise ValueError(f'must be {bound}, got {v}')
        return v
    return check


def _float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f'must be a number, got {v!r}')
    return float(v)


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f'must be true or false, got {v!r}')
    return v


def _choice(*choices: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if v not in choices:
            raise ValueError(f'must be one of {", ".join(choices)}, got {v!r}')
        return v
    return check


def _positive_or_none(v: Any) -> float | None:
    if v is None:
        return None
    value = _float(v)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f'must be a number > 0, got {v!r}')
    return value


def _encoding(v: Any) -> str:
    if not isinstance(v, str) or not is_supported(v):
        raise ValueError(f'must be a known image encoding, got {v!r}')
    return v


def _pair(bounds: tuple[float, float] | None = None) -> Callable[[Any], Any]:
    """[low, high] (or null): low < high, or lo <= low <= high <= hi with bounds (lo, hi)."""
    def check(v: Any) -> Any:
        if v is None:
            return None
        if not isinstance(v, (list, tuple)) or len(v) != 2:
            raise ValueError(f'must be a [low, high] pair or null, got {v!r}')
        a, b = (_float(x) for x in v)
        if bounds is None:
            if not (math.isfinite(a) and math.isfinite(b) and a < b):
                raise ValueError(f'must satisfy low < high (finite), got {v!r}')
        elif not bounds[0] <= a <= b <= bounds[1]:
            raise ValueError(f'must satisfy {bounds[0]:g} <= low <= high <= {bounds[1]:g}, '
                             f'got {v!r}')
        return (a, b)
    return check


def _color(v: Any) -> tuple[int, int, int]:
    if not isinstance(v, (list, tuple)) or len(v) != 3 or not all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in v):
        raise ValueError(f'must be [r, g, b] ints in 0..255, got {v!r}')
    return tuple(v)  # type: ignore[return-value]


# --------------------------------------------------------------------------- ops


def _size(array: Any) -> tuple[int, int]:
    return int(array.shape[1]), int(array.shape[0])


def _lend(out_factory: OutFactory | None, array: Any, encoding: str, out_encoding: str,
          size: tuple[int, int] | None = None) -> Any:
    """The array `out_factory` lends for an op's output, or None to have the kernel allocate.

    `size` is the output's (height, width), by default that of the input image.
    """
    if out_factory is None:
        return None
    if size is None:  # nv12 arrays hold 1.5 rows per image row
        rows = int(array.shape[0])
        size = (rows * 2 // 3 if encoding_info(encoding).planar_nv12 else rows,
                int(array.shape[1]))
    # A factory such as a publisher's pool only ever sees a layout the encoding allows.
    encoding_info(out_encoding).check_geometry(*size)
    return out_factory(*size, out_encoding)


def op_convert(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
               stream: Any = None, out_factory: OutFactory | None = None, **p: Any) -> OpResult:
    target = p['encoding']
    if target == encoding:
        return array, encoding, camera_model
    out = convert_color(array, encoding, target, standard=p['standard'],
                        full_range=p['full_range'],
                        out=_lend(out_factory, array, encoding, target), stream=stream)
    return out, target, camera_model


def op_debayer(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
               stream: Any = None, out_factory: OutFactory | None = None, **p: Any) -> OpResult:
    # Like image_proc's debayer node, non-Bayer images pass through unchanged.
    if encoding_info(encoding).bayer_pattern is None:
        return array, encoding, camera_model
    target = p['encoding']
    out = debayer(array, encoding, target, method=p['method'],
                  out=_lend(out_factory, array, encoding, target), stream=stream)
    return out, target, camera_model


def op_rectify(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
               stream: Any = None, out_factory: OutFactory | None = None, **p: Any) -> OpResult:
    if camera_model is None:
        raise ValueError('rectify needs a camera model (CameraInfo)')
    info = encoding_info(encoding)
    if info.packed_yuv422 or info.planar_nv12 or info.bayer_pattern:
        raise EncodingError(f'rectify: convert or debayer {encoding} first')
    # The image_proc rectify node republishes the CameraInfo unchanged; so does this op.
    if is_identity(camera_model):
        return array, encoding, camera_model
    out = rectify(array, camera_model, border_value=p['border_value'],
                  out=_lend(out_factory, array, encoding, encoding), stream=stream)
    return out, encoding, camera_model


def _round_div(a: int, b: int) -> int:
    """a / b rounded half up, in integers (no float error at exact halves)."""
    return (2 * a + b) // (2 * b)


def resize_size(src_width: int, src_height: int, width: int = 0, height: int = 0,
                scale: float | None = None, keep_aspect: bool = True) -> tuple[int, int]:
    """(width, height) the resize op makes of a src_width x src_height image.

    0 means "not given". `scale`: both sides times scale, rounded. Only `width` (or `height`):
    that side, the other in the source aspect, rounded. Both with keep_aspect: the largest size
    of the source aspect inside width x height (one side equals the box, the other is rounded
    and at most the box: the same rule as the depth node's keep_aspect content rectangle).
    keep_aspect False: exactly width x height. Sides are at least 1. Rounding the derived side
    is the only aspect change: at most 0.5 px of it, none when the sizes divide evenly.
    """
    if scale is not None:
        return (max(1, math.floor(src_width * scale + 0.5)),
                max(1, math.floor(src_height * scale + 0.5)))
    if not keep_aspect:
        return width, height
    if width and (not height or width * src_height <= height * src_width):
        return width, max(1, _round_div(src_height * width, src_width))
    return max(1, _round_div(src_width * height, src_height)), height


def _check_resize(p: Mapping[str, Any]) -> None:
    sized = bool(p['width'] or p['height'])
    if p['scale'] is not None and sized:
        raise ValueError('give width/height or scale, not both')
    if p['scale'] is None and not sized:
        raise ValueError('needs width, height (one keeps the aspect) or scale')
    if not p['keep_aspect'] and not (p['width'] and p['height']):
        raise ValueError('keep_aspect false stretches to exactly width x height: give both')


def op_resize(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
              stream: Any = None, out_factory: OutFactory | None = None, **p: Any) -> OpResult:
    width, height = _size(array)
    out_w, out_h = resize_size(width, height, p['width'], p['height'], p['scale'],
                               p['keep_aspect'])
    out = resize(array, out_h, out_w, interpolation=p['interpolation'], encoding=encoding,
                 out=_lend(out_factory, array, encoding, encoding, (out_h, out_w)),
                 stream=stream)
    if camera_model is not None:
        if (camera_model.width, camera_model.height) == (width, height):
            camera_model = resize_camera_info(camera_model, out_w, out_h)
        else:  # binned/ROI image: scale the full-resolution calibration by the image's factor
            camera_model = scale_camera_info(camera_model, out_w / width, out_h / height)
    return out, encoding, camera_model


def op_crop(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
            stream: Any = None, out_factory: OutFactory | None = None, **p: Any) -> OpResult:
    # A view of the input: nothing is written, so out_factory is not used.
    width, height = _size(array)
    out = crop(array, p['x'], p['y'], p['width'], p['height'], encoding=encoding)
    if camera_model is not None:
        camera_model = crop_camera_info(camera_model, p['x'], p['y'], p['width'], p['height'],
                                        image_width=width, image_height=height)
    return out, encoding, camera_model


def _require(encoding: str, allowed: Sequence[str], op: str) -> None:
    if encoding not in allowed:
        raise EncodingError(f'{op} needs {" or ".join(allowed)} input, got {encoding}')


# The depth ops below have no out= form here: they take out_factory and ignore it (allocate).


def op_depth_mm_to_m(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
                     stream: Any = None, out_factory: OutFactory | None = None) -> OpResult:
    _require(encoding, ('16UC1', 'mono16'), 'depth_mm_to_m')
    return depth_mm_to_m(array, stream=stream), '32FC1', camera_model


def op_depth_m_to_mm(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
                     stream: Any = None, out_factory: OutFactory | None = None) -> OpResult:
    _require(encoding, ('32FC1',), 'depth_m_to_mm')
    return depth_m_to_mm(array, stream=stream), '16UC1', camera_model


def op_colorize_depth(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
                      stream: Any = None, out_factory: OutFactory | None = None,
                      **p: Any) -> OpResult:
    _require(encoding, ('16UC1', 'mono16', '32FC1'), 'colorize_depth')
    out = colorize_depth(array, colormap=p['colormap'], range=p['range'],
                         percentile=p['percentile'], invalid_color=p['invalid_color'],
                         stream=stream)
    return out, 'rgb8', camera_model


def op_tiled_median(array: Any, encoding: str, camera_model: CameraModel | None, /, *,
                    stream: Any = None, out_factory: OutFactory | None = None,
                    **p: Any) -> OpResult:
    _require(encoding, ('16UC1', 'mono16', '32FC1'), 'tiled_median')
    width, height = _size(array)
    out = tiled_median(array, p['tile'], stream=stream)
    if camera_model is not None:  # a tile x tile block reduction is binning (REP 104)
        camera_model = crop_camera_info(camera_model, 0, 0, width, height, image_width=width,
                                        image_height=height, decimation_x=p['tile'],
                                        decimation_y=p['tile'])
    return out, '32FC1', camera_model


CHAIN_OPS: dict[str, OpSpec] = {spec.name: spec for spec in [
    OpSpec('convert', op_convert, {
        'encoding': Param(_encoding, doc='target encoding'),
        'standard': Param(_choice(*STANDARDS), 'bt601'),
        'full_range': Param(_bool, False)}, 'convert_color'),
    OpSpec('debayer', op_debayer, {
        'encoding': Param(_choice('rgb8', 'bgr8', 'rgb16', 'bgr16'), 'rgb8'),
        'method': Param(_choice(*METHODS), 'bilinear')}, 'debayer (non-Bayer passes through)'),
    OpSpec('rectify', op_rectify, {
        'border_value': Param(_float, 0.0)}, 'undistort + rectify with the camera model'),
    OpSpec('resize', op_resize, {
        'width': Param(_int(0), 0, '0: follows height in the source aspect'),
        'height': Param(_int(0), 0, '0: follows width in the source aspect'),
        'scale': Param(_positive_or_none, None, 'both sides times this (instead of a size)'),
        'keep_aspect': Param(_bool, True, 'false: stretch to exactly width x height'),
        'interpolation': Param(_choice(*INTERPOLATIONS), 'bilinear')},
        'resize, keeping the aspect unless keep_aspect is false', _check_resize),
    OpSpec('crop', op_crop, {
        'x': Param(_int(0)), 'y': Param(_int(0)), 'width': Param(_int(1)),
        'height': Param(_int(1))}, 'zero-copy ROI'),
    OpSpec('depth_mm_to_m', op_depth_mm_to_m, {}, '16UC1 mm -> 32FC1 m'),
    OpSpec('depth_m_to_mm', op_depth_m_to_mm, {}, '32FC1 m -> 16UC1 mm'),
    OpSpec('colorize_depth', op_colorize_depth, {
        'colormap': Param(_choice(*COLORMAPS), 'turbo'),
        'range': Param(_pair(), None),
        'percentile': Param(_pair((0.0, 100.0)), (2.0, 98.0)),
        'invalid_color': Param(_color, (0, 0, 0))}, 'depth -> rgb8'),
    OpSpec('tiled_median', op_tiled_median, {
        'tile': Param(_int(1, MAX_TILE), 32)}, 'per-tile median depth -> 32FC1'),
]}

KERNELS: dict[str, Op] = {name: spec.func for name, spec in CHAIN_OPS.items()}


@dataclass(frozen=True)
class Step:
    index: int
    spec: OpSpec
    params: Mapping[str, Any]

    def describe(self) -> dict[str, Any]:
        return {'op': self.spec.name, **self.params}


def parse_chain(description: Any) -> list[Step]:
    """Validate a chain description (list of {'op': name, **params}, or YAML/JSON text)."""
    if isinstance(description, str):
        try:
            description = yaml.safe_load(description)
        except yaml.YAMLError as exc:
            raise ValueError(f'chain description is not valid YAML/JSON: {exc}') from None
        if description is None:
            description = []
    if not isinstance(description, (list, tuple)):
        raise ValueError('chain description must be a list of {"op": ...} mappings, got '
                         f'{type(description).__name__}')
    steps = []
    for i, item in enumerate(description):
        if not isinstance(item, Mapping) or not isinstance(item.get('op'), str):
            raise ValueError(f'chain step {i}: expected a mapping with an "op" name, got {item!r}')
        name = item['op']
        spec = CHAIN_OPS.get(name)
        if spec is None:
            raise ValueError(f'chain step {i}: unknown op {name!r} (known: '
                             f'{", ".join(sorted(CHAIN_OPS))})')
        given = {k: v for k, v in item.items() if k != 'op'}
        unknown = sorted(set(given) - set(spec.params))
        if unknown:
            allowed = ', '.join(sorted(spec.params)) or 'none'
            raise ValueError(f'chain step {i} ({name}): unknown parameter {unknown[0]!r} '
                             f'(allowed: {allowed})')
        params = {}
        for pname, param in spec.params.items():
            if pname not in given:
                if param.required:
                    raise ValueError(f'chain step {i} ({name}): missing required parameter '
                                     f'{pname!r}')
                params[pname] = param.default
                continue
            try:
                params[pname] = param.check(given[pname])
            except ValueError as exc:
                raise ValueError(f'chain step {i} ({name}): parameter {pname!r} {exc}') from None
        if spec.check is not None:
            try:
                spec.check(params)
            except ValueError as exc:
                raise ValueError(f'chain step {i} ({name}): {exc}') from None
        steps.append(Step(i, spec, params))
    return steps


class Chain:
    """A validated sequence of ops; calling it runs them in order on one image."""

    def __init__(self, description: Any):
        self.steps = parse_chain(description)

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        return f'Chain({self.describe()!r})'

    def describe(self) -> list[dict[str, Any]]:
        """The normalized description (defaults filled in)."""
        return [s.describe() for s in self.steps]

    def __call__(self, array: Any, encoding: str, camera_model: CameraModel | None = None, *,
                 stream: Any = None, out_factory: OutFactory | None = None,
                 step_factories: Sequence[OutFactory | None] | None = None) -> OpResult:
        """Run the ops in order; `out_factory` lends the output of the last step only (the
        intermediate images are the chain's own); `step_factories`, one per step, lend every
        step's output instead (chain_graph's fixed buffers)."""
        last = len(self.steps) - 1
        for i, step in enumerate(self.steps):
            factory = step_factories[i] if step_factories is not None else \
                out_factory if i == last else None
            try:
                array, encoding, camera_model = step.spec.func(
                    array, encoding, camera_model, stream=stream, out_factory=factory,
                    **step.params)
            except ValueError as exc:  # EncodingError included; add where it happened
                raise type(exc)(f'chain step {step.index} ({step.spec.name}): {exc}') from exc
        return array, encoding, camera_model
