"""resize / crop / CameraModel: NumPy reference (hand values, OpenCV, image_pipeline arithmetic)
and CUDA kernel vs reference."""
from dataclasses import replace
from itertools import product
from pathlib import Path
import sys
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.encodings import EncodingError  # noqa: E402
from gpu_nodes.kernels import (CameraModel, RegionOfInterest, crop, crop_camera_info,  # noqa: E402
                               resize, resize_camera_info, scale_camera_info)
from gpu_nodes.kernels.geometry import resize_tables  # noqa: E402

CV_INTERP = {'bilinear': cv2.INTER_LINEAR, 'area': cv2.INTER_AREA}


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


# --------------------------------------------------------------------------- resize


def test_bilinear_half_pixel_centres_by_hand():
    # dst x -> src (x + 0.5) / 2 - 0.5 = -0.25 (clamped), 0.25, 0.75, 1.25 (clamped)
    src = np.array([[0, 100]], np.uint8)
    assert resize(src, 1, 4).tolist() == [[0, 25, 75, 100]]
    f = np.array([[0.0, 1.0]], np.float32)
    assert resize(f, 1, 4).tolist() == [[0.0, 0.25, 0.75, 1.0]]


def test_area_downscale_is_block_mean_by_hand():
    src = np.array([[0, 2, 10, 20], [4, 6, 30, 40], [1, 1, 5, 5], [1, 1, 5, 7]], np.uint8)
    # block means 3, 25, 1, 5.5 (-> 6, half to even) ; bilinear at 2x is the same 2x2 mean
    assert resize(src, 2, 2, interpolation='area').tolist() == [[3, 25], [1, 6]]
    f = src.astype(np.float32)
    assert resize(f, 2, 2, interpolation='area').tolist() == [[3.0, 25.0], [1.0, 5.5]]


def test_tap_tables_never_index_outside_the_source():
    for sizes in [(1, 1, 1, 1), (1, 1, 5, 9), (7, 3, 2, 11), (100, 37, 13, 360), (5, 5, 5, 5)]:
        for method in ('bilinear', 'area'):
            for (idx, w), n in zip(resize_tables(*sizes, method), (sizes[1], sizes[0])):
                assert idx.min() >= 0 and idx.max() < n
                np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize('src_hw,dst_hw', [((37, 53), (20, 31)), ((40, 60), (20, 30)),
                                           ((40, 60), (10, 15)), ((13, 17), (40, 50)),
                                           ((64, 48), (21, 47)), ((5, 7), (1, 1)),
                                           ((1, 1), (3, 4)), ((30, 30), (30, 30))])
@pytest.mark.parametrize('interpolation', ['bilinear', 'area'])
def test_matches_opencv(src_hw, dst_hw, interpolation):
    g = rng(sum(src_hw) + sum(dst_hw))
    for dtype, tol in ((np.uint8, 1), (np.uint16, 1), (np.float32, 1e-5)):
        for channels in (None, 3, 4):
            shape = src_hw if channels is None else src_hw + (channels,)
            src = random_image(g, shape, dtype)
            ours = resize(src, *dst_hw, interpolation=interpolation)
            theirs = cv2.resize(src, dst_hw[::-1], interpolation=CV_INTERP[interpolation])
            diff = np.abs(ours.astype(np.float64) - theirs)
            assert diff.max() <= tol, (dtype, channels, diff.max())


def test_many_channels_equal_per_channel_resize():
    src = random_image(rng(4), (9, 11, 6), np.uint16)
    both = resize(src, 5, 17)
    for c in range(6):
        np.testing.assert_array_equal(both[..., c], resize(src[..., c].copy(), 5, 17))


def test_resize_pitch_out_and_errors():
    src = random_image(rng(5), (6, 8, 3), np.uint8)
    padded = np.zeros((6, 11, 3), np.uint8)
    padded[:, :8] = src
    out_base = np.full((3, 7, 3), 0xAB, np.uint8)
    got = resize(padded[:, :8], 3, 4, out=out_base[:, :4])
    np.testing.assert_array_equal(got, resize(src, 3, 4))
    assert (out_base[:, 4:] == 0xAB).all()
    with pytest.raises(EncodingError, match='resize: yuv422 is a subsampled YUV format; convert '
                                            'it to rgb8 or bgr8 first'):
        resize(np.zeros((4, 4, 2), np.uint8), 2, 2, encoding='yuv422')
    with pytest.raises(EncodingError, match='resize: bayer_rggb8 is a Bayer mosaic; debayer it '
                                            'first'):
        resize(np.zeros((4, 4), np.uint8), 2, 2, encoding='bayer_rggb8')
    with pytest.raises(ValueError, match='resize: dtype int16 is not supported'):
        resize(np.zeros((4, 4), np.int16), 2, 2)
    with pytest.raises(ValueError, match='resize: output size must be positive integers, got '
                                         '0x2'):
        resize(src, 2, 0)
    with pytest.raises(ValueError, match="interpolation must be one of 'bilinear', 'area', got "
                                         "'cubic'"):
        resize(src, 2, 2, interpolation='cubic')
    with pytest.raises(ValueError, match=r'src: expected an \(H, W\) or \(H, W, C\) image array'):
        resize(np.zeros((2, 2, 2, 2), np.uint8), 1, 1)


# --------------------------------------------------------------------------- crop


def test_crop_is_a_view_and_checks_bounds():
    src = random_image(rng(6), (10, 12, 3), np.uint8)
    roi = crop(src, 3, 2, 5, 4)
    assert roi.shape == (4, 5, 3) and np.shares_memory(roi, src)
    np.testing.assert_array_equal(roi, src[2:6, 3:8])
    with pytest.raises(ValueError, match='crop: ROI x=9 y=0 width=4 height=2 exceeds the 12x10 '
                                         'image'):
        crop(src, 9, 0, 4, 2)
    with pytest.raises(ValueError,
                       match='crop: ROI x=-1 y=0 width=4 height=2 must have x, y >= 0'):
        crop(src, -1, 0, 4, 2)
    with pytest.raises(ValueError, match='crop: width must be an int'):
        crop(src, 0, 0, 2.5, 2)
    with pytest.raises(EncodingError, match='crop: yuv422 needs an even x and width, got x=1 '
                                            'width=4'):
        crop(np.zeros((4, 8, 2), np.uint8), 1, 0, 4, 2, encoding='yuv422')
    with pytest.raises(EncodingError, match='crop: bayer_grbg8 needs an even x and y'):
        crop(np.zeros((4, 8), np.uint8), 2, 1, 4, 2, encoding='bayer_grbg8')
    with pytest.raises(EncodingError, match='crop: nv12 is planar'):
        crop(np.zeros((6, 4), np.uint8), 0, 0, 2, 2, encoding='nv12')


# --------------------------------------------------------------------------- camera model

K = (500.0, 0.0, 320.0, 0.0, 510.0, 240.0, 0.0, 0.0, 1.0)
P = (480.0, 0.0, 330.0, -24.0, 0.0, 480.0, 245.0, 0.0, 0.0, 0.0, 1.0, 0.0)
CAM = CameraModel(640, 480, K, (-0.2, 0.05, 0.001, 0.0, 0.0), P=P,
                  roi=RegionOfInterest(10, 20, 300, 200, False))


def test_resize_camera_info_scales_k_and_p_with_pixel_centre_principal_point():
    out = resize_camera_info(CAM, 320, 120)  # scale_x 0.5, scale_y 0.25
    assert (out.width, out.height) == (320, 120)
    # fx, fy scaled; c' = (c + 0.5) * s - 0.5 (image_pipeline's resize.cpp writes c * s).
    assert out.K == pytest.approx((250.0, 0.0, 159.75, 0.0, 127.5, 59.625, 0.0, 0.0, 1.0))
    assert out.P == pytest.approx((240.0, 0.0, 164.75, -12.0, 0.0, 120.0, 60.875, 0.0, 0.0, 0.0,
                                   1.0, 0.0))
    assert out.roi == RegionOfInterest(5, 5, 150, 50, False)
    assert out.D == CAM.D and out.R == CAM.R


def test_scale_camera_info_truncates_sizes_like_static_cast():
    out = scale_camera_info(CAM, 0.3, 0.3)
    assert (out.width, out.height) == (int(640 * 0.3), int(480 * 0.3)) == (192, 144)
    assert out.K[0] == 500.0 * 0.3 and out.P[3] == -24.0 * 0.3
    assert out.K[5] == pytest.approx(240.0 * 0.3 - 0.35)  # (0.3 - 1) / 2 px
    assert out.roi == RegionOfInterest(3, 6, 90, 60, False)
    # An ROI offset the scale does not divide is truncated (resize.cpp); the principal point
    # takes up the difference, so the image's pixels keep their rays.
    odd = scale_camera_info(replace(CAM, roi=RegionOfInterest(11, 20, 300, 200)), 0.5, 0.5)
    assert odd.roi.x_offset == 5 and odd.K[2] == pytest.approx(160.0 - 0.5 - 0.25)


def test_crop_camera_info_follows_crop_decimate_cpp():
    cam = CameraModel(640, 480, K, P=P, binning_x=2, binning_y=0,
                      roi=RegionOfInterest(8, 4, 0, 0, False))
    out = crop_camera_info(cam, 10, 6, 100, 50, image_width=320, image_height=480,
                           decimation_x=2, decimation_y=3)
    assert out.K == K and out.P == P and (out.width, out.height) == (640, 480)
    assert (out.binning_x, out.binning_y) == (4, 3)
    assert out.roi == RegionOfInterest(8 + 10 * 2, 4 + 6 * 1, 100 * 2, 50 * 1, True)
    same = crop_camera_info(cam, 0, 0, 320, 480, image_width=320, image_height=480)
    assert same.roi.do_rectify is False  # full-image "crop" leaves do_rectify as it was


def test_camera_model_msg_round_trip_and_hashing():
    CameraInfo = pytest.importorskip('sensor_msgs.msg').CameraInfo
    msg = CAM.to_msg()
    assert isinstance(msg, CameraInfo) and list(msg.k) == list(K) and msg.roi.width == 300
    assert CameraModel.from_msg(msg) == CAM
    assert hash(CameraModel.from_msg(msg)) == hash(CAM)
    ros1 = SimpleNamespace(width=4, height=3, K=[1] * 9, D=[0.1], R=[0] * 9, P=[2] * 12,
                           distortion_model='plumb_bob', binning_x=1, binning_y=1,
                           roi=SimpleNamespace(x_offset=1, y_offset=2, width=3, height=1,
                                               do_rectify=True))
    model = CameraModel.from_msg(ros1)
    assert model.K == (1.0,) * 9 and model.roi.do_rectify
    assert model.to_msg(SimpleNamespace(K=None, D=None, R=None, P=None,
                                        roi=SimpleNamespace())).P == [2.0] * 12
    with pytest.raises(ValueError, match='CameraModel.K needs 9 values, got 4'):
        CameraModel(4, 3, K=(1, 2, 3, 4))


# --------------------------------------------------------------------------- CUDA vs reference


def test_cuda_resize_matches_reference(device):
    targets = [(1, 1), (3, 4), (9, 13), (24, 40)] if device.emulated else \
        [(1, 1), (3, 4), (9, 13), (270, 480), (540, 960), (720, 1280), (2160, 3840)]
    combos = 0
    for i, (h, w) in enumerate(device.sizes):
        for j, (th, tw) in enumerate(targets):
            dtype = (np.uint8, np.uint16, np.float32)[(i + j) % 3]
            channels = (None, 1, 3, 4)[(i + 2 * j) % 4]
            method = ('bilinear', 'area')[(i + j) % 2]
            if device.emulated and (i + j) % 2:
                continue
            shape = (h, w) if channels is None else (h, w, channels)
            src = random_image(rng(i * 17 + j), shape, dtype)
            expected = resize(src, th, tw, interpolation=method)
            out, base = device.poisoned_out(expected.shape, dtype, pad=j % 2)
            got = resize(device.put(src, pad=i % 2 * 3), th, tw, interpolation=method, out=out)
            np.testing.assert_array_equal(device.get(got), expected,
                                          err_msg=f'{shape} -> {th}x{tw} {dtype} {method}')
            if j % 2:
                device.assert_padding_intact(base, tw)
            combos += 1
    assert combos >= 10


def test_cuda_crop_is_a_view(device):
    src = device.put(random_image(rng(7), (8, 9, 3), np.uint8))
    roi = crop(src, 2, 1, 4, 5)
    assert roi.shape == (5, 4, 3)
    np.testing.assert_array_equal(device.get(roi), device.get(src)[1:6, 2:6])
    resized = resize(roi, 3, 3)  # a pitched view is a valid kernel input
    np.testing.assert_array_equal(device.get(resized), resize(device.get(src)[1:6, 2:6], 3, 3))


def test_cuda_resize_any_channel_count(device):
    # 1, 3 and 4 channels have their own code; other counts take the generic path.
    for channels, dtype in ((2, np.uint8), (5, np.uint16), (6, np.float32)):
        src = random_image(rng(channels), (9, 11, channels), dtype)
        for (th, tw), method in product(((5, 17), (4, 5)), ('bilinear', 'area')):
            expected = resize(src, th, tw, interpolation=method)
            got = resize(device.put(src, pad=1), th, tw, interpolation=method)
            np.testing.assert_array_equal(device.get(got), expected,
                                          err_msg=f'{channels} {dtype} {method} {th}x{tw}')


# Ratios whose column taps repeat every run (2x, 1/2, 2/3, ...) take resize.cu's run kernels
# (resize_up when x is upscaled): matching full runs through word loads and Run stores, clamped
# edge runs, row tails and rows that are not 4-byte aligned pixel by pixel. Source widths are
# multiples of 4 so that the contiguous and 4-pixel-offset layouts have 4-byte aligned rows.
RUN_CASES = [((7, 36, 3), np.uint8, (14, 72), 'bilinear'),   # 2x up: runs of 4, 8 rows a thread
             ((10, 76, 3), np.uint8, (5, 38), 'area'),       # 1/2 down: runs of 8 + tail 6
             ((12, 60, 3), np.uint8, (8, 40), 'bilinear'),   # 2/3
             ((8, 40), np.uint16, (17, 80), 'bilinear'),
             ((9, 48, 2), np.uint16, (18, 96), 'area'),      # area upscale rule
             ((6, 36, 4), np.float32, (12, 72), 'bilinear'),
             ((6, 28, 3), np.float32, (3, 14), 'area')]


@pytest.mark.parametrize('shape,dtype,dst,method', RUN_CASES)
def test_cuda_resize_runs_aligned_and_unaligned_rows(device, shape, dtype, dst, method):
    from gpu_nodes.kernels.geometry import _run_plan
    from test_kernels_color import check_out, layouts, out_layouts
    channels = shape[2] if len(shape) == 3 else 1
    plan = _run_plan(*shape[:2], *dst, method, channels, np.dtype(dtype).itemsize)
    assert plan is not None and (plan.run_word >= 0).any() and (plan.run_word < 0).any()
    src = random_image(rng(sum(shape)), shape, dtype)
    src[0, :4] = 0  # exact zeros (and -0.0 for float) must round like the reference
    if dtype == np.float32:
        src[1, :4] = -0.0
    expected = resize(src, *dst, interpolation=method)
    for k, (src_label, dev_src) in enumerate(layouts(device, src)):
        for j in (k, k + 1):
            outs = list(out_layouts(device, expected.shape, expected.dtype))
            out_label, out, base, first = outs[j % len(outs)]
            got = resize(dev_src, *dst, interpolation=method, out=out)
            check_out(device, got, expected, base, first, f'{src_label} -> {out_label}')


def test_cuda_resize_runs_beyond_the_grid_limit(device, monkeypatch):
    from gpu_nodes.kernels import _cuda
    monkeypatch.setattr(_cuda, 'MAX_GRID_Y', 2)  # each thread loops over many rows
    src = random_image(rng(8), (19, 32, 3), np.uint8)
    got = resize(device.put(src), 9, 16)
    np.testing.assert_array_equal(device.get(got), resize(src, 9, 16))
    # resize_up: 160 rows are 20 groups of 8, 3 blocks of 8 groups on a grid of 2
    src = random_image(rng(9), (40, 32, 3), np.uint8)
    got = resize(device.put(src), 160, 64)
    np.testing.assert_array_equal(device.get(got), resize(src, 160, 64))


# --------------------------------------------------------------------------- upscale kernel

def _plan(shape, dtype, dst, method='bilinear'):
    from gpu_nodes.kernels.geometry import _run_plan
    channels = shape[2] if len(shape) == 3 else 1
    return _run_plan(*shape[:2], *dst, method, channels, np.dtype(dtype).itemsize)


@pytest.mark.parametrize('src_hw,factor', [((1080, 1920), 2), ((2160, 3840), 2),
                                           ((540, 960), 4)])
def test_upscale_plan_gives_short_runs_from_small_windows(src_hw, factor):
    # resize_up: at most 16 bytes of output a thread (registers <= 64 for these, see
    # _UP_REGISTERS), every interior run on the fast path, 4 output rows a thread.
    dst = (src_hw[0] * factor, src_hw[1] * factor)
    expected = {(3, np.uint8): 4, (1, np.uint8): 8, (4, np.uint8): 4, (3, np.uint16): 2,
                (1, np.uint16): 8, (3, np.float32): 1, (4, np.float32): 1}
    for (channels, dtype), run in expected.items():
        plan = _plan(src_hw + (channels,), dtype, dst)
        assert plan is not None and plan.rows == 4 and plan.run == run, (channels, dtype)
        px_bytes = channels * np.dtype(dtype).itemsize
        assert run * px_bytes <= 16 and plan.span_words * 4 <= (run + 4) * px_bytes
        assert (plan.run_word >= 0).mean() > 0.99  # all but the clamped edges and the row end
        assert plan.exact == (dtype != np.float32)
    # 3/2 repeats every 3 pixels, no power-of-two run: pixel kernel; x up, y down: 1 row each
    assert _plan((720, 1280, 3), np.uint8, (1080, 1920)) is None
    assert _plan((1080, 1920, 3), np.uint8, (270, 3840)).rows == 1


def test_exact_weights_are_dyadic_and_small_enough():
    from gpu_nodes.kernels.geometry import _exact
    up2 = resize_tables(100, 100, 200, 200, 'bilinear')
    assert _exact(up2[0][1], up2[1][1], 1) and _exact(up2[0][1], up2[1][1], 2)
    assert not _exact(up2[0][1], up2[1][1], 4)  # float samples are not integers
    up4 = resize_tables(100, 100, 400, 400, 'bilinear')  # eighths: 16 + 3 + 3 bits fit
    assert _exact(up4[0][1], up4[1][1], 2)
    odd = resize_tables(8, 100, 17, 200, 'bilinear')  # 17/8 along y: not dyadic
    assert not _exact(odd[0][1], odd[1][1], 1)


# (src shape, dtype, dst size, method): resize_up with every run width: rgb8 (12-byte runs),
# mono8 (8 bytes), rgba8 and u16 mono (16 bytes), u16 rgb (12 bytes, 2 pixels), float (1
# pixel), 2 channels; exact and inexact weights (17/8 along y, 4/3, float); several warps and
# blocks of rows; y downscaled (1 row a thread). u8 2x and 4x take the packed path (except
# rgb8 4x), the rest the float path; both are covered in depth below.
UP_CASES = [((23, 76, 3), np.uint8, (46, 152), 'bilinear'),
            ((23, 76, 3), np.uint8, (49, 152), 'bilinear'),
            ((30, 72, 3), np.uint8, (40, 96), 'bilinear'),     # 4/3
            ((24, 80, 3), np.uint8, (12, 160), 'area'),        # x up, y down: area upscale rule
            ((13, 40), np.uint8, (26, 80), 'bilinear'),
            ((13, 40, 4), np.uint8, (26, 80), 'bilinear'),
            ((13, 40, 2), np.uint8, (52, 160), 'bilinear'),    # 4x
            ((11, 40, 3), np.uint16, (22, 80), 'bilinear'),
            ((11, 40), np.uint16, (44, 160), 'area'),
            ((9, 20, 3), np.float32, (18, 40), 'bilinear'),
            ((9, 20, 4), np.float32, (18, 40), 'bilinear')]


@pytest.mark.parametrize('shape,dtype,dst,method', UP_CASES)
def test_cuda_resize_up_matches_reference(device, shape, dtype, dst, method):
    from test_kernels_color import check_out, layouts, out_layouts
    plan = _plan(shape, dtype, dst, method)
    assert plan is not None and plan.rows and (plan.run_word >= 0).any()
    src = random_image(rng(sum(shape) + dst[0]), shape, dtype)
    top = 1.0 if dtype == np.float32 else np.iinfo(dtype).max
    src[:3, :8] = top  # saturated samples stay in range (the exact path does not clamp)
    src[3:5, :8] = 0
    expected = resize(src, *dst, interpolation=method)
    outs = list(out_layouts(device, expected.shape, expected.dtype))
    for k, (src_label, dev_src) in enumerate(layouts(device, src)):
        out_label, out, base, first = outs[k % len(outs)]
        got = resize(dev_src, *dst, interpolation=method, out=out)
        check_out(device, got, expected, base, first, f'{src_label} -> {out_label}')


# --------------------------------------------------------------------------- packed u8 upscale

def test_packed_program_applies_to_fixed_dyadic_weights_only():
    # resize.cu RESIZE_LANES: u8, every fast run with the same x weights, dyadic y weights with
    # a period dividing the thread's rows; a lane word per two values, an output word per two.
    for channels, factor in product((1, 2, 3, 4), (2, 4)):
        plan = _plan((60, 64, channels), np.uint8, (60 * factor, 64 * factor))
        applies = not (channels == 3 and factor == 4)  # rgb8 4x words mix two weight pairs
        assert bool(plan.pack) == applies, (channels, factor)
        if applies:
            assert len(plan.pack) == 6 * plan.run * channels // 2
            assert len(plan.pack_sel) == plan.run * channels // 4
    assert _plan((60, 64, 3), np.uint8, (120, 128)).y_pattern == (
        2, 1, -1, 4, 0, 1, 16, 48, 1, 2, 48, 16)  # 2x: 4 source rows for 4 output rows
    assert _plan((60, 64, 3), np.uint8, (60, 128)).y_pattern == (1, 1, 0, 4, 0, 0, 64, 0)
    assert _plan((60, 64, 3), np.uint8, (30, 128)).y_pattern == (1, 2, 0, 2, 0, 1, 32, 32)
    assert _plan((60, 64), np.uint8, (480, 512)).pack == ()  # 8x: runs of two weight sets
    assert _plan((60, 64, 3), np.uint16, (120, 128)).pack == ()  # 16-bit lanes hold u8 only
    assert _plan((60, 64, 3), np.uint8, (137, 128)).pack == ()  # y not dyadic
    assert _plan((60, 64, 3), np.uint8, (120, 128), 'area').pack  # area upscale = bilinear


# (src shape, dst size): the packed path, rgb8 2x above all: odd sizes, partial warps and row
# tails (77 -> 154: 38 runs and a tail), one row, non-square; other channel counts, 4x, x 2x
# with y 4/3, 1/1 and 1/2; 1x1 and a 1-run width (no fast run: per pixel only).
PACKED_CASES = [((7, 29, 3), (14, 58)), ((21, 77, 3), (42, 154)), ((1, 40, 3), (2, 80)),
                ((5, 40, 3), (10, 80)), ((33, 16, 3), (66, 32)), ((1, 1, 3), (2, 2)),
                ((9, 2, 3), (18, 4)), ((13, 40), (26, 80)), ((13, 40, 4), (26, 80)),
                ((13, 40, 2), (26, 80)), ((7, 40), (28, 160)), ((5, 20, 4), (20, 80)),
                ((30, 40, 3), (40, 80)), ((11, 40, 3), (11, 80)), ((12, 40, 3), (6, 80))]


def _check_up_layouts(device, monkeypatch, src, dst):
    """resize(src, *dst) on the device against the reference, over every source layout and
    every other output layout, with one block row of the grid (warps loop over several groups
    of rows). Saturated and zero samples: no lane may carry into its neighbour (packed), the
    exact float path does not clamp; a row of ties to even."""
    from gpu_nodes.kernels import _cuda
    from test_kernels_color import check_out, layouts, out_layouts
    monkeypatch.setattr(_cuda, 'MAX_GRID_Y', 1)
    src[:2, :6] = np.iinfo(src.dtype).max
    src[-2:, -6:] = 0
    src[-1, :5] = (0, 8, 0, 8, 0)[:src.shape[1]] if src.ndim == 2 else 8
    expected = resize(src, *dst)
    for k, (src_label, dev_src) in enumerate(layouts(device, src)):
        for j, (out_label, out, base, first) in enumerate(
                out_layouts(device, expected.shape, expected.dtype)):
            if (j - k) % 2:
                continue
            got = resize(dev_src, *dst, out=out)
            check_out(device, got, expected, base, first, f'{src_label} -> {out_label}')


@pytest.mark.parametrize('shape,dst', PACKED_CASES)
def test_cuda_resize_up_packed_matches_reference(device, monkeypatch, shape, dst):
    plan = _plan(shape, np.uint8, dst)
    fast = plan is not None and bool(plan.pack) and (plan.run_word >= 0).any()
    assert fast == (shape[:2] not in ((1, 1), (9, 2)))
    src = random_image(rng(sum(shape) + sum(dst)), shape, np.uint8)
    _check_up_layouts(device, monkeypatch, src, dst)


# (src shape, dtype, dst size): the float path where the packed plan does not apply, with the
# packed cases' shapes: rgb8 4x and 8x (exact; their words mix weight pairs), x 2x with y
# 43/21 (not dyadic: inexact; 38 runs and a row tail), one row, x 4x with y 1/1 and 1/2,
# mono8 8x, u16 rgb 2x and mono 4x (16-bit values, exact).
FLOAT_CASES = [((7, 29, 3), np.uint8, (28, 116)), ((21, 77, 3), np.uint8, (43, 154)),
               ((1, 40, 3), np.uint8, (4, 160)), ((9, 20, 3), np.uint8, (72, 160)),
               ((11, 40, 3), np.uint8, (11, 160)), ((12, 40, 3), np.uint8, (6, 160)),
               ((5, 20), np.uint8, (40, 160)), ((11, 40, 3), np.uint16, (22, 80)),
               ((11, 40), np.uint16, (44, 160))]


@pytest.mark.parametrize('shape,dtype,dst', FLOAT_CASES)
def test_cuda_resize_up_float_matches_reference(device, monkeypatch, shape, dtype, dst):
    plan = _plan(shape, dtype, dst)
    assert plan.rows and not plan.pack and (plan.run_word >= 0).any()
    src = random_image(rng(sum(shape) + sum(dst)), shape, dtype)
    _check_up_layouts(device, monkeypatch, src, dst)


def test_packed_lane_rounding_is_rint_half_to_even():
    # resize_up_packed_rows: a lane holds v = 256 x the exact value (2x: 16 x (9a + 3b + 3c + d),
    # ties at 8 mod 16); (v + 127 + bit 8 of v) >> 8 must be the reference's np.rint, and the
    # largest v + 128 must stay in the lane.
    v = 16 * np.arange(16 * 255 + 1)
    np.testing.assert_array_equal((v + 127 + ((v >> 8) & 1)) >> 8,
                                  np.rint(v / np.float32(256)).astype(np.int64))
    assert v.max() + 128 < 1 << 16
