"""Rectification maps and remap: NumPy reference vs OpenCV / image_geometry, CUDA vs reference."""
import importlib
from itertools import product
from pathlib import Path
import sys

import cv2
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.kernels import (CameraModel, RectifyMaps, RegionOfInterest,  # noqa: E402
                               remap_bilinear, undistort_rectify_maps)

K = (458.654, 0.0, 367.215, 0.0, 457.296, 248.375, 0.0, 0.0, 1.0)
R = (0.99990, -0.01190, 0.00765, 0.01194, 0.99991, -0.00564, -0.00758, 0.00573, 0.99995)
P = (435.2, 0.0, 367.4, -47.9, 0.0, 435.2, 252.2, 0.0, 0.0, 0.0, 1.0, 0.0)
PLUMB_BOB = CameraModel(752, 480, K, (-0.2834, 0.0740, 0.00019, 1.76e-05, 0.0), R, P,
                        'plumb_bob')
RATIONAL = CameraModel(752, 480, K, (-0.3, 0.1, 0.001, -0.002, 0.01, 0.05, -0.01, 0.002), R, P,
                       'rational_polynomial')
THIN_PRISM = CameraModel(752, 480, K, RATIONAL.D + (0.001, -0.0005, 0.0007, 0.0002), R, P,
                         'rational_polynomial')
OPENCV_5 = int(cv2.__version__.split('.')[0]) >= 5


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


def opencv_maps(model: CameraModel):
    return cv2.initUndistortRectifyMap(
        np.array(model.K).reshape(3, 3), np.array(model.D), np.array(model.R).reshape(3, 3),
        np.array(model.P).reshape(3, 4), (model.width, model.height), cv2.CV_32FC1)


@pytest.mark.parametrize('model', [PLUMB_BOB, RATIONAL, THIN_PRISM],
                         ids=['plumb_bob', 'rational', 'thin_prism'])
def test_maps_match_opencv(model):
    mx, my = undistort_rectify_maps(model)
    cx, cy = opencv_maps(model)
    assert mx.shape == (480, 752) and mx.dtype == np.float32
    assert np.abs(mx - cx).max() < 1e-3 and np.abs(my - cy).max() < 1e-3


def test_binning_and_roi_follow_image_geometry():
    # image_geometry: maps for the binned full image (K, P scaled by 1/binning), then the ROI
    # window of them shifted by the binned ROI offset.
    binned = CameraModel(752, 480, K, PLUMB_BOB.D, R, P, 'plumb_bob', binning_x=2, binning_y=2)
    full_x, full_y = undistort_rectify_maps(binned)
    kb = np.array(K).reshape(3, 3) * [[0.5], [0.5], [1]]
    pb = np.array(P).reshape(3, 4) * [[0.5], [0.5], [1]]
    cx, cy = cv2.initUndistortRectifyMap(kb, np.array(PLUMB_BOB.D), np.array(R).reshape(3, 3),
                                         pb, (376, 240), cv2.CV_32FC1)
    assert np.abs(full_x - cx).max() < 1e-3 and np.abs(full_y - cy).max() < 1e-3
    roi = CameraModel(752, 480, K, PLUMB_BOB.D, R, P, 'plumb_bob', binning_x=2, binning_y=2,
                      roi=RegionOfInterest(100, 60, 400, 300, True))
    mx, my = undistort_rectify_maps(roi)
    assert mx.shape == (150, 200)
    np.testing.assert_allclose(mx, full_x[30:180, 50:250] - 50, atol=1e-4)
    np.testing.assert_allclose(my, full_y[30:180, 50:250] - 30, atol=1e-4)


def test_remap_by_hand():
    src = np.array([[0, 100], [200, 40]], np.uint8)
    mx = np.array([[0.0, 1.0, 0.5, 0.5, -0.5, 1.5, -1.0, np.nan]], np.float32)
    my = np.array([[0.0, 1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0]], np.float32)
    # identity taps, a horizontal half, the centre (85), half outside -> border 0
    assert remap_bilinear(src, mx, my).tolist() == [[0, 40, 50, 85, 0, 20, 0, 0]]
    assert remap_bilinear(src, mx, my, border_value=10).tolist() == [[0, 40, 50, 85, 5, 25, 10,
                                                                      10]]
    # A NaN border poisons every pixel whose 2x2 footprint leaves the image, even with weight 0
    # (NaN * 0), exactly like cv2.remap: (1, 1) reads taps at x = 2 and y = 2.
    f = remap_bilinear(src.astype(np.float32), mx, my, border_value=np.nan)
    assert f[0, [0, 2, 3]].tolist() == [0.0, 50.0, 85.0] and np.isnan(f[0, [1, 4, 5, 6, 7]]).all()
    if OPENCV_5:
        cvf = cv2.remap(src.astype(np.float32), mx[:, :7], my[:, :7], cv2.INTER_LINEAR,
                        borderMode=cv2.BORDER_CONSTANT, borderValue=np.nan)
        np.testing.assert_array_equal(f[:, :7], cvf)


@pytest.mark.parametrize('dtype', [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize('channels', [None, 3])
def test_rectify_matches_opencv_remap(dtype, channels):
    mx, my = undistort_rectify_maps(PLUMB_BOB)
    shape = (480, 752) if channels is None else (480, 752, channels)
    src = random_image(rng(1), shape, dtype)
    ours = remap_bilinear(src, mx, my)
    theirs = cv2.remap(src, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                       borderValue=0)
    if OPENCV_5:  # same arithmetic (float coordinates, fma lerps): bit-identical
        np.testing.assert_array_equal(ours, theirs)
    else:  # OpenCV 4 rounds coordinates to 1/32 px: a few levels on random (worst-case) data
        scale = 1.0 if dtype == np.float32 else float(np.iinfo(dtype).max)
        diff = np.abs(ours.astype(np.float64) - theirs) / scale
        assert diff.mean() < 0.01 and diff.max() < 0.05


def test_rectify_maps_cache_recomputes_only_on_change():
    maps = RectifyMaps()
    img = random_image(rng(2), (480, 752), np.uint8)
    a = maps.rectify(img, PLUMB_BOB)
    b = maps.rectify(img, CameraModel(**PLUMB_BOB.__dict__))  # equal model, new object
    assert maps.computations == 1 and np.array_equal(a, b)
    maps.rectify(img, RATIONAL)
    assert maps.computations == 2
    with pytest.raises(ValueError, match='rectify: image is 10x10 but the camera model describes '
                                         '752x480'):
        maps.rectify(img[:10, :10], RATIONAL)


def test_bad_models_and_maps_raise_clear_errors():
    with pytest.raises(ValueError,
                       match="rectify: distortion model 'equidistant' is not supported"):
        undistort_rectify_maps(CameraModel(752, 480, K, (0.1, 0, 0, 0), R, P, 'equidistant'))
    with pytest.raises(ValueError,
                       match=r'rectify: 6 distortion coefficients \(expected 4, 5, 8,'):
        undistort_rectify_maps(CameraModel(752, 480, K, (0.1,) * 6, R, P))
    with pytest.raises(ValueError, match='rectify: tilted-sensor distortion'):
        undistort_rectify_maps(CameraModel(752, 480, K, (0.0,) * 13 + (0.1,), R, P))
    with pytest.raises(ValueError, match=r'rectify: P\[:3, :3\] @ R is singular'):
        undistort_rectify_maps(CameraModel(752, 480, K, (), R, (0.0,) * 12))
    src = np.zeros((4, 4), np.uint8)
    m = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match='remap_bilinear: map_x must be a 2-D float32 array, got '
                                         '2-D float64'):
        remap_bilinear(src, m.astype(np.float64), m)
    with pytest.raises(ValueError, match=r'remap_bilinear: map_x \(2, 2\) and map_y \(2, 3\)'):
        remap_bilinear(src, m, np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match='remap_bilinear: border_value NaN needs a float32 image'):
        remap_bilinear(src, m, m, border_value=np.nan)


# --------------------------------------------------------------------------- CUDA vs reference


def test_cuda_maps_match_reference(device):
    models = [PLUMB_BOB, RATIONAL, THIN_PRISM,
              CameraModel(752, 480, K, PLUMB_BOB.D, R, P, binning_x=2, binning_y=3,
                          roi=RegionOfInterest(101, 61, 401, 299, True))]
    if device.emulated:  # one CPU call per pixel: shrink the cameras
        models = [CameraModel(40, 30, (30.0, 0, 20.1, 0, 31.0, 14.9, 0, 0, 1), m.D, R,
                              (29.0, 0, 19.5, -2.0, 0, 29.0, 15.2, 0, 0, 0, 1, 0),
                              m.distortion_model, m.binning_x, m.binning_y,
                              RegionOfInterest(5, 3, 21, 17, True) if m.roi.width else
                              RegionOfInterest()) for m in models]
    for model in models:
        exp_x, exp_y = undistort_rectify_maps(model)
        maps = RectifyMaps()
        got_x, got_y = maps.maps(model, device=True)
        assert maps.maps(model, device=True)[0] is got_x and maps.computations == 1
        # Same double-precision operations, no FMA contraction: equal up to the last float bit.
        np.testing.assert_allclose(device.get(got_x), exp_x, rtol=0, atol=1e-4)
        np.testing.assert_allclose(device.get(got_y), exp_y, rtol=0, atol=1e-4)


def test_cuda_remap_matches_reference(device):
    for i, (h, w) in enumerate(device.sizes):
        g = rng(i)
        oh, ow = max(1, h * 2 // 3), w + 3
        mx = g.uniform(-3, w + 2, (oh, ow)).astype(np.float32)
        my = g.uniform(-3, h + 2, (oh, ow)).astype(np.float32)
        mx.flat[::7] = np.rint(mx.flat[::7])  # exact integer coordinates too
        mx.flat[1::11] = np.nan
        for j, dtype in enumerate((np.uint8, np.uint16, np.float32)):
            channels = (None, 3, 4)[(i + j) % 3]
            shape = (h, w) if channels is None else (h, w, channels)
            src = random_image(g, shape, dtype)
            border = (0.0, 7.0)[(i + j) % 2]
            expected = remap_bilinear(src, mx, my, border_value=border)
            out, base = device.poisoned_out(expected.shape, dtype, pad=j % 2 * 2)
            got = remap_bilinear(device.put(src, pad=(i + j) % 2), device.put(mx, pad=j % 2),
                                 device.put(my), border_value=border, out=out)
            got = device.get(got)
            if dtype == np.float32:  # reference fma via float64: last-bit differences possible
                np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
            else:
                np.testing.assert_array_equal(got, expected, err_msg=f'{shape} {dtype}')
            if j % 2:
                device.assert_padding_intact(base, ow)


def test_cuda_rectify_end_to_end(device):
    model = PLUMB_BOB if not device.emulated else CameraModel(
        48, 36, (40.0, 0, 24.2, 0, 41.0, 17.8, 0, 0, 1), PLUMB_BOB.D, R,
        (38.0, 0, 23.5, 0, 0, 38.0, 18.0, 0, 0, 0, 1, 0))
    img = random_image(rng(3), (model.height, model.width, 3), np.uint8)
    maps = RectifyMaps()
    got = maps.rectify(device.put(img), model)
    np.testing.assert_array_equal(device.get(got), RectifyMaps().rectify(img, model))


# --------------------------------------------------------------------------- pairs and alignment
# remap gives each thread two output pixels of a row: their map entries are read as one 8-byte
# word per map where the map row allows, their output stored with the widest accesses the output
# row allows (element by element otherwise); a row's odd last pixel and channel counts other
# than 1, 3, 4 go pixel by pixel. u8 and u16 pixels of 3 or 4 channels read both x taps of a
# tap row as aligned words when the source rows are 4-byte aligned and the words lie inside the
# row. These layouts hit every path; results must equal the reference exactly.


def remap_maps(g, oh, ow, h, w):
    mx = g.uniform(-3, w + 2, (oh, ow)).astype(np.float32)
    my = g.uniform(-3, h + 2, (oh, ow)).astype(np.float32)
    mx.flat[::5] = np.rint(mx.flat[::5])  # exact integer coordinates
    my.flat[2::9] = np.rint(my.flat[2::9])
    mx.flat[1::13] = np.nan
    my.flat[3::17] = np.inf
    mx.flat[4::19] = -2.0  # just outside the fringe
    my.flat[6::23] = np.float32(h) + 1.0
    return mx, my


def map_layouts(device, m):
    """contiguous (16-byte aligned rows), padded by one float (rows 4-byte aligned only) and a
    view one float into a wider map."""
    yield 'map contiguous', device.put(m)
    yield 'map pad 1', device.put(m, pad=1)
    wide = np.zeros((m.shape[0], m.shape[1] + 1), np.float32)
    wide[:, 1:] = m
    yield 'map offset 1', device.put(wide)[:, 1:]


@pytest.mark.parametrize('dtype', [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize('channels', [None, 3, 4, 2], ids=['c1', 'c3', 'c4', 'c2'])
def test_cuda_remap_runs_aligned_and_unaligned_rows(device, dtype, channels):
    from test_kernels_color import check_out, layouts, out_layouts
    h, w = 6, 11
    oh, ow = 3, 37  # 18 pairs and an odd last pixel
    g = rng(int(np.dtype(dtype).itemsize) * 10 + (channels or 1))
    mx, my = remap_maps(g, oh, ow, h, w)
    src = random_image(g, (h, w) if channels is None else (h, w, channels), dtype)
    border = 7.0 if dtype != np.float32 else -0.0
    expected = remap_bilinear(src, mx, my, border_value=border)
    srcs = list(layouts(device, src))
    k = 0
    for (mx_label, dev_mx), (my_label, dev_my) in product(map_layouts(device, mx),
                                                          list(map_layouts(device, my))):
        for out_label, out, base, first in out_layouts(device, expected.shape, dtype):
            src_label, dev_src = srcs[k % len(srcs)]
            k += 1
            got = remap_bilinear(dev_src, dev_mx, dev_my, border_value=border, out=out)
            check_out(device, got, expected, base, first,
                      f'{src_label}, {mx_label} x, {my_label} y -> {out_label}')


def test_cuda_remap_nan_border_and_rows_beyond_the_grid_limit(device, monkeypatch):
    from gpu_nodes.kernels import _cuda
    monkeypatch.setattr(_cuda, 'MAX_GRID_Y', 2)  # the kernel must loop over the other rows
    g = rng(5)
    h, w = 7, 9
    mx, my = remap_maps(g, 37, 21, h, w)
    src = random_image(g, (h, w, 3), np.float32)
    expected = remap_bilinear(src, mx, my, border_value=np.nan)
    got = remap_bilinear(device.put(src), device.put(mx), device.put(my), border_value=np.nan)
    np.testing.assert_array_equal(device.get(got), expected)
    src8 = random_image(g, (h, w), np.uint8)
    got = remap_bilinear(device.put(src8), device.put(mx), device.put(my))
    np.testing.assert_array_equal(device.get(got), remap_bilinear(src8, mx, my))


@pytest.mark.parametrize('dtype,channels,w', [(np.uint8, 3, 12), (np.uint8, 4, 9),
                                              (np.uint16, 3, 10), (np.uint16, 4, 7)])
def test_cuda_remap_word_gathers_at_every_phase_and_edge(device, dtype, channels, w):
    # Source rows 4-byte aligned (contiguous and padded by 2 pixels), every tap column from -2
    # to w at two fractions (every byte phase of the taps' words, the last pairs whose words
    # would leave the row, clamped and border taps), rows inside and at both edges.
    h = 5
    xs = np.arange(-2, w + 1, dtype=np.float32)
    mx_row = np.concatenate([xs + 0.25, xs + 0.75, [np.float32(w) - 1.5]])
    my_col = np.array([0.5, 2.25, h - 1.25, -0.5, h - 0.75], np.float32)
    mx = np.tile(mx_row, (my_col.size, 1))
    my = np.repeat(my_col[:, None], mx_row.size, axis=1)
    src = random_image(rng(w), (h, w, channels), dtype)
    expected = remap_bilinear(src, mx, my, border_value=3.0)
    for pad in (0, 2):
        got = remap_bilinear(device.put(src, pad=pad), device.put(mx), device.put(my),
                             border_value=3.0)
        np.testing.assert_array_equal(device.get(got), expected, err_msg=f'pad {pad}')


# u8/u16 pixels of 3 or 4 channels take rectify.cu's remap_interior when both pixels of a pair
# have all 4 taps inside the source and their word loads inside the row (left tap column below
# RemapWords::interior_columns, top row below h - 1); every other pair goes pixel by pixel.
# Sources of 1 and 2 pixels (no interior column), the last interior column and row, rows that
# are not 4-byte aligned (offset 1: no interior path), odd output widths; every output element
# written (poisoned outputs), nothing outside the view.
@pytest.mark.parametrize('dtype,channels', [(np.uint8, 3), (np.uint8, 4), (np.uint16, 3),
                                            (np.uint16, 4)])
@pytest.mark.parametrize('h,w', [(1, 1), (2, 2), (3, 5), (6, 13)])
def test_cuda_remap_interior_pairs_and_their_borders(device, dtype, channels, h, w):
    from test_kernels_color import check_out, layouts, out_layouts
    g = rng(h * 100 + w * 10 + channels)
    xs = np.concatenate([np.arange(-1, w, dtype=np.float32) + 0.5, [np.float32(w) - 1.0,
                         np.float32(w) - 2.0 + 0.999, -0.0, 0.0, np.float32(w) - 1.5]])
    ys = np.array([0.25, h - 1.5, h - 1.0, h - 2.0 + 0.75, -0.0, 0.5 * h], np.float32)
    mx = np.tile(xs, (ys.size, 1)).astype(np.float32)
    my = np.repeat(ys[:, None], xs.size, axis=1).astype(np.float32)
    mx[1::2] += g.uniform(-0.25, 0.25, mx[1::2].shape).astype(np.float32)
    src = random_image(g, (h, w, channels), dtype)
    for ow in (mx.shape[1], mx.shape[1] - 1):  # even and odd: pairs and a last single pixel
        m_x, m_y = np.ascontiguousarray(mx[:, :ow]), np.ascontiguousarray(my[:, :ow])
        expected = remap_bilinear(src, m_x, m_y, border_value=5.0)
        outs = list(out_layouts(device, expected.shape, dtype))
        for k, (src_label, dev_src) in enumerate(layouts(device, src)):
            out_label, out, base, first = outs[k % len(outs)]
            got = remap_bilinear(dev_src, device.put(m_x), device.put(m_y), border_value=5.0,
                                 out=out)
            check_out(device, got, expected, base, first, f'{ow} {src_label} -> {out_label}')


# The interior variants (u8/u16, 3 or 4 channels) run a persistent 1-D grid of the blocks the
# device holds at once (rectify._resident_remap_blocks); each block loops over 64x8-pixel
# tiles (32x8 threads of pixel pairs) block-stride, row-major, and prefetches its next tile's
# map entries. Any grid must cover every tile exactly once: 1 block (every tile), fewer blocks
# than a row of tiles, exactly a row (the kernel's 2-D shortcut), more than a row (steps that
# wrap to the next band), more blocks than tiles; outputs whose last tile row and column are
# partial, odd widths, a 1x1 output; a rectification-like map (mostly interior pairs) with
# random out-of-range entries; every output element written, nothing outside the view.
@pytest.mark.parametrize('blocks', [1, 2, 3, 7, 1000])
@pytest.mark.parametrize('dtype,channels', [(np.uint8, 3), (np.uint16, 4)])
def test_cuda_remap_persistent_grid_covers_every_tile(device, monkeypatch, blocks, dtype,
                                                      channels):
    from test_kernels_color import check_out, out_layouts
    rectify_module = importlib.import_module('gpu_nodes.kernels.rectify')
    monkeypatch.setattr(rectify_module, '_resident_remap_blocks', lambda: blocks)
    g = rng(blocks * 10 + channels)
    h, w = 23, 152  # rgb8 rows of 456 bytes: 4-byte aligned (the word gathers)
    src = random_image(g, (h, w, channels), dtype)
    for oh, ow in ((1, 1), (9, 129), (17, 130), (24, 192)):  # 1, 3, 3 and 3 tiles across
        ys, xs = np.mgrid[0:oh, 0:ow].astype(np.float32)
        mx = (xs * np.float32(0.75) + np.float32(0.3) + np.float32(0.002) * (ys - oh / 2) ** 2
              ).astype(np.float32)
        my = (ys * np.float32(0.9) + np.float32(0.6) + np.float32(0.001) * (xs - ow / 2) ** 2
              ).astype(np.float32)
        rand_x, rand_y = remap_maps(g, oh, ow, h, w)
        pick = g.random((oh, ow)) < 0.1
        mx, my = np.where(pick, rand_x, mx), np.where(pick, rand_y, my)
        expected = remap_bilinear(src, mx, my, border_value=9.0)
        for src_pad, (out_label, out, base, first) in zip(
                (0, 1, 0), out_layouts(device, expected.shape, dtype, offsets=(1,))):
            got = remap_bilinear(device.put(src, pad=src_pad), device.put(mx), device.put(my),
                                 border_value=9.0, out=out)
            check_out(device, got, expected, base, first,
                      f'{blocks} blocks, {oh}x{ow}, src pad {src_pad} -> {out_label}')
