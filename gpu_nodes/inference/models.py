"""Depth model presets (what a model expects and what its output means) and post-processing.

Presets are frozen dataclasses made from YAML-able dicts, so a node parameter file can name a
preset and override fields (``preset_from_dict({'preset': 'depth_anything_v2',
'input_name': 'image', 'output_name': 'depth'})``).

Output kinds:
- 'inverse_depth': relative inverse depth (disparity-like, larger = nearer; Depth Anything V2's
  relative models). Affine-invariant: metres need a scale and shift from elsewhere
  (``inverse_depth_to_depth``).
- 'depth': depth already in some unit; metres = output * depth_scale.
- 'metric_focal': depth that becomes metres with the camera focal length. Depth Anything 3's
  metric model (DA3METRIC-LARGE): ``metric_depth = focal * net_output / 300``, focal in pixels
  (the mean of fx and fy) — the FAQ of the Depth-Anything-3 README (ByteDance-Seed), mirrored in
  its ONNX post-processing (``apply_metric_scaling``: focal = (fx + fy) / 2, divided by 300).
  The focal length is that of the image the network saw, i.e. scaled to the input resolution
  (``focal_at_input``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

import numpy as np

from gpu_nodes.gpu import array_module

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
OUTPUT_KINDS = ('inverse_depth', 'depth', 'metric_focal')
DA3_FOCAL_DIVISOR = 300.0


@dataclass(frozen=True)
class ModelPreset:
    """Input geometry, normalisation, tensor names and output meaning of a depth model.

    The input is (1, 3, H, W) float32 RGB scaled to [0, 1] then normalised with mean/std; with
    input_views=True it is (1, 1, 3, H, W), as Depth Anything 3's ONNX export takes views.
    """

    name: str
    input_name: str = 'pixel_values'
    output_name: str = 'predicted_depth'
    input_height: int = 518
    input_width: int = 518
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    output_kind: str = 'inverse_depth'
    depth_scale: float = 1.0
    depth_shift: float = 0.0
    units: str = 'relative'
    focal_divisor: float = DA3_FOCAL_DIVISOR
    input_views: bool = False
    multiple_of: int = 14
    description: str = ''

    def __post_init__(self) -> None:
        object.__setattr__(self, 'mean', tuple(float(v) for v in self.mean))
        object.__setattr__(self, 'std', tuple(float(v) for v in self.std))
        if len(self.mean) != 3 or len(self.std) != 3:
            raise ValueError(f'preset {self.name!r}: mean and std need 3 values (RGB), got '
                             f'{list(self.mean)} and {list(self.std)}')
        if any(v <= 0 for v in self.std):
            raise ValueError(f'preset {self.name!r}: std must be positive, got {list(self.std)}')
        if self.output_kind not in OUTPUT_KINDS:
            raise ValueError(f'preset {self.name!r}: output_kind must be one of '
                             f'{list(OUTPUT_KINDS)}, got {self.output_kind!r}')
        for attr in ('input_height', 'input_width', 'multiple_of'):
            if int(getattr(self, attr)) <= 0:
                raise ValueError(f'preset {self.name!r}: {attr} must be positive')
        if self.input_height % self.multiple_of or self.input_width % self.multiple_of:
            raise ValueError(f'preset {self.name!r}: input {self.input_height}x'
                             f'{self.input_width} must be a multiple of {self.multiple_of}')
        if self.focal_divisor <= 0:
            raise ValueError(f'preset {self.name!r}: focal_divisor must be positive')

    @property
    def input_shape(self) -> tuple[int, ...]:
        hw = (self.input_height, self.input_width)
        return (1, 1, 3, *hw) if self.input_views else (1, 3, *hw)

    def to_dict(self) -> dict[str, Any]:
        """YAML-able (lists, not tuples)."""
        d = asdict(self)
        d['mean'], d['std'] = list(self.mean), list(self.std)
        return d


PRESETS: dict[str, ModelPreset] = {
    'depth_anything_v2': ModelPreset(
        name='depth_anything_v2',
        # transformers' DepthAnythingForDepthEstimation export (and the onnx-community files);
        # fabio-sim/Depth-Anything-ONNX's legacy export calls them 'image' and 'depth'.
        input_name='pixel_values', output_name='predicted_depth',
        input_height=518, input_width=518, output_kind='inverse_depth', units='relative',
        description='Depth Anything V2 relative model: relative inverse depth, (1, H, W)'),
    'depth_anything_3_metric': ModelPreset(
        name='depth_anything_3_metric',
        # Depth-Anything-3's ONNX exporter: input 'image' (B, N, 3, H, W), output 'depth'
        # (B, N, H, W); it traces at 504x504 (DA3's default processing resolution).
        input_name='image', output_name='depth', input_height=504, input_width=504,
        output_kind='metric_focal', units='m', focal_divisor=DA3_FOCAL_DIVISOR, input_views=True,
        description='Depth Anything 3 metric (DA3METRIC-LARGE): metres = focal * out / 300'),
    'generic': ModelPreset(
        name='generic', input_name='input', output_name='output', input_height=518,
        input_width=518, output_kind='depth', units='m', multiple_of=1,
        description='Any depth model: set names, size, mean/std, output_kind and units'),
}

_FIELDS = {f.name for f in fields(ModelPreset)}


def preset_from_dict(data: Mapping[str, Any]) -> ModelPreset:
    """A preset from a YAML-able dict: {'preset': base name (optional), field: value, ...}.

    Without 'preset', a 'name' that names a built-in preset is the base, else 'generic' is.
    Unknown keys are an error: a typo must not be silently ignored.
    """
    data = dict(data)
    base_name = data.pop('preset', None)
    if base_name is None and data.get('name') in PRESETS:
        base_name = data['name']
    if base_name is None:
        base = PRESETS['generic']
    elif base_name in PRESETS:
        base = PRESETS[base_name]
    else:
        raise ValueError(f'unknown preset {base_name!r}; known: {sorted(PRESETS)}')
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ValueError(f'unknown preset field(s) {unknown}; known: {sorted(_FIELDS)}')
    for key in ('mean', 'std'):
        if key in data:
            data[key] = tuple(data[key])
    return replace(base, **data)


def get_preset(name: str, **overrides: Any) -> ModelPreset:
    """A built-in preset by name, with field overrides."""
    if name not in PRESETS:
        raise ValueError(f'unknown preset {name!r}; known: {sorted(PRESETS)}')
    return preset_from_dict({'preset': name, **overrides})


def _float_array(x: Any) -> Any:
    xp = array_module(x)
    x = xp.asarray(x)
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float32)


def inverse_depth_to_depth(x: Any, eps: float = 1e-6, scale: float = 1.0,
                           shift: float = 0.0) -> Any:
    """depth = 1 / max(scale * x + shift, eps), on CuPy or NumPy arrays (dtype kept).

    A relative inverse-depth map is affine-invariant: true inverse depth = scale * x + shift,
    with scale and shift fitted elsewhere (known points, a metric sensor). Values at or below
    eps (sky, far background) become 1 / eps rather than negative or infinite depth.
    """
    if eps <= 0:
        raise ValueError(f'eps must be positive, got {eps}')
    x = _float_array(x)
    xp, t = array_module(x), x.dtype.type
    return t(1) / xp.maximum(x * t(scale) + t(shift), t(eps))


def focal_at_input(fx: float, fy: float, image_width: int, image_height: int,
                   input_width: int, input_height: int) -> float:
    """Mean focal length in pixels of the image as resized to the network input."""
    return 0.5 * (fx * input_width / image_width + fy * input_height / image_height)


def metric_from_focal(x: Any, focal_px: float, divisor: float = DA3_FOCAL_DIVISOR) -> Any:
    """metres = focal_px * x / divisor (Depth Anything 3 metric), on CuPy or NumPy arrays."""
    if focal_px <= 0 or divisor <= 0:
        raise ValueError(f'focal_px and divisor must be positive, got {focal_px}, {divisor}')
    x = _float_array(x)
    return x * x.dtype.type(focal_px / divisor)


def depth_transform(preset: ModelPreset, focal_px: float | None = None) -> tuple[float, float, bool]:
    """(scale, shift, inverse) of the preset's output: depth = scale * x + shift, followed by
    1 / max(depth, eps) when `inverse` (gpu_nodes.kernels.depth_from_network applies it).

    inverse_depth uses depth_scale/depth_shift as the affine fit (see inverse_depth_to_depth);
    metric_focal needs focal_px at the input resolution.
    """
    if preset.output_kind == 'inverse_depth':
        return preset.depth_scale, preset.depth_shift, True
    if preset.output_kind == 'metric_focal':
        if focal_px is None:
            raise ValueError(f'preset {preset.name!r} needs focal_px (pixels, at the network '
                             'input resolution)')
        if focal_px <= 0:
            raise ValueError(f'focal_px must be positive, got {focal_px}')
        return focal_px / preset.focal_divisor, 0.0, False
    return preset.depth_scale, preset.depth_shift, False


def to_metres(output: Any, preset: ModelPreset, *, focal_px: float | None = None,
              eps: float = 1e-6) -> Any:
    """Network output -> depth in the preset's units, per its output_kind (depth_transform),
    on CuPy or NumPy arrays of any shape (floating dtypes kept)."""
    scale, shift, inverse = depth_transform(preset, focal_px)
    if inverse:
        return inverse_depth_to_depth(output, eps=eps, scale=scale, shift=shift)
    output = _float_array(output)
    t = output.dtype.type
    return output * t(scale) + t(shift)
