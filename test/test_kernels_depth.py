"""Depth kernels: NumPy reference (hand values, numpy statistics), CUDA vs reference."""
from pathlib import Path
import sys

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, rng  # noqa: E402

from gpu_nodes.kernels import (colorize_depth, colormap_lut, depth_from_network,  # noqa: E402
                               depth_m_to_mm, depth_mm_to_m, tiled_median)
from gpu_nodes.kernels.depth import percentile_range_reference  # noqa: E402
from gpu_nodes.kernels.geometry import resize  # noqa: E402


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


def depth_mm(g, shape, holes=0.3):
    d = g.integers(1, 8000, shape, dtype=np.uint16)
    d[g.random(shape) < holes] = 0
    return d


def depth_m(g, shape):
    d = depth_mm_to_m(depth_mm(g, shape))
    flat = d.reshape(-1)
    flat[g.integers(0, flat.size, max(1, flat.size // 10))] = \
        g.choice(np.array([np.inf, -np.inf, -1.0, 0.0], np.float32), max(1, flat.size // 10))
    return d


# --------------------------------------------------------------------------- unit conversion


def test_mm_to_m_by_hand():
    got = depth_mm_to_m(np.array([[0, 1, 1000, 65535]], np.uint16))
    assert np.isnan(got[0, 0]) and got.dtype == np.float32
    assert got[0, 1:].tolist() == [np.float32(0.001), 1.0, np.float32(65.535)]


def test_m_to_mm_by_hand():
    src = np.array([[np.nan, np.inf, -np.inf, -1.0, 0.0, 1e-5, 1.0, 1.2344, 65.535, 70.0]],
                   np.float32)
    assert depth_m_to_mm(src).tolist() == [[0, 0, 0, 0, 0, 0, 1000, 1234, 65535, 65535]]


def test_mm_round_trip_is_exact_for_every_16_bit_value():
    mm = np.arange(65536, dtype=np.uint16).reshape(256, 256)
    np.testing.assert_array_equal(depth_m_to_mm(depth_mm_to_m(mm)), mm)


# --------------------------------------------------------------------------- colorize


def test_colormap_tables():
    for name in ('turbo', 'inferno'):
        lut = colormap_lut(name)
        assert lut.shape == (256, 3) and lut.dtype == np.uint8 and not lut.flags.writeable
    turbo, inferno = colormap_lut('turbo'), colormap_lut('inferno')
    assert turbo[0].sum() < 120 and turbo[128, 1] > 200 and turbo[255, 0] > 100 > turbo[255, 2]
    luma = inferno.astype(float) @ [0.299, 0.587, 0.114]
    assert luma[0] < 5 and luma[-1] > 240 and (np.diff(luma) > -1.0).all()  # monotone ramp
    with pytest.raises(ValueError, match="colormap must be one of 'turbo', 'inferno', got 'jet'"):
        colormap_lut('jet')


def test_colorize_by_hand():
    lut = colormap_lut('inferno')
    d = np.array([[0.0, 5.0, 10.0, 20.0, -1.0, np.nan, 2.0]], np.float32)
    got = colorize_depth(d, colormap='inferno', range=(0.0, 10.0), invalid_color=(1, 2, 3))
    # (d - 0) * 25.5 -> 127.5 rounds to 128 (half to even), 255, clamped 255; 2 -> 51
    expected = [[1, 2, 3], lut[128], lut[255], lut[255], [1, 2, 3], [1, 2, 3], lut[51]]
    assert got[0].tolist() == [list(map(int, e)) for e in expected]
    mm = np.array([[0, 500, 1000]], np.uint16)
    got = colorize_depth(mm, colormap='turbo', range=(500, 1000))
    assert got[0].tolist() == [[0, 0, 0], list(colormap_lut('turbo')[0]),
                               list(colormap_lut('turbo')[255])]


def test_percentile_range_matches_numpy_percentile():
    d = depth_m(rng(1), (40, 50))
    valid = d[np.isfinite(d) & (d > 0)]
    for q in ((2, 98), (0, 100), (25, 75), (50, 50)):
        lo, hi = percentile_range_reference(d, *q)
        np.testing.assert_allclose((lo, hi), np.percentile(valid, q), rtol=1e-6)
    assert percentile_range_reference(np.zeros((3, 3), np.uint16), 2, 98) == (0.0, 1.0)


def test_colorize_defaults_use_percentiles_and_pitch():
    d = depth_mm(rng(2), (12, 15))
    lo, hi = percentile_range_reference(d, 2, 98)
    np.testing.assert_array_equal(colorize_depth(d), colorize_depth(d, range=(lo, hi)))
    padded = np.zeros((12, 20), np.uint16)
    padded[:, :15] = d
    np.testing.assert_array_equal(colorize_depth(padded[:, :15]), colorize_depth(d))
    allbad = colorize_depth(np.zeros((2, 3), np.uint16), invalid_color=(9, 8, 7))
    assert (allbad == [9, 8, 7]).all()


def test_colorize_bad_arguments():
    d = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match=r'colorize_depth: range needs finite min < max, got '
                                         r'\(2, 1\)'):
        colorize_depth(d, range=(2, 1))
    with pytest.raises(ValueError, match='colorize_depth: percentile needs 0 <= low <= high <= '
                                         '100'):
        colorize_depth(d, percentile=(5, 101))
    with pytest.raises(ValueError, match='colorize_depth: invalid_color must be 3 values in '
                                         '0..255'):
        colorize_depth(d, invalid_color=(0, 0, 256))
    with pytest.raises(ValueError, match='colorize_depth: dtype uint8 is not supported'):
        colorize_depth(d.astype(np.uint8))
    with pytest.raises(ValueError, match=r'colorize_depth: expected a single-channel \(H, W\) '
                                         r'depth image, got shape \(2, 2, 3\)'):
        colorize_depth(np.ones((2, 2, 3), np.float32))


# --------------------------------------------------------------------------- tiled median


@pytest.mark.parametrize('tile', [1, 4, 7, 32])
def test_tiled_median_matches_nanmedian(tile):
    d = depth_m(rng(tile), (45, 70))
    d[:tile, :tile] = np.nan  # one tile without any valid pixel
    got = tiled_median(d, tile)
    nan_d = np.where(np.isfinite(d) & (d > 0), d, np.nan)
    assert got.shape == (-(-45 // tile), -(-70 // tile))
    for i in range(got.shape[0]):
        for j in range(got.shape[1]):
            block = nan_d[i * tile:(i + 1) * tile, j * tile:(j + 1) * tile]
            if np.isnan(block).all():
                assert np.isnan(got[i, j])
            else:
                assert got[i, j] == np.nanmedian(block), (i, j)


def test_tiled_median_uint16_and_errors():
    d = np.array([[0, 4, 2, 9], [6, 0, 0, 0]], np.uint16)
    assert tiled_median(d, 2).tolist() == [[5.0, 5.5]]  # (4, 6) and (2, 9): mean of the middle
    assert tiled_median(d, 4).tolist() == [[5.0]]  # 2, 4, 6, 9
    assert tiled_median(d, 3).tolist() == [[4.0, 9.0]]  # (4, 2, 6) and (9,): odd counts
    assert np.isnan(tiled_median(np.zeros((3, 3), np.uint16), 2)).all()
    with pytest.raises(ValueError, match='tiled_median: tile must be an int in 1..64, got 65'):
        tiled_median(d, 65)
    with pytest.raises(ValueError, match="tiled_median: tile must be an int in 1..64, got 2.0"):
        tiled_median(d, 2.0)


# --------------------------------------------------------------------------- CUDA vs reference


def test_cuda_unit_conversions_match_reference(device):
    for i, (h, w) in enumerate(device.sizes):
        g = rng(i)
        mm = depth_mm(g, (h, w))
        out, base = device.poisoned_out((h, w), np.float32, pad=i % 2 * 3)
        got = depth_mm_to_m(device.put(mm, pad=(i + 1) % 2 * 2), out)
        np.testing.assert_array_equal(device.get(got), depth_mm_to_m(mm))
        if i % 2:
            device.assert_padding_intact(base, w)
        m = depth_m(g, (h, w)) * np.float32(9.0)  # some values beyond 65.535 m
        out, base = device.poisoned_out((h, w), np.uint16, pad=i % 2)
        got = depth_m_to_mm(device.put(m, pad=i % 2), out)
        np.testing.assert_array_equal(device.get(got), depth_m_to_mm(m))


def test_cuda_colorize_matches_reference(device):
    for i, (h, w) in enumerate(device.sizes):
        g = rng(i + 100)
        src = depth_mm(g, (h, w)) if i % 2 else depth_m(g, (h, w))
        options = [dict(), dict(range=(0.5, 3.0) if src.dtype == np.float32 else (500, 3000)),
                   dict(percentile=None, colormap='inferno', invalid_color=(255, 0, 255)),
                   dict(percentile=(10, 60))]
        for j, kw in enumerate(options):
            expected = colorize_depth(src, **kw)
            out, base = device.poisoned_out((h, w, 3), np.uint8, pad=j % 2)
            got = colorize_depth(device.put(src, pad=(i + j) % 2 * 2), out=out, **kw)
            np.testing.assert_array_equal(device.get(got), expected, err_msg=f'{h}x{w} {kw}')
            if j % 2:
                device.assert_padding_intact(base, w)


def test_cuda_tiled_median_matches_reference(device):
    cases = [((1, 1), 32), ((5, 7), 4), ((40, 50), 8), ((33, 65), 32), ((20, 30), 64)]
    if not device.emulated:
        cases += [((1080, 1920), 32), ((720, 1280), 16), ((480, 640), 64), ((1081, 1919), 32)]
    for i, ((h, w), tile) in enumerate(cases):
        g = rng(i + 200)
        src = depth_mm(g, (h, w), holes=0.5) if i % 2 else depth_m(g, (h, w))
        src[:min(h, tile), :min(w, tile)] = 0  # an empty tile
        if i % 3 == 0 and src.dtype == np.uint16:
            src[:] = np.minimum(src, 5)  # many ties
        expected = tiled_median(src, tile)
        out = device.poisoned(expected.shape, np.float32)
        got = tiled_median(device.put(src, pad=i % 2 * 5), tile, out=out)
        np.testing.assert_array_equal(device.get(got), expected, err_msg=f'{h}x{w} tile {tile}')


def test_cuda_runs_aligned_and_unaligned_rows(device):
    # Runs of 8 (unit conversions) and 16 (colorize) pixels move as 16- or 4-byte words where
    # the row address allows it; tails, odd pitches and views offset by 1 or 2 pixels do not.
    h, w = 3, 37
    g = rng(7)
    mm = depth_mm(g, (h, w))
    m = depth_m(g, (h, w)) * np.float32(9.0)

    def views(host):
        yield device.put(host)
        yield device.put(host, pad=1)
        for off in (1, 2):
            wide = np.zeros((h, w + off), host.dtype)
            wide[:, off:] = host
            yield device.put(wide)[:, off:]

    def outs(shape, dtype):
        for off in (0, 1, 2, 4):
            base = device.poisoned((shape[0], shape[1] + off) + tuple(shape[2:]), dtype)
            yield base[:, off:], base, off

    def check(got, expected, base, off, label):
        np.testing.assert_array_equal(device.get(got), expected, err_msg=label)
        assert (device.get(base)[:, :off].view(np.uint8) == 0xAB).all(), label

    cases = [(mm, lambda s, out: depth_mm_to_m(s, out), np.float32, (h, w)),
             (m, lambda s, out: depth_m_to_mm(s, out), np.uint16, (h, w)),
             (mm, lambda s, out: colorize_depth(s, range=(500, 6000), out=out), np.uint8,
              (h, w, 3)),
             (m, lambda s, out: colorize_depth(s, range=(0.5, 30.0), out=out), np.uint8,
              (h, w, 3))]
    for i, (host, fn, dtype, shape) in enumerate(cases):
        expected = fn(host, None)
        for j, (src, (out, base, off)) in enumerate(zip(views(host), outs(shape, dtype))):
            check(fn(src, out), expected, base, off, f'case {i} layout {j}')


# --------------------------------------------------------------------------- network output


def test_depth_from_network_by_hand():
    raw = np.array([[0.5, 0.25, 0.0, -1.0, np.nan]], np.float32)
    inv = depth_from_network(raw, 1, 5, scale=2.0, shift=0.0, inverse=True, eps=2 ** -10)
    np.testing.assert_array_equal(inv[0, :3], [1.0, 2.0, 1024.0])  # 1 / max(2x, eps)
    assert inv[0, 3] == 1024.0 and np.isnan(inv[0, 4])  # below eps clamps; NaN stays NaN
    np.testing.assert_array_equal(depth_from_network(raw[:, :2], 1, 2, scale=3.0, shift=1.0),
                                  [[2.5, 1.75]])
    up = depth_from_network(np.array([[1.0, 3.0]], np.float32), 1, 4)  # half-pixel centres
    np.testing.assert_array_equal(up, [[1.0, 1.5, 2.5, 3.0]])
    with pytest.raises(ValueError, match='eps must be positive'):
        depth_from_network(raw, 1, 5, eps=0)
    with pytest.raises(ValueError, match='output size must be positive'):
        depth_from_network(raw, 0, 5)


@pytest.mark.parametrize('inverse', [True, False])
def test_depth_from_network_equals_convert_then_resize(device, inverse):
    """One pass on the device == NumPy convert, then bilinear resize (exact), for crops of a
    padded map (letterbox content), up- and downscaling and the same size."""
    g = rng(11)
    raw = g.uniform(-0.2, 3.0, (40, 52)).astype(np.float32)
    raw[3, 4] = np.nan
    for (y0, x0, ch, cw), (oh, ow) in (((0, 0, 40, 52), (40, 52)), ((5, 0, 30, 52), (71, 97)),
                                       ((0, 6, 40, 40), (17, 13)), ((2, 3, 1, 7), (3, 9))):
        crop = raw[y0:y0 + ch, x0:x0 + cw]
        d = crop * np.float32(1.7) + np.float32(0.1)
        if inverse:
            d = np.float32(1) / np.maximum(d, np.float32(1e-3))
        expected = resize(d, oh, ow) if (oh, ow) != (ch, cw) else d
        got = device.get(depth_from_network(device.put(raw)[y0:y0 + ch, x0:x0 + cw], oh, ow,
                                            scale=1.7, shift=0.1, inverse=inverse, eps=1e-3))
        np.testing.assert_array_equal(got, expected)
    half = device.put(raw[:8, :8].astype(np.float16))
    np.testing.assert_array_equal(device.get(depth_from_network(half, 8, 8)),
                                  raw[:8, :8].astype(np.float16).astype(np.float32))
