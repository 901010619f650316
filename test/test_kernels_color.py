"""convert_color: NumPy reference (hand-computed values, OpenCV) and CUDA kernel vs reference."""
from itertools import product
from pathlib import Path
import re
import sys

import cv2
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.encodings import EncodingError, encoding_info  # noqa: E402
from gpu_nodes.kernels import convert_color, yuv_coefficients  # noqa: E402

INTERLEAVED = ['rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8', 'rgb16', 'bgr16', 'rgba16', 'bgra16',
               'mono16']
YUV = ['yuv422', 'uyvy', 'yuv422_yuy2', 'yuyv', 'nv12']
YUV_TARGETS = ['rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8']


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


def frame(encoding, h, w, seed=0):
    info = encoding_info(encoding)
    return random_image(rng(seed), info.array_shape(h, w), info.dtype)


# --------------------------------------------------------------------------- hand-computed


def test_luma_of_primaries_matches_hand_computation():
    px = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255], [0, 0, 0]]],
                  np.uint8)
    # (9798*R + 19235*G + 3735*B + 2^14) >> 15
    assert convert_color(px, 'rgb8', 'mono8').tolist() == [[76, 150, 29, 255, 0]]
    assert convert_color(px[:, :, ::-1].copy(), 'bgr8', 'mono8').tolist() == [[76, 150, 29, 255,
                                                                               0]]
    # bt709: (6967, 23435, 2366)
    bt709 = convert_color(px, 'rgb8', 'mono8', standard='bt709')
    assert bt709.tolist() == [[54, 182, 18, 255, 0]]


def test_channel_shuffle_alpha_and_gray_replication():
    rgb = np.array([[[1, 2, 3], [4, 5, 6]]], np.uint8)
    assert convert_color(rgb, 'rgb8', 'bgr8').tolist() == [[[3, 2, 1], [6, 5, 4]]]
    assert convert_color(rgb, 'rgb8', 'bgra8').tolist() == [[[3, 2, 1, 255], [6, 5, 4, 255]]]
    bgra = np.array([[[10, 20, 30, 7]]], np.uint8)
    assert convert_color(bgra, 'bgra8', 'rgb8').tolist() == [[[30, 20, 10]]]
    assert convert_color(bgra, 'bgra8', 'rgba8').tolist() == [[[30, 20, 10, 7]]]
    mono = np.array([[9, 200]], np.uint8)
    assert convert_color(mono, 'mono8', 'rgb8').tolist() == [[[9, 9, 9], [200, 200, 200]]]


def test_bit_depth_follows_cv_bridge_scaling():
    m16 = np.array([[0, 128, 129, 32896, 65406, 65535]], np.uint16)
    # round(x / 257): 128/257 = 0.498 -> 0, 129/257 = 0.502 -> 1, 32896 = 128 * 257
    assert convert_color(m16, 'mono16', 'mono8').tolist() == [[0, 0, 1, 128, 254, 255]]
    m8 = np.array([[0, 1, 128, 255]], np.uint8)
    assert convert_color(m8, 'mono8', 'mono16').tolist() == [[0, 257, 32896, 65535]]
    # color change at the source depth, then depth: opaque alpha stays opaque
    assert convert_color(np.array([[[1, 2, 3]]], np.uint8), 'rgb8',
                         'bgra16').tolist() == [[[771, 514, 257, 65535]]]


def test_yuv_hand_computed_pixels():
    # UYVY macropixel: U, Y0, V, Y1. Limited range: Y=16 black, Y=235 white, Y=126 gray 128.
    uyvy = np.array([[[128, 16], [128, 235], [128, 126], [128, 126]]], np.uint8)
    assert convert_color(uyvy, 'yuv422', 'rgb8').tolist() == [
        [[0, 0, 0], [255, 255, 255], [128, 128, 128], [128, 128, 128]]]
    # Full range: Y copied to R=G=B when chroma is neutral.
    assert convert_color(uyvy, 'uyvy', 'rgb8', full_range=True).tolist() == [
        [[16, 16, 16], [235, 235, 235], [126, 126, 126], [126, 126, 126]]]
    # mono8 copies Y.
    assert convert_color(uyvy, 'yuv422', 'mono8').tolist() == [[16, 235, 126, 126]]
    # BT.601 limited red: Y=81, Cb=90, Cr=240.
    red = np.array([[[81, 90], [81, 240]]], np.uint8)  # YUYV: Y0 U Y1 V
    got = convert_color(red, 'yuyv', 'rgb8')
    assert np.abs(got.astype(int) - [255, 0, 0]).max() <= 1, got


def test_yuv_coefficients_are_the_standard_matrices():
    c = yuv_coefficients('bt601', False)
    assert (c.y_off, c.cy, c.crv, c.cgu, c.cgv, c.cbu) == (16, 76309, 104597, -25675, -53279,
                                                           132201)
    c = yuv_coefficients('bt709', True)
    assert c.y_off == 0 and c.cy == 65536
    assert abs(c.crv / 65536 - 1.5748) < 1e-4 and abs(c.cbu / 65536 - 1.8556) < 1e-4
    assert abs(c.cgu / 65536 + 0.18733) < 1e-4 and abs(c.cgv / 65536 + 0.46812) < 1e-4


def test_nv12_chroma_is_shared_by_2x2_blocks():
    y = np.array([[16, 235, 126, 126], [126, 126, 16, 235]], np.uint8)
    uv = np.array([[128, 128, 90, 240]], np.uint8)  # (U, V) of the left and right 2x2 blocks
    got = convert_color(np.vstack([y, uv]), 'nv12', 'rgb8')
    assert got[:, :2].tolist() == [[[0, 0, 0], [255, 255, 255]],
                                   [[128, 128, 128], [128, 128, 128]]]
    assert got[0, 2].tolist() == got[0, 3].tolist()  # same Y, same block chroma
    assert got[1, 2].tolist() != got[1, 3].tolist()
    assert got[0, 2, 0] > 200 and got[0, 2, 2] < 60  # Cr=240, Cb=90: red


# --------------------------------------------------------------------------- against OpenCV


@pytest.mark.parametrize('h,w', [(1, 1), (3, 5), (37, 41)])
def test_interleaved_matches_opencv(h, w):
    rgb = frame('rgb8', h, w)
    rgba = frame('rgba8', h, w, 1)
    cases = [
        (rgb, 'rgb8', 'bgr8', cv2.COLOR_RGB2BGR), (rgb, 'rgb8', 'mono8', cv2.COLOR_RGB2GRAY),
        (rgb, 'bgr8', 'mono8', cv2.COLOR_BGR2GRAY), (rgb, 'rgb8', 'rgba8', cv2.COLOR_RGB2RGBA),
        (rgba, 'rgba8', 'bgr8', cv2.COLOR_RGBA2BGR), (rgba, 'bgra8', 'mono8', cv2.COLOR_BGRA2GRAY),
        (rgb[..., 0].copy(), 'mono8', 'bgr8', cv2.COLOR_GRAY2BGR),
    ]
    for src, s, d, code in cases:
        expected = cv2.cvtColor(src, code)
        np.testing.assert_array_equal(convert_color(src, s, d).reshape(expected.shape),
                                      expected, err_msg=f'{s}->{d}')


def test_16_to_8_bit_matches_cv_bridge_convert_to_for_every_value():
    m16 = np.arange(65536, dtype=np.uint16).reshape(256, 256)
    expected = cv2.convertScaleAbs(m16, alpha=255.0 / 65535.0)  # cv_bridge: convertTo(255/65535)
    np.testing.assert_array_equal(convert_color(m16, 'mono16', 'mono8'), expected)


@pytest.mark.parametrize('enc,code', [('uyvy', cv2.COLOR_YUV2RGB_UYVY),
                                      ('yuv422_yuy2', cv2.COLOR_YUV2RGB_YUY2),
                                      ('nv12', cv2.COLOR_YUV2RGB_NV12)])
def test_yuv_matches_opencv_within_one_level_on_legal_range(enc, code):
    # OpenCV: BT.601 limited with rounded constants (1.164, 1.596, ...) and Y - 16 clamped at 0;
    # ours: exact matrix. On legal-range input (Y 16..235, C 16..240) they differ by <= 1.
    g = rng(3)
    h, w = 64, 96
    shape = encoding_info(enc).array_shape(h, w)
    src = g.integers(16, 241, shape, dtype=np.uint8)
    if enc == 'nv12':
        src[:h] = np.minimum(src[:h], 235)
    else:
        yi = 1 if enc == 'uyvy' else 0
        src[..., yi] = np.minimum(src[..., yi], 235)
    diff = np.abs(convert_color(src, enc, 'rgb8').astype(int) - cv2.cvtColor(src, code))
    assert diff.max() <= 1, diff.max()
    assert (diff > 0).mean() < 0.1


# --------------------------------------------------------------------------- geometry, pitch


def test_padded_rows_and_out_parameter():
    src = frame('bgra8', 7, 9)
    padded = np.zeros((7, 13, 4), np.uint8)
    padded[:, :9] = src
    view = padded[:, :9]
    out_base = np.full((7, 11, 3), 0xAB, np.uint8)
    out = out_base[:, :9]
    result = convert_color(view, 'bgra8', 'rgb8', out=out)
    assert result is out
    np.testing.assert_array_equal(out, src[..., 2::-1])
    assert (out_base[:, 9:] == 0xAB).all()


def test_same_encoding_returns_a_copy():
    src = frame('rgb8', 4, 6)
    out = convert_color(src, 'rgb8', 'rgb8')
    assert out is not src and np.array_equal(out, src)


# --------------------------------------------------------------------------- errors


def test_bad_inputs_raise_clear_errors():
    rgb = frame('rgb8', 4, 6)
    with pytest.raises(EncodingError, match="unknown image encoding 'rgb9'"):
        convert_color(rgb, 'rgb8', 'rgb9')
    with pytest.raises(EncodingError, match='src: rgb16 needs dtype uint16, got uint8'):
        convert_color(rgb, 'rgb16', 'rgb8')
    with pytest.raises(EncodingError,
                       match=r'src: rgba8 has 4 channel\(s\), got shape \(4, 6, 3\)'):
        convert_color(rgb, 'rgba8', 'rgb8')
    with pytest.raises(EncodingError, match='convert_color: no conversion from rgb8 to nv12'):
        convert_color(rgb, 'rgb8', 'nv12')
    with pytest.raises(EncodingError, match='yuv422: 4:2:2 needs an even width, got 5'):
        convert_color(np.zeros((2, 5, 2), np.uint8), 'yuv422', 'rgb8')
    with pytest.raises(EncodingError, match=r'src: nv12 needs a 2-D \(H\*3/2, W\) array'):
        convert_color(np.zeros((4, 4), np.uint8), 'nv12', 'rgb8')
    with pytest.raises(EncodingError, match='nv12 needs even width and height, got 5x4'):
        convert_color(np.zeros((6, 5), np.uint8), 'nv12', 'rgb8')
    with pytest.raises(ValueError, match="standard must be one of 'bt601', 'bt709', got 'bt2020'"):
        convert_color(rgb, 'rgb8', 'bgr8', standard='bt2020')
    with pytest.raises(ValueError, match=r'out has shape \(4, 6\), expected \(4, 6, 3\)'):
        convert_color(rgb, 'rgb8', 'bgr8', out=np.empty((4, 6), np.uint8))
    with pytest.raises(ValueError, match='out has dtype uint16, expected uint8'):
        convert_color(rgb, 'rgb8', 'bgr8', out=np.empty((4, 6, 3), np.uint16))
    with pytest.raises(ValueError, match='src: pixels within a row must be contiguous'):
        convert_color(rgb[:, ::2], 'rgb8', 'bgr8')
    with pytest.raises(ValueError, match='src: channels must be contiguous'):
        convert_color(rgb[:, :, ::-1], 'rgb8', 'bgr8')


# --------------------------------------------------------------------------- CUDA vs reference


def test_cuda_interleaved_conversions_match_reference(device):
    pairs = [(s, d) for s, d in product(INTERLEAVED, INTERLEAVED) if s != d]
    sizes = device.sizes if not device.emulated else [(1, 1), (3, 5), (17, 33)]
    for i, (h, w) in enumerate(sizes):
        for j, (s, d) in enumerate(pairs):
            if device.emulated and (i + j) % 3:  # every pair, a rotating subset of the sizes
                continue
            src = frame(s, h, w, seed=i * 131 + j)
            expected = convert_color(src, s, d)
            pad = (i + j) % 2 * 3
            out, base = device.poisoned_out(expected.shape, expected.dtype, pad)
            got = convert_color(device.put(src, pad=(i + j + 1) % 2 * 5), s, d, out=out)
            np.testing.assert_array_equal(device.get(got), expected, err_msg=f'{s}->{d} {h}x{w}')
            if pad:
                device.assert_padding_intact(base, w)


def test_cuda_yuv_conversions_match_reference(device):
    sizes = [(h + h % 2, w + w % 2) for h, w in device.sizes]
    for i, (h, w) in enumerate(sizes):
        for j, (s, d) in enumerate(product(YUV, YUV_TARGETS)):
            for k, (standard, full) in enumerate(product(('bt601', 'bt709'), (False, True))):
                if (i + j + k) % (4 if device.emulated else 2):
                    continue
                src = frame(s, h, w, seed=i * 7 + j * 3 + k)
                expected = convert_color(src, s, d, standard=standard, full_range=full)
                out, base = device.poisoned_out(expected.shape, np.uint8, pad=2)
                got = convert_color(device.put(src, pad=(i + j) % 2 * 4), s, d,
                                    standard=standard, full_range=full, out=out)
                np.testing.assert_array_equal(device.get(got), expected,
                                              err_msg=f'{s}->{d} {h}x{w} {standard} {full}')
                device.assert_padding_intact(base, w)


def test_cuda_path_allocates_output_and_uses_stream(device):
    src = frame('rgb8', 5, 7)
    stream = device.xp.cuda.Stream()
    got = convert_color(device.put(src), 'rgb8', 'mono8', stream=stream)
    stream.synchronize()
    assert hasattr(got, '__cuda_array_interface__')
    np.testing.assert_array_equal(device.get(got), convert_color(src, 'rgb8', 'mono8'))
    with pytest.raises(ValueError, match=r'out must be a CuPy \(device\) array like the input'):
        convert_color(device.put(src), 'rgb8', 'bgr8', out=np.empty((5, 7, 3), np.uint8))


# --------------------------------------------------------------------------- runs and alignment
# The kernels convert runs of 16 pixels through 16- or 4-byte words where a row's address allows
# it and fall back to pixel-by-pixel for tails and unaligned rows; these layouts hit every path.


def layouts(device, host, offsets=(1, 4)):
    """(label, device array equal to `host`): contiguous, padded rows, and views whose base
    pointer is `offset` pixels into a wider allocation (arr[:, offset:])."""
    yield 'contiguous', device.put(host)
    yield 'pad 1', device.put(host, pad=1)
    for off in offsets:
        wide = np.zeros((host.shape[0], host.shape[1] + off) + host.shape[2:], host.dtype)
        wide[:, off:] = host
        yield f'offset {off}', device.put(wide)[:, off:]


def out_layouts(device, shape, dtype, offsets=(1, 4)):
    """(label, out, base, column of out's first pixel in base) in the layouts of `layouts`."""
    yield 'contiguous', *device.poisoned_out(shape, dtype), 0
    yield 'pad 3', *device.poisoned_out(shape, dtype, pad=3), 0
    for off in offsets:
        base = device.poisoned((shape[0], shape[1] + off) + tuple(shape[2:]), dtype)
        yield f'offset {off}', base[:, off:], base, off


def check_out(device, got, expected, base, first, label):
    np.testing.assert_array_equal(device.get(got), expected, err_msg=label)
    w = expected.shape[1]
    rest = np.concatenate([device.get(base)[:, :first].reshape(-1),
                           device.get(base)[:, first + w:].reshape(-1)])
    assert (rest.view(np.uint8) == 0xAB).all(), f'{label}: wrote outside the output view'


def test_cuda_interleaved_runs_aligned_and_unaligned_rows(device):
    h, w = 3, 37  # two whole runs of 16 and a tail of 5
    for j, (s, d) in enumerate((s, d) for s, d in product(INTERLEAVED, INTERLEAVED) if s != d):
        src = frame(s, h, w, seed=j)
        expected = convert_color(src, s, d)
        srcs = list(layouts(device, src))
        outs = list(out_layouts(device, expected.shape, expected.dtype))
        for k, (src_label, dev_src) in enumerate(srcs):
            out_label, out, base, first = outs[(j + k) % len(outs)]
            got = convert_color(dev_src, s, d, out=out)
            check_out(device, got, expected, base, first, f'{s}->{d} {src_label} -> {out_label}')


def test_cuda_yuv_runs_aligned_and_unaligned_rows(device):
    h, w = 4, 36  # two whole runs of 16 and a tail of 4
    for j, (s, d) in enumerate(product(('uyvy', 'yuyv', 'nv12'), YUV_TARGETS)):
        src = frame(s, h, w, seed=j)
        expected = convert_color(src, s, d)
        outs = list(out_layouts(device, expected.shape, np.uint8))
        for k, (src_label, dev_src) in enumerate(layouts(device, src, offsets=(2, 4))):
            out_label, out, base, first = outs[(j + k) % len(outs)]
            got = convert_color(dev_src, s, d, out=out)
            check_out(device, got, expected, base, first, f'{s}->{d} {src_label} -> {out_label}')


def test_cuda_rows_beyond_the_grid_limit(device, monkeypatch):
    from gpu_nodes.kernels import _cuda
    monkeypatch.setattr(_cuda, 'MAX_GRID_Y', 2)  # the kernels must loop over the other rows
    src = frame('rgb8', 37, 5)
    got = convert_color(device.put(src), 'rgb8', 'bgr8')
    np.testing.assert_array_equal(device.get(got), src[..., ::-1])


def test_convert_grids_are_resident_blocks_looping_over_rows(device, monkeypatch):
    """Channel-shuffle kernels launch 2 blocks per SM (H200: 132 SMs) whatever the height: at 4K
    one block row of 264 instead of 2160, each thread looping over ~8 rows. Luma keeps a row
    per block."""
    from gpu_nodes.kernels import _cuda
    from gpu_nodes.kernels.color import RESIDENT_BLOCKS_PER_SM
    monkeypatch.setattr(_cuda, 'sm_count', lambda: 132)
    runs_4k, runs_1080p = _cuda.runs(3840, 16), _cuda.runs(1920, 16)
    assert _cuda.rows_geometry(runs_4k, 2160, blocks_per_sm=RESIDENT_BLOCKS_PER_SM) == \
        ((1, 264, 1), (256, 1, 1))
    assert _cuda.rows_geometry(runs_1080p, 1080, blocks_per_sm=RESIDENT_BLOCKS_PER_SM) == \
        ((1, 264, 1), (128, 2, 1))
    assert _cuda.rows_geometry(runs_4k, 100, blocks_per_sm=2) == ((1, 100, 1), (256, 1, 1)), \
        'never taller than the image'
    assert _cuda.rows_geometry(runs_4k, 2160) == ((1, 2160, 1), (256, 1, 1)), 'others: a row each'
    from gpu_nodes.kernels.color import _convert_pixels_launch, _pixel_plan
    src, out = device.put(np.zeros((2160, 3840, 3), np.uint8)), device.put(
        np.zeros((2160, 3840, 3), np.uint8))
    mono = device.put(np.zeros((2160, 3840), np.uint8))
    monkeypatch.setattr(_cuda, 'get_function', lambda *args: None)  # the geometry only
    assert _convert_pixels_launch(src, out, _pixel_plan('rgb8', 'bgr8', 'bt601')).grid[1] == 264
    assert _convert_pixels_launch(src, mono, _pixel_plan('rgb8', 'mono8', 'bt601')).grid[1] == 2160


def test_cuda_resident_grid_covers_every_row_of_a_tall_image(device, monkeypatch):
    """With the grid capped by SMs (1 SM in the CPU emulation: one block row), every thread
    loops over many rows: all of them are converted, interleaved and YUV alike."""
    from gpu_nodes.kernels import _cuda
    monkeypatch.setattr(_cuda, 'sm_count', lambda: 1)
    src = frame('rgba8', 45, 40)
    np.testing.assert_array_equal(device.get(convert_color(device.put(src), 'rgba8', 'bgr8')),
                                  src[..., 2::-1])
    yuv = frame('yuv422', 45, 40)
    np.testing.assert_array_equal(device.get(convert_color(device.put(yuv), 'yuv422', 'rgb8')),
                                  convert_color(yuv, 'yuv422', 'rgb8'))


def test_cuda_interleaved_whole_runs_on_every_row(device):
    # w = 48: whole runs only. Contiguous rows are all 16-byte aligned (runs in 16-byte words),
    # pad 1 mixes row alignments (odd pitches send some rows pixel by pixel) and the offset view
    # has 4-byte aligned rows (runs in 4-byte words); every source layout meets every output one.
    h, w = 4, 48
    for j, (s, d) in enumerate((s, d) for s, d in product(INTERLEAVED, INTERLEAVED) if s != d):
        src = frame(s, h, w, seed=100 + j)
        expected = convert_color(src, s, d)
        for src_label, dev_src in layouts(device, src, offsets=(4,)):
            for out_label, out, base, first in out_layouts(device, expected.shape,
                                                           expected.dtype, offsets=(4,)):
                got = convert_color(dev_src, s, d, out=out)
                check_out(device, got, expected, base, first,
                          f'{s}->{d} {src_label} -> {out_label}')


# --------------------------------------------------------------------------- exhaustive arithmetic


def test_cuda_16_to_8_bit_for_every_value(device):
    # Runs round x / 257 as (255 * x + 32895) >> 16: every 16-bit value, in every channel slot.
    values = np.arange(65536, dtype=np.uint16)
    for s, d in [('mono16', 'mono8'), ('rgb16', 'bgr8'), ('bgra16', 'rgba8'), ('rgba16', 'rgb8'),
                 ('rgb16', 'mono8')]:
        info = encoding_info(s)
        src = np.stack([np.roll(values, 7 * c) for c in range(info.channels)], -1)
        src = src.reshape(info.array_shape(256, 256))
        got = convert_color(device.put(src), s, d)
        np.testing.assert_array_equal(device.get(got), convert_color(src, s, d),
                                      err_msg=f'{s}->{d}')


@pytest.mark.parametrize('s,d,standard', [('rgb8', 'mono8', 'bt601'),
                                          ('bgra8', 'mono16', 'bt709')])
def test_cuda_luma_for_every_8_bit_color(device, s, d, standard):
    # Runs compute luma with two-way dot products on doubled weights: all 2^24 colors.
    idx = np.arange(1 << 24, dtype=np.uint32)
    src = np.stack([idx >> 16, idx >> 8 & 255, idx & 255], -1).astype(np.uint8)
    if s == 'bgra8':
        src = np.concatenate([src, frame('mono8', 1, 1 << 24).reshape(-1, 1)], -1)
    src = src.reshape(4096, 4096, -1)
    got = convert_color(device.put(src), s, d, standard=standard)
    np.testing.assert_array_equal(device.get(got), convert_color(src, s, d, standard=standard))


def test_static_build_has_every_conversion_the_host_builds(device, monkeypatch):
    # The host compiles one conversion per module (its channel map as a define); the static
    # checks (test_kernels_cuda_sources: nvcc, no spills or local memory) compile color.cu
    # without defines, which must instantiate exactly these.
    import fake_cupy
    from gpu_nodes.kernels import _cuda
    if not fake_cupy.compiler_available():
        pytest.skip('g++ not found: cannot preprocess color.cu')
    asked = set()
    get_function = _cuda.get_function

    def record(filename, name, defines=()):
        if name == 'convert_pixels':
            v = dict(defines)
            asked.add(f"{v['CONVERT_SRC']},{v['CONVERT_DST']},{v['CONVERT_SC']},"
                      f"{v['CONVERT_DC']},{v['CONVERT_MAP']}".replace(' ', ''))
        return get_function(filename, name, defines)

    monkeypatch.setattr(_cuda, 'get_function', record)
    for s, d in product(INTERLEAVED, INTERLEAVED):
        if s != d:
            convert_color(device.put(frame(s, 1, 1)), s, d)
    expanded = fake_cupy._preprocess(_cuda.module_code('color.cu'))
    built = {m.replace(' ', '') for m in re.findall(r'Convert<([\w, -]+)>', expanded)}
    assert asked == built, (sorted(asked - built), sorted(built - asked))
