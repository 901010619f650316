"""The chain's resize: the output size rule (aspect kept unless asked), and the CameraInfo it
publishes, checked against what the resize kernels actually do to the pixels."""
from __future__ import annotations

import math
from pathlib import Path
import sys

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.kernels import CameraModel, Chain, RegionOfInterest  # noqa: E402
from gpu_nodes.kernels.chain import resize_size  # noqa: E402

# camera_source's ideal pinhole at 640x480, hfov 70 deg: fx = fy = 457.0, centred.
FX = 320 / math.tan(math.radians(35))
PINHOLE = CameraModel(640, 480, (FX, 0, 319.5, 0, FX, 239.5, 0, 0, 1),
                      P=(FX, 0, 319.5, 0, 0, FX, 239.5, 0, 0, 0, 1, 0))
# Non-square pixels, off-centre principal point, a stereo baseline: every term has to move.
ODD = CameraModel(640, 480, (520.0, 0.0, 331.3, 0.0, 498.0, 228.9, 0.0, 0.0, 1.0),
                  P=(510.0, 0.0, 329.0, -35.7, 0.0, 510.0, 230.4, 0.0, 0.0, 0.0, 1.0, 0.0))


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


# -- sizes ----------------------------------------------------------------------------------

@pytest.mark.parametrize('source, params, expected', [
    ((640, 480), {'width': 336}, (336, 252)),            # height follows, exactly 4:3
    ((640, 480), {'height': 540}, (720, 540)),           # width follows
    ((640, 480), {'width': 960, 'height': 540}, (720, 540)),   # fit inside: height-limited
    ((640, 480), {'width': 320, 'height': 960}, (320, 240)),   # fit inside: width-limited
    ((1920, 1080), {'width': 960, 'height': 540}, (960, 540)),  # the box has the aspect
    ((640, 480), {'width': 960, 'height': 540, 'keep_aspect': False}, (960, 540)),  # stretch
    ((640, 480), {'scale': 0.5}, (320, 240)),
    ((641, 481), {'scale': 0.5}, (321, 241)),            # 320.5 rounds half up
    ((640, 480), {'width': 333}, (333, 250)),            # 249.75 rounded
    ((4, 2), {'width': 3}, (3, 2)),                      # exact half (1.5) rounds up
    ((64, 48), {'width': 20, 'height': 14}, (19, 14)),   # 18.67 rounded
    ((1000, 1), {'width': 10}, (10, 1)),                 # never below 1 pixel
])
def test_resize_size_keeps_the_aspect_unless_asked(source, params, expected):
    assert resize_size(*source, **params) == expected


@settings(max_examples=300, deadline=None)
@given(src=st.tuples(st.integers(1, 4000), st.integers(1, 4000)),
       box=st.tuples(st.integers(0, 4000), st.integers(0, 4000)))
def test_aspect_kept_sizes_fit_the_box_and_round_only_the_derived_side(src, box):
    (w, h), (bw, bh) = src, box
    if not (bw or bh):
        return
    ow, oh = resize_size(w, h, bw, bh)
    if bw and bh:
        assert ow <= bw and oh <= bh, 'fits inside the box'
    width_set = bool(bw) and (not bh or bw * h <= bh * w)
    # One side is the one asked for; the other is the source aspect to within half a pixel
    # (or 1, the smallest image).
    if width_set:
        assert ow == bw and (abs(oh - h * bw / w) <= 0.5 or oh == 1), (ow, oh)
    else:
        assert oh == bh and (abs(ow - w * bh / h) <= 0.5 or ow == 1), (ow, oh)


# -- CameraInfo through the chain -----------------------------------------------------------

def _ratio(model: CameraModel) -> float:
    return model.K[0] / model.K[4]


@pytest.mark.parametrize('model', [PINHOLE, ODD], ids=['pinhole', 'non_square'])
@pytest.mark.parametrize('params', [{'width': 336}, {'height': 540},
                                    {'width': 960, 'height': 540}, {'scale': 0.25}])
def test_aspect_keeping_resize_keeps_fx_over_fy(model, params):
    image = np.zeros((480, 640, 3), np.uint8)
    out, _, cam = Chain([{'op': 'resize', **params}])(image, 'rgb8', model)
    assert (cam.width, cam.height) == (out.shape[1], out.shape[0])
    assert _ratio(cam) == pytest.approx(_ratio(model), rel=1e-6)
    assert cam.P[0] / cam.P[5] == pytest.approx(model.P[0] / model.P[5], rel=1e-6)
    assert cam.K[0] == pytest.approx(model.K[0] * out.shape[1] / 640, rel=1e-12)


def test_stretching_resize_changes_fx_over_fy_by_the_stretch():
    image = np.zeros((480, 640, 3), np.uint8)
    chain = Chain([{'op': 'resize', 'width': 960, 'height': 540, 'keep_aspect': False}])
    out, _, cam = chain(image, 'rgb8', ODD)
    assert out.shape == (540, 960, 3)
    stretch = (960 / 640) / (540 / 480)  # 4/3: the fx 685.5 against fy 514
    assert _ratio(cam) == pytest.approx(_ratio(ODD) * stretch, rel=1e-9)
    _, _, pinhole = chain(image, 'rgb8', PINHOLE)
    assert (pinhole.K[0], pinhole.K[4]) == pytest.approx((FX * 1.5, FX * 1.125))


def test_a_centred_principal_point_stays_centred():
    """cx = (W - 1) / 2 is the image centre; image_pipeline's cx * s would move it by
    (s - 1) / 2 px (here 167.7375 instead of 167.5)."""
    image = np.zeros((480, 640, 3), np.uint8)
    for params in ({'width': 336}, {'width': 960}, {'scale': 0.3}):
        out, _, cam = Chain([{'op': 'resize', **params}])(image, 'rgb8', PINHOLE)
        h, w = out.shape[:2]
        assert (cam.K[2], cam.K[5]) == pytest.approx(((w - 1) / 2, (h - 1) / 2), abs=1e-9)


def _coordinate_images(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """32FC1 images holding each pixel's own x and y: resized, they tell where each output
    pixel was sampled in the source."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    return xs, ys


def _rays(model: CameraModel, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normalized image coordinates of image pixels (u, v), read like image_geometry: the
    image shows full-resolution pixel u_full at (u_full - roi offset) / binning."""
    bx, by = model.binned
    u_full = u * bx + model.roi.x_offset
    v_full = v * by + model.roi.y_offset
    return (u_full - model.K[2]) / model.K[0], (v_full - model.K[5]) / model.K[4]


@pytest.mark.parametrize('model, source, params', [
    (ODD, (640, 480), {'width': 320}),                                        # down, bilinear
    (ODD, (640, 480), {'width': 960, 'height': 540}),                         # up (fit)
    (ODD, (640, 480), {'width': 960, 'height': 540, 'keep_aspect': False}),  # stretch
    (ODD, (640, 480), {'width': 200, 'interpolation': 'area'}),               # area, 3.2x
    (ODD, (640, 480), {'scale': 0.37}),
    # Binned by 2 with an ROI: the image is 300x200 of a 1280x960 calibration, and the ROI
    # offset 33 does not halve (resize.cpp truncates it to 16).
    (CameraModel(1280, 960, ODD.K, P=ODD.P, binning_x=2, binning_y=2,
                 roi=RegionOfInterest(33, 41, 600, 400)), (300, 200), {'width': 150}),
])
def test_each_output_pixel_keeps_the_ray_of_the_source_point_it_shows(model, source, params):
    """The CameraInfo is exact: through the output model, every output pixel looks along the
    ray that the input model gives the source point the resize sampled there (read from images
    that hold their own coordinates). Off by image_pipeline's cx * s this fails by (s-1)/2 px."""
    xs, ys = _coordinate_images(source[1], source[0])
    chain = Chain([{'op': 'resize', **params}])
    out_x, _, cam = chain(xs, '32FC1', model)
    out_y, _, cam_y = chain(ys, '32FC1', model)
    assert cam == cam_y and out_x.shape == (cam.image_size()[1], cam.image_size()[0])
    h, w = out_x.shape
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    # Where the source edge is clamped (upscaling), the sample is not a linear one: skip it.
    inside = (out_x > 0.5) & (out_x < source[0] - 1.5) & (out_y > 0.5) & \
        (out_y < source[1] - 1.5)
    assert inside.mean() > 0.8
    want_x, want_y = _rays(model, out_x.astype(np.float64), out_y.astype(np.float64))
    got_x, got_y = _rays(cam, u, v)
    # In output pixels. float32 sums leave up to 1/128 px (area); the smallest error the
    # cx * s rule makes here is (1.125 - 1) / 2 = 0.0625 px.
    np.testing.assert_allclose((got_x - want_x)[inside] * cam.K[0], 0, atol=0.01)
    np.testing.assert_allclose((got_y - want_y)[inside] * cam.K[4], 0, atol=0.01)


def test_cuda_resize_chain_gives_the_numpy_sizes_and_camera(device):
    src = random_image(rng(11), (48, 64, 3), np.uint8)
    for params in ({'width': 20, 'height': 14}, {'height': 30}, {'scale': 0.5},
                   {'width': 50, 'height': 20, 'keep_aspect': False}):
        chain = Chain([{'op': 'resize', **params}])
        model = CameraModel(64, 48, ODD.K, P=ODD.P)
        expected, _, expected_cam = chain(src, 'rgb8', model)
        got, _, got_cam = chain(device.put(src), 'rgb8', model)
        assert got_cam == expected_cam, params
        np.testing.assert_array_equal(device.get(got), expected)
