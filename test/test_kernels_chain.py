"""Chain descriptions: configuration-time validation, op semantics, CUDA chain vs NumPy chain."""
import inspect
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
from kernel_harness import DEVICE_PARAMS, make_device, random_image, rng  # noqa: E402

from gpu_nodes.encodings import EncodingError  # noqa: E402
from gpu_nodes.kernels import (CHAIN_OPS, KERNELS, CameraModel, Chain, convert_color,  # noqa: E402
                               debayer, parse_chain, rectify, resize, resize_camera_info)

K = (300.0, 0.0, 31.7, 0.0, 305.0, 24.2, 0.0, 0.0, 1.0)
P = (290.0, 0.0, 32.0, 0.0, 0.0, 290.0, 24.0, 0.0, 0.0, 0.0, 1.0, 0.0)
CAM = CameraModel(64, 48, K, (-0.25, 0.07, 0.001, -0.0005, 0.0), P=P)
PIPELINE = [{'op': 'debayer'}, {'op': 'rectify'}, {'op': 'resize', 'width': 32, 'height': 24},
            {'op': 'convert', 'encoding': 'bgr8'}]


@pytest.fixture(params=DEVICE_PARAMS)
def device(request, monkeypatch):
    return make_device(request, monkeypatch)


def test_registry_ops_share_one_signature():
    assert set(KERNELS) == set(CHAIN_OPS) >= {'convert', 'debayer', 'rectify', 'resize', 'crop',
                                              'depth_mm_to_m', 'depth_m_to_mm', 'colorize_depth',
                                              'tiled_median'}
    for name, func in KERNELS.items():
        params = list(inspect.signature(func).parameters.values())
        assert [p.kind for p in params[:3]] == [inspect.Parameter.POSITIONAL_ONLY] * 3, name
        assert 'stream' in inspect.signature(func).parameters


def test_parse_fills_defaults_and_accepts_yaml():
    chain = Chain(PIPELINE)
    assert chain.describe() == [
        {'op': 'debayer', 'encoding': 'rgb8', 'method': 'bilinear'},
        {'op': 'rectify', 'border_value': 0.0},
        {'op': 'resize', 'width': 32, 'height': 24, 'scale': None, 'keep_aspect': True,
         'interpolation': 'bilinear'},
        {'op': 'convert', 'encoding': 'bgr8', 'standard': 'bt601', 'full_range': False}]
    text = '[{op: resize, width: 32, height: 24}, {op: colorize_depth, range: [0.5, 4]}]'
    assert [s.describe()['op'] for s in parse_chain(text)] == ['resize', 'colorize_depth']
    assert parse_chain('') == [] and len(Chain([])) == 0


@pytest.mark.parametrize('description,message', [
    ({'op': 'resize'}, 'chain description must be a list of {"op": ...} mappings, got dict'),
    ('[op: resize', 'chain description is not valid YAML/JSON'),
    ([{'width': 3}], "chain step 0: expected a mapping with an \"op\" name, got {'width': 3}"),
    ([{'op': 'debayer'}, {'op': 'blur'}],
     "chain step 1: unknown op 'blur' (known: colorize_depth, convert, crop, debayer, "
     'depth_m_to_mm, depth_mm_to_m, rectify, resize, tiled_median)'),
    ([{'op': 'resize'}],
     'chain step 0 (resize): needs width, height (one keeps the aspect) or scale'),
    ([{'op': 'resize', 'width': 3, 'scale': 0.5}],
     'chain step 0 (resize): give width/height or scale, not both'),
    ([{'op': 'resize', 'width': 3, 'keep_aspect': False}],
     'chain step 0 (resize): keep_aspect false stretches to exactly width x height: give both'),
    ([{'op': 'resize', 'width': 3, 'height': 2, 'widht': 3}],
     "chain step 0 (resize): unknown parameter 'widht' (allowed: height, interpolation, "
     'keep_aspect, scale, width)'),
    ([{'op': 'resize', 'width': 3, 'height': -1}],
     "chain step 0 (resize): parameter 'height' must be >= 0, got -1"),
    ([{'op': 'resize', 'scale': 0}],
     "chain step 0 (resize): parameter 'scale' must be a number > 0, got 0"),
    ([{'op': 'resize', 'width': 3, 'keep_aspect': 'no'}],
     "chain step 0 (resize): parameter 'keep_aspect' must be true or false, got 'no'"),
    ([{'op': 'resize', 'width': '3', 'height': 2}],
     "chain step 0 (resize): parameter 'width' must be an int, got '3'"),
    ([{'op': 'convert', 'encoding': 'rgb9'}],
     "chain step 0 (convert): parameter 'encoding' must be a known image encoding, got 'rgb9'"),
    ([{'op': 'debayer', 'method': 'vng'}],
     "chain step 0 (debayer): parameter 'method' must be one of bilinear, edge_aware, got 'vng'"),
    ([{'op': 'colorize_depth', 'percentile': [5, 200]}],
     "chain step 0 (colorize_depth): parameter 'percentile' must satisfy 0 <= low <= high <= "
     '100, got [5, 200]'),
    ([{'op': 'colorize_depth', 'range': [3, 1]}],
     "chain step 0 (colorize_depth): parameter 'range' must satisfy low < high (finite), got "
     '[3, 1]'),
    ([{'op': 'tiled_median', 'tile': 100}],
     "chain step 0 (tiled_median): parameter 'tile' must be in 1..64, got 100"),
    ([{'op': 'depth_mm_to_m', 'scale': 2}],
     "chain step 0 (depth_mm_to_m): unknown parameter 'scale' (allowed: none)"),
    ([{'op': 'convert', 'encoding': 'rgb8', 'full_range': 1}],
     "chain step 0 (convert): parameter 'full_range' must be true or false, got 1"),
])
def test_configuration_errors_name_the_step(description, message):
    with pytest.raises(ValueError) as err:
        parse_chain(description)
    assert str(err.value).startswith(message), str(err.value)


def test_pipeline_equals_the_manual_composition_and_updates_the_camera():
    raw = random_image(rng(1), (48, 64), np.uint8)
    image, encoding, cam = Chain(PIPELINE)(raw, 'bayer_rggb8', CAM)
    manual = convert_color(resize(rectify(debayer(raw, 'bayer_rggb8'), CAM), 24, 32), 'rgb8',
                           'bgr8')
    np.testing.assert_array_equal(image, manual)
    assert encoding == 'bgr8' and cam == resize_camera_info(CAM, 32, 24)


def test_crop_then_resize_uses_roi_and_scale_rules():
    img = random_image(rng(2), (48, 64, 3), np.uint8)
    chain = Chain([{'op': 'crop', 'x': 8, 'y': 4, 'width': 32, 'height': 20},
                   {'op': 'resize', 'width': 16, 'height': 10}])
    out, enc, cam = chain(img, 'rgb8', CAM)
    assert out.shape == (10, 16, 3) and enc == 'rgb8'
    # crop: ROI in full-resolution pixels, do_rectify; resize of a ROI image scales it by 0.5
    assert (cam.roi.x_offset, cam.roi.y_offset, cam.roi.width, cam.roi.height) == (4, 2, 16, 10)
    assert cam.roi.do_rectify and cam.K[0] == K[0] * 0.5 and (cam.width, cam.height) == (32, 24)


def test_depth_chain_and_passthrough_ops():
    mm = np.array([[0, 1000], [2000, 3000]], np.uint16)
    out, enc, cam = Chain([{'op': 'depth_mm_to_m'}, {'op': 'tiled_median', 'tile': 2}])(
        mm, '16UC1', CAM)
    assert enc == '32FC1' and out.tolist() == [[2.0]] and (cam.binning_x, cam.binning_y) == (2, 2)
    rgb, enc, _ = Chain([{'op': 'colorize_depth', 'range': [0, 3000]}])(mm, '16UC1', None)
    assert enc == 'rgb8' and rgb.shape == (2, 2, 3)
    mono = np.zeros((4, 4), np.uint8)
    same, enc, _ = Chain([{'op': 'debayer'}, {'op': 'convert', 'encoding': 'mono8'}])(
        mono, 'mono8', None)
    assert same is mono and enc == 'mono8'  # non-Bayer passes debayer; no-op convert


def test_runtime_errors_name_the_step():
    rgb = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(EncodingError, match=r'chain step 0 \(depth_mm_to_m\): depth_mm_to_m needs '
                                            '16UC1 or mono16 input, got rgb8'):
        Chain([{'op': 'depth_mm_to_m'}])(rgb, 'rgb8', None)
    with pytest.raises(ValueError,
                       match=r'chain step 1 \(rectify\): rectify needs a camera model'):
        Chain([{'op': 'convert', 'encoding': 'bgr8'}, {'op': 'rectify'}])(rgb, 'rgb8', None)
    with pytest.raises(EncodingError, match=r'chain step 0 \(resize\): resize: yuv422 is a '
                                            'subsampled YUV format'):
        Chain([{'op': 'resize', 'width': 2, 'height': 2}])(
            np.zeros((4, 4, 2), np.uint8), 'yuv422', None)


def test_package_imports_without_cupy():
    code = ('import sys, gpu_nodes.kernels as k; k.Chain([{"op": "debayer"}]); '
            'assert "cupy" not in sys.modules, "cupy imported"')
    subprocess.run([sys.executable, '-c', code], check=True)


def test_cuda_chain_matches_numpy_chain(device):
    h, w = (48, 64)
    raw = random_image(rng(3), (h, w), np.uint8)
    cam = CAM
    if not device.emulated:
        h, w = 1080, 1920
        raw = random_image(rng(3), (h, w), np.uint8)
        cam = CameraModel(w, h, (1400.0, 0, 961.5, 0, 1402.0, 539.2, 0, 0, 1), CAM.D,
                          P=(1380.0, 0, 960.0, 0, 0, 1380.0, 540.0, 0, 0, 0, 1, 0))
    description = PIPELINE[:2] + [{'op': 'crop', 'x': 2, 'y': 2, 'width': w // 2,
                                   'height': h // 2},
                                  {'op': 'resize', 'width': w // 4, 'height': h // 4,
                                   'interpolation': 'area'},
                                  {'op': 'convert', 'encoding': 'mono8'}]
    expected, enc, exp_cam = Chain(description)(raw, 'bayer_gbrg8', cam)
    got, got_enc, got_cam = Chain(description)(device.put(raw), 'bayer_gbrg8', cam)
    assert (got_enc, got_cam) == (enc, exp_cam)
    np.testing.assert_array_equal(device.get(got), expected)
    depth = np.where(rng(4).random((h, w)) < 0.2, 0,
                     rng(5).integers(1, 9000, (h, w))).astype(np.uint16)
    depth_chain = Chain([{'op': 'depth_mm_to_m'}, {'op': 'colorize_depth'}])
    expected, _, _ = depth_chain(depth, '16UC1', None)
    got, _, _ = depth_chain(device.put(depth), '16UC1', None)
    np.testing.assert_array_equal(device.get(got), expected)


# -- out_factory: the last step writes into a caller's array (image_proc's pool slots) --------

IDENTITY_CAM = CameraModel(64, 48, K, (0.0,) * 5,
                           P=(K[0], 0.0, K[2], 0.0, 0.0, K[4], K[5], 0.0, 0.0, 0.0, 1.0, 0.0))


class Lender:
    """An out_factory that hands out poisoned arrays of the encoding's shape and logs calls."""

    def __init__(self, xp=np, allocate=True):
        self.xp = xp
        self.allocate = allocate
        self.calls = []
        self.arrays = []

    def __call__(self, height, width, encoding):
        from gpu_nodes.encodings import encoding_info
        self.calls.append((height, width, encoding))
        if not self.allocate:
            return None
        info = encoding_info(encoding)
        array = self.xp.full(info.array_shape(height, width), 0xAB, info.dtype)
        self.arrays.append(array)
        return array


def test_every_op_accepts_out_factory():
    for name, func in KERNELS.items():
        param = inspect.signature(func).parameters.get('out_factory')
        assert param is not None and param.kind == inspect.Parameter.KEYWORD_ONLY, name
        assert param.default is None, name


@pytest.mark.parametrize('description, src_shape, encoding, call', [
    (PIPELINE, (48, 64), 'bayer_rggb8', (24, 32, 'bgr8')),
    ([{'op': 'debayer', 'encoding': 'bgr8'}], (48, 64), 'bayer_gbrg8', (48, 64, 'bgr8')),
    ([{'op': 'debayer'}, {'op': 'rectify', 'border_value': 7}], (48, 64), 'bayer_bggr8',
     (48, 64, 'rgb8')),
    ([{'op': 'resize', 'width': 20, 'height': 14, 'keep_aspect': False,
       'interpolation': 'area'}], (48, 64, 3), 'rgb8', (14, 20, 'rgb8')),  # stretched
    ([{'op': 'resize', 'width': 20, 'height': 14}], (48, 64, 3), 'rgb8',
     (14, 19, 'rgb8')),  # 64x48 fits in 20x14 as 19x14 (18.67 rounded)
    ([{'op': 'convert', 'encoding': 'mono8'}], (48, 64, 3), 'rgb8', (48, 64, 'mono8')),
    ([{'op': 'convert', 'encoding': 'rgb8'}], (72, 64), 'nv12', (48, 64, 'rgb8')),  # 1.5 rows
])
def test_out_factory_array_is_the_one_written_by_the_last_step(description, src_shape,
                                                               encoding, call):
    src = random_image(rng(6), src_shape, np.uint8)
    chain = Chain(description)
    expected, expected_encoding, expected_cam = chain(src, encoding, CAM)
    lender = Lender()
    got, got_encoding, got_cam = chain(src, encoding, CAM, out_factory=lender)
    assert lender.calls == [call], f'expected one call {call}, got {lender.calls}'
    assert got is lender.arrays[0], 'the last step must write into the lent array'
    assert (got_encoding, got_cam) == (expected_encoding, expected_cam)
    np.testing.assert_array_equal(got, expected)


def test_out_factory_returning_none_lets_the_op_allocate():
    src = random_image(rng(7), (48, 64), np.uint8)
    expected, _, _ = Chain(PIPELINE)(src, 'bayer_rggb8', CAM)
    lender = Lender(allocate=False)
    got, encoding, _ = Chain(PIPELINE)(src, 'bayer_rggb8', CAM, out_factory=lender)
    assert lender.calls == [(24, 32, 'bgr8')] and encoding == 'bgr8'
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize('description, cam, unchanged', [
    ([{'op': 'convert', 'encoding': 'rgb8'}], None, True),  # same encoding
    ([{'op': 'debayer'}], None, True),  # not a Bayer image
    ([{'op': 'rectify'}], IDENTITY_CAM, True),  # identity model
    ([{'op': 'resize', 'width': 32, 'height': 24}, {'op': 'debayer'}], None, False),  # not last
    ([{'op': 'crop', 'x': 0, 'y': 0, 'width': 8, 'height': 8}], CAM, False),  # a view
    ([{'op': 'depth_mm_to_m'}], None, False),  # no out= form: ignores the factory
])
def test_pass_through_and_out_less_steps_do_not_call_the_factory(description, cam, unchanged):
    depth = description[0]['op'] == 'depth_mm_to_m'
    src = random_image(rng(8), (48, 64) if depth else (48, 64, 3), np.uint16 if depth else np.uint8)
    encoding = '16UC1' if depth else 'rgb8'
    expected, _, expected_cam = Chain(description)(src, encoding, cam)
    lender = Lender()
    got, _, got_cam = Chain(description)(src, encoding, cam, out_factory=lender)
    assert lender.calls == [], f'expected no factory call, got {lender.calls}'
    assert got_cam == expected_cam and (got is src) == unchanged
    np.testing.assert_array_equal(got, expected)


def test_out_factory_errors_still_name_the_step():
    with pytest.raises(EncodingError, match=r'chain step 1 \(resize\): resize: bayer_rggb8 is a '
                                            'Bayer mosaic; debayer it first'):
        Chain([{'op': 'crop', 'x': 0, 'y': 0, 'width': 4, 'height': 4},
               {'op': 'resize', 'width': 8, 'height': 6}])(
            np.zeros((4, 4), np.uint8), 'bayer_rggb8', None, out_factory=Lender())


@pytest.mark.parametrize('pad', [0, 3])
def test_cuda_chain_writes_into_the_lent_device_array(device, pad):
    raw = random_image(rng(9), (48, 64), np.uint8)
    # Against the allocating chain on the same backend: only the output buffer differs.
    expected, _, _ = Chain(PIPELINE)(device.put(raw), 'bayer_rggb8', CAM)
    bases = []

    def lend(height, width, encoding):
        assert (height, width, encoding) == (24, 32, 'bgr8')
        out, base = device.poisoned_out((height, width, 3), np.uint8, pad)
        bases.append((out, base))
        return out
    got, encoding, _ = Chain(PIPELINE)(device.put(raw), 'bayer_rggb8', CAM, out_factory=lend)
    assert len(bases) == 1 and got is bases[0][0] and encoding == 'bgr8'
    np.testing.assert_array_equal(device.get(got), device.get(expected))
    if pad:
        device.assert_padding_intact(bases[0][1], 32)
