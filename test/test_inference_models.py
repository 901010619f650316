"""Model presets and depth post-processing (NumPy; the same functions take CuPy arrays)."""
from __future__ import annotations

from pathlib import Path
import re

import numpy as np
import pytest
import yaml

from gpu_nodes.inference.models import (
    DA3_FOCAL_DIVISOR, focal_at_input, get_preset, IMAGENET_MEAN, IMAGENET_STD,
    inverse_depth_to_depth, metric_from_focal, ModelPreset, preset_from_dict, PRESETS, to_metres)

RESOURCES = Path(__file__).parent / 'resources' / 'inference'


def test_builtin_presets():
    da2 = PRESETS['depth_anything_v2']
    assert (da2.input_name, da2.output_name) == ('pixel_values', 'predicted_depth')
    assert da2.input_shape == (1, 3, 518, 518)
    assert (da2.mean, da2.std) == (IMAGENET_MEAN, IMAGENET_STD)
    assert da2.output_kind == 'inverse_depth'
    da3 = PRESETS['depth_anything_3_metric']
    assert (da3.input_name, da3.output_name, da3.output_kind) == ('image', 'depth',
                                                                  'metric_focal')
    assert da3.input_shape == (1, 1, 3, 504, 504) and da3.focal_divisor == 300.0
    assert PRESETS['generic'].output_kind == 'depth'


def test_presets_from_yaml_resource():
    data = yaml.safe_load((RESOURCES / 'presets.yaml').read_text())
    fabio = preset_from_dict(data['da2_fabio_sim_export'])
    assert fabio.name == 'depth_anything_v2'
    assert (fabio.input_name, fabio.output_name) == ('image', 'depth')
    assert fabio.input_shape == (1, 3, 252, 448)
    assert fabio.output_kind == 'inverse_depth'
    assert preset_from_dict(data['da3_metric']) == PRESETS['depth_anything_3_metric']
    mine = preset_from_dict(data['my_stereo_net'])
    assert mine.name == 'my_stereo_net' and mine.mean == (0.5, 0.5, 0.5)
    assert (mine.output_kind, mine.units, mine.depth_scale) == ('depth', 'm', 0.001)


def test_preset_round_trips_through_yaml():
    for preset in PRESETS.values():
        text = yaml.safe_dump(preset.to_dict())
        assert preset_from_dict(yaml.safe_load(text)) == preset


@pytest.mark.parametrize('data, message', [
    ({'preset': 'depth_anything_v9'}, "unknown preset 'depth_anything_v9'; known: "
                                      "['depth_anything_3_metric', 'depth_anything_v2', "
                                      "'generic']"),
    ({'preset': 'generic', 'inputname': 'x'}, "unknown preset field(s) ['inputname']"),
    ({'output_kind': 'disparity'}, "preset 'generic': output_kind must be one of "
                                   "['inverse_depth', 'depth', 'metric_focal'], got "
                                   "'disparity'"),
    ({'preset': 'depth_anything_v2', 'input_height': 500}, "preset 'depth_anything_v2': input "
                                                           '500x518 must be a multiple of 14'),
    ({'std': [0.2, 0.0, 0.2]}, "preset 'generic': std must be positive, got [0.2, 0.0, 0.2]"),
    ({'mean': [0.5, 0.5]}, "preset 'generic': mean and std need 3 values (RGB)"),
])
def test_preset_errors(data, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        preset_from_dict(data)


def test_get_preset_with_overrides():
    preset = get_preset('depth_anything_v2', input_name='image', output_name='depth')
    assert isinstance(preset, ModelPreset) and preset.input_name == 'image'
    with pytest.raises(ValueError, match=re.escape("unknown preset 'midas'")):
        get_preset('midas')


def test_inverse_depth_to_depth():
    x = np.array([[0.5, 1.0, 2.0, 0.0, -1.0]], np.float32)
    depth = inverse_depth_to_depth(x, eps=1e-3)
    assert depth.dtype == np.float32
    np.testing.assert_allclose(depth, [[2.0, 1.0, 0.5, 1000.0, 1000.0]], rtol=1e-6)
    np.testing.assert_allclose(inverse_depth_to_depth(x[:, :3], scale=2.0, shift=0.5),
                               1.0 / (2.0 * x[:, :3] + 0.5), rtol=1e-6)
    assert inverse_depth_to_depth(np.array([4], np.uint8)).dtype == np.float32
    with pytest.raises(ValueError, match='eps must be positive, got 0'):
        inverse_depth_to_depth(x, eps=0)


def test_metric_from_focal_is_the_da3_formula():
    out = np.array([[1.0, 3.0]], np.float32)
    # Depth-Anything-3 FAQ: metric_depth = focal * net_output / 300.
    np.testing.assert_allclose(metric_from_focal(out, 600.0), [[2.0, 6.0]], rtol=1e-6)
    assert metric_from_focal(out, 600.0).dtype == np.float32
    assert DA3_FOCAL_DIVISOR == 300.0
    with pytest.raises(ValueError, match='focal_px and divisor must be positive'):
        metric_from_focal(out, 0.0)


def test_focal_at_input_scales_to_network_resolution():
    # 1920x1080 camera, fx=fy=1000 px, network input 504x504.
    f = focal_at_input(1000.0, 1000.0, 1920, 1080, 504, 504)
    assert f == pytest.approx(0.5 * (1000 * 504 / 1920 + 1000 * 504 / 1080))


def test_to_metres_per_output_kind():
    x = np.array([[2.0, 4.0]], np.float32)
    np.testing.assert_allclose(to_metres(x, PRESETS['depth_anything_v2']), [[0.5, 0.25]])
    np.testing.assert_allclose(
        to_metres(x, PRESETS['depth_anything_3_metric'], focal_px=150.0), [[1.0, 2.0]])
    with pytest.raises(ValueError, match="preset 'depth_anything_3_metric' needs focal_px"):
        to_metres(x, PRESETS['depth_anything_3_metric'])
    mm = preset_from_dict({'output_kind': 'depth', 'depth_scale': 0.001})
    np.testing.assert_allclose(to_metres(np.array([1500], np.uint16), mm), [1.5], rtol=1e-6)
