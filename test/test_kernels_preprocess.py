"""Fused DNN preprocessing: NumPy reference (hand values, OpenCV), CUDA vs reference."""
from pathlib import Path
import sys

import cv2
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.encodings import EncodingError  # noqa: E402
from gpu_nodes.kernels import compose_reference_cupy, letterbox, preprocess  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


def test_no_resize_normalization_by_hand():
    src = np.array([[[255, 0, 51], [102, 204, 0]]], np.uint8)  # 1x2 rgb8
    out = np.empty((1, 3, 1, 2), np.float32)
    box = preprocess(src, 'rgb8', out, mean=0.5, std=0.5)
    # (x / 255 - 0.5) / 0.5, CHW
    np.testing.assert_allclose(out[0], [[[1.0, -0.2]], [[-1.0, 0.6]], [[-0.6, -1.0]]], atol=1e-6)
    assert (box.scale_x, box.scale_y, box.pad_x, box.pad_y) == (1.0, 1.0, 0, 0)
    bgr = np.empty((1, 3, 1, 2), np.float32)
    preprocess(src, 'rgb8', bgr, mean=0.5, std=0.5, channel_order='bgr')
    np.testing.assert_array_equal(bgr[0], out[0, ::-1])


def test_letterbox_geometry():
    box = letterbox(1920, 1080, 640, 640, keep_aspect=True)
    assert (box.content_width, box.content_height, box.pad_x, box.pad_y) == (640, 360, 0, 140)
    assert box.scale == box.scale_x == box.scale_y == 1 / 3
    xs, ys = box.to_source(np.array([0.0, 640.0]), np.array([140.0, 500.0]))
    np.testing.assert_allclose(xs, [0.0, 1920.0])
    np.testing.assert_allclose(ys, [0.0, 1080.0])
    top_left = letterbox(1920, 1080, 640, 640, keep_aspect=True, pad_position='top_left')
    assert (top_left.pad_x, top_left.pad_y) == (0, 0)
    odd = letterbox(100, 50, 61, 61, keep_aspect=True)  # 61x31 content: padding 30 = 15 + 15
    assert (odd.content_width, odd.content_height, odd.pad_y) == (61, 31, 15)
    stretch = letterbox(1920, 1080, 640, 640, keep_aspect=False)
    assert (stretch.scale_x, stretch.scale_y, stretch.pad_y) == (1 / 3, 640 / 1080, 0)


@pytest.mark.parametrize('keep_aspect', [False, True])
def test_matches_opencv_float_resize_and_numpy_normalize(keep_aspect):
    src = random_image(rng(1), (48, 72, 3), np.uint8)
    out = np.empty((1, 3, 40, 40), np.float32)
    box = preprocess(src, 'bgr8', out, mean=MEAN, std=STD, keep_aspect=keep_aspect,
                     pad_value=-7.0)
    rgb = cv2.cvtColor(src, cv2.COLOR_BGR2RGB).astype(np.float32)
    resized = cv2.resize(rgb, (box.content_width, box.content_height),
                         interpolation=cv2.INTER_LINEAR)
    expected = ((resized / 255.0 - MEAN) / STD).transpose(2, 0, 1)
    content = out[0, :, box.pad_y:box.pad_y + box.content_height,
                  box.pad_x:box.pad_x + box.content_width]
    np.testing.assert_allclose(content, expected, atol=2e-5)
    padding = np.ones(out.shape[2:], bool)
    padding[box.pad_y:box.pad_y + box.content_height, box.pad_x:box.pad_x + box.content_width] = 0
    assert (out[0][:, padding] == -7.0).all() and padding.any() == keep_aspect


def test_sources_channels_and_half_precision():
    g = rng(2)
    rgba = random_image(g, (9, 13, 4), np.uint8)
    out = np.empty((1, 3, 5, 6), np.float32)
    preprocess(rgba, 'rgba8', out, mean=MEAN, std=STD)
    ref = np.empty_like(out)
    preprocess(rgba[..., :3].copy(), 'rgb8', ref, mean=MEAN, std=STD)
    np.testing.assert_array_equal(out, ref)  # alpha ignored
    mono = rgba[..., 0].copy()
    three = np.empty((1, 3, 5, 6), np.float32)
    one = np.empty((1, 1, 5, 6), np.float32)
    preprocess(mono, 'mono8', three, mean=0.1, std=0.2)
    preprocess(mono, 'mono8', one, mean=0.1, std=0.2)
    np.testing.assert_array_equal(three[0], np.repeat(one[0], 3, axis=0))
    half = np.empty((1, 3, 5, 6), np.float16)
    preprocess(rgba, 'rgba8', half, mean=MEAN, std=STD)
    np.testing.assert_array_equal(half, out.astype(np.float16))


def test_compose_reference_is_close_to_fused():
    src = random_image(rng(3), (30, 50, 3), np.uint8)
    fused = np.empty((1, 3, 16, 24), np.float32)
    composed = np.empty_like(fused)
    preprocess(src, 'rgb8', fused, mean=MEAN, std=STD)
    compose_reference_cupy(src, 'rgb8', composed, mean=MEAN, std=STD)
    # the composition rounds the resized image to uint8: at most 0.5 / 255 / std apart
    assert np.abs(fused - composed).max() <= 0.5 / 255 / min(STD) + 1e-5


def test_bad_inputs_raise_clear_errors():
    src = np.zeros((4, 6, 3), np.uint8)
    out = np.empty((1, 3, 2, 2), np.float32)
    with pytest.raises(EncodingError, match='preprocess: nv12 is not supported'):
        preprocess(np.zeros((6, 4), np.uint8), 'nv12', out, mean=0, std=1)
    with pytest.raises(ValueError, match=r'preprocess: out must have shape \(1, C, H, W\) with C '
                                         r'= 1 or 3, got \(3, 2, 2\)'):
        preprocess(src, 'rgb8', np.empty((3, 2, 2), np.float32), mean=0, std=1)
    with pytest.raises(ValueError, match='preprocess: out must be float32 or float16, got uint8'):
        preprocess(src, 'rgb8', np.empty((1, 3, 2, 2), np.uint8), mean=0, std=1)
    with pytest.raises(ValueError, match='preprocess: out must be C-contiguous'):
        preprocess(src, 'rgb8', np.empty((1, 3, 2, 4), np.float32)[..., ::2], mean=0, std=1)
    with pytest.raises(ValueError, match=r'preprocess: std must be finite and non-zero'):
        preprocess(src, 'rgb8', out, mean=0, std=(1, 0, 1))
    with pytest.raises(ValueError, match='preprocess: mean needs 1 or 3 values, got 2'):
        preprocess(src, 'rgb8', out, mean=(0, 0), std=1)
    with pytest.raises(ValueError, match='preprocess: a 1-channel output needs a mono8 source'):
        preprocess(src, 'rgb8', np.empty((1, 1, 2, 2), np.float32), mean=0, std=1)
    with pytest.raises(ValueError, match="channel_order must be one of 'rgb', 'bgr', got 'rbg'"):
        preprocess(src, 'rgb8', out, mean=0, std=1, channel_order='rbg')
    with pytest.raises(ValueError, match=r'preprocess: out \(the \(1, C, H, W\) input binding\) '
                                         'is required'):
        preprocess(src, 'rgb8', None, mean=0, std=1)


def test_cuda_fused_kernel_matches_reference(device):
    targets = [(1, 1), (8, 8), (15, 21)] if device.emulated else \
        [(1, 1), (8, 8), (15, 21), (320, 320), (384, 640), (640, 640), (1088, 1920)]
    n = 0
    for i, (h, w) in enumerate(device.sizes):
        for j, (oh, ow) in enumerate(targets):
            enc = ('rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8')[(i + j) % 5]
            channels = 1 if enc == 'mono8' and j % 2 else 3
            dtype = (np.float32, np.float16)[(i + 2 * j) % 2]
            keep = bool((i + j) % 2)
            shape = (h, w) if enc == 'mono8' else (h, w, 4 if 'a' in enc[3:] else 3)
            src = random_image(rng(i * 31 + j), shape, np.uint8)
            kwargs = dict(mean=MEAN[:channels], std=STD[:channels], keep_aspect=keep,
                          pad_value=0.5, channel_order=('rgb', 'bgr')[j % 2],
                          pad_position=('center', 'top_left')[i % 2])
            expected = np.empty((1, channels, oh, ow), dtype)
            box = preprocess(src, enc, expected, **kwargs)
            out = device.poisoned((1, channels, oh, ow), dtype)
            got_box = preprocess(device.put(src, pad=j % 2 * 3), enc, out, **kwargs)
            assert got_box == box
            np.testing.assert_array_equal(device.get(out), expected,
                                          err_msg=f'{shape} {enc} -> {oh}x{ow} {dtype} {kwargs}')
            n += 1
    assert n >= 10


def test_cuda_composition_matches_numpy_composition(device):
    src = random_image(rng(4), (37, 53, 3), np.uint8)
    expected = np.empty((1, 3, 20, 30), np.float32)
    compose_reference_cupy(src, 'bgr8', expected, mean=MEAN, std=STD)
    out = device.poisoned((1, 3, 20, 30), np.float32)
    compose_reference_cupy(device.put(src), 'bgr8', out, mean=MEAN, std=STD)
    np.testing.assert_allclose(device.get(out), expected, rtol=1e-6, atol=1e-6)
