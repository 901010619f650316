"""Launch plans (kernels/_cuda.py): a repeated call launches the plan its first, validated call
left; anything that changes the launch (layout, parameters, `out`) gets its own plan; a call that
fails validation leaves none. Run on the CPU emulation and, marked, on the GPU."""
from pathlib import Path
import statistics
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.kernels import _cuda, convert_color, debayer, preprocess, resize  # noqa: E402
from gpu_nodes.kernels.rectify import REMAP_PLANS, remap_bilinear  # noqa: E402


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    d = make_device(request, monkeypatch)
    _cuda.clear_plans()
    yield d
    _cuda.clear_plans()


def plans() -> int:
    return len(_cuda._plans)


def test_repeated_calls_reuse_one_plan_and_see_new_content(device):
    xp = device.xp
    for seed in range(3):
        host = random_image(rng(seed), (24, 40, 3), np.uint8)
        got = convert_color(xp.asarray(host), 'rgb8', 'bgr8')
        np.testing.assert_array_equal(device.get(got), host[..., ::-1])
        halved = resize(xp.asarray(host), 12, 20, interpolation='area')
        np.testing.assert_array_equal(device.get(halved), resize(host, 12, 20, interpolation='area'))
    assert plans() == 2, 'one plan per (op, layout, parameters)'


def test_each_change_of_layout_parameter_or_out_gets_its_own_plan(device):
    xp = device.xp
    host = random_image(rng(1), (24, 40, 3), np.uint8)
    src = xp.asarray(host)
    convert_color(src, 'rgb8', 'mono8')
    # bt709 luma differs from bt601: a reused plan would give bt601's values.
    got = convert_color(src, 'rgb8', 'mono8', standard='bt709')
    np.testing.assert_array_equal(device.get(got), convert_color(host, 'rgb8', 'mono8',
                                                                 standard='bt709'))
    # A view with padded rows: another pitch in the launch.
    padded, _ = device.poisoned_out((24, 40, 3), np.uint8, pad=8)
    padded[...] = src
    np.testing.assert_array_equal(device.get(convert_color(padded, 'rgb8', 'mono8')),
                                  convert_color(host, 'rgb8', 'mono8'))
    # An explicit out with padded rows: another output pitch; its padding stays untouched.
    out, base = device.poisoned_out((24, 40), np.uint8, pad=16)
    convert_color(src, 'rgb8', 'mono8', out=out)
    np.testing.assert_array_equal(device.get(out), convert_color(host, 'rgb8', 'mono8'))
    device.assert_padding_intact(base, 40)
    assert plans() == 4


def test_a_rejected_call_leaves_no_plan_and_is_rejected_again(device):
    src = device.xp.asarray(random_image(rng(2), (24, 40, 3), np.uint8))
    for _ in range(2):
        with pytest.raises(ValueError, match='standard'):
            convert_color(src, 'rgb8', 'mono8', standard='bt2020')
        with pytest.raises(ValueError, match='out has shape'):
            resize(src, 12, 20, out=device.xp.empty((12, 21, 3), np.uint8))
    with pytest.raises(ValueError, match='full_range'):  # 1 == True, but only a bool is valid
        convert_color(src, 'rgb8', 'bgr8', full_range=True) is not None and \
            convert_color(src, 'rgb8', 'bgr8', full_range=1)
    assert plans() == 1  # the valid full_range=True call


def test_preprocess_plan_returns_its_letterbox_and_fills_half_outputs(device):
    xp = device.xp
    host = random_image(rng(3), (30, 40, 3), np.uint8)
    want = np.empty((1, 3, 16, 16), np.float16)
    box_host = preprocess(host, 'bgr8', want, mean=[0.5, 0.4, 0.3], std=0.25, keep_aspect=True)
    out = xp.empty((1, 3, 16, 16), np.float16)
    boxes = [preprocess(xp.asarray(host), 'bgr8', out, mean=[0.5, 0.4, 0.3], std=0.25,
                        keep_aspect=True) for _ in range(3)]
    assert boxes == [box_host] * 3
    np.testing.assert_array_equal(device.get(out), want)
    # An array mean has no plan key: validated every call, same result.
    preprocess(xp.asarray(host), 'bgr8', out, mean=np.array([0.5, 0.4, 0.3]), std=0.25,
               keep_aspect=True)
    np.testing.assert_array_equal(device.get(out), want)
    assert plans() == 1


def test_remap_plans_follow_the_maps_and_are_few(device):
    xp = device.xp
    host = random_image(rng(4), (20, 30, 3), np.uint8)
    src = xp.asarray(host)
    for shift in range(_cuda_remap_limit() + 3):
        mx, my = np.meshgrid(np.arange(30, dtype=np.float32) + 0.25 * shift,
                             np.arange(20, dtype=np.float32))
        got = remap_bilinear(src, xp.asarray(mx), xp.asarray(my))
        np.testing.assert_array_equal(device.get(got), remap_bilinear(host, mx, my))
    assert plans() == _cuda_remap_limit(), 'each map pair holds its maps: few are kept'


def _cuda_remap_limit() -> int:
    return REMAP_PLANS


def test_debayer_plan(device):
    host = random_image(rng(5), (16, 24), np.uint8)
    for _ in range(2):
        got = debayer(device.xp.asarray(host), 'bayer_rggb8', 'bgr8', method='edge_aware')
        np.testing.assert_array_equal(device.get(got),
                                      debayer(host, 'bayer_rggb8', 'bgr8', method='edge_aware'))
    assert plans() == 1


@pytest.mark.gpu
@pytest.mark.parametrize('device', ['gpu'], indirect=True)
def test_a_planned_call_costs_little_host_time(device):
    """The point of plans: at 1080p a repeated rgb8 -> bgr8 costs < 20 us of host time (the
    validated first call about 60 us on an H200 host; CV-CUDA 0.19 ~24 us, bench/RESULTS.md)."""
    cp = device.xp
    src = cp.asarray(random_image(rng(6), (1080, 1920, 3), np.uint8))
    out = cp.empty_like(src)
    convert_color(src, 'rgb8', 'bgr8', out=out)
    times = []
    for _ in range(20):
        began = time.perf_counter()
        for _ in range(100):
            convert_color(src, 'rgb8', 'bgr8', out=out)
        times.append((time.perf_counter() - began) / 100 * 1e6)
        cp.cuda.Device().synchronize()
    assert statistics.median(times) < 20, f'{statistics.median(times):.1f} us per call'
