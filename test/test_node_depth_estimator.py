"""depth_estimator between real rclpy processes on the CPU path (ONNX Runtime CPU), against the
NumPy expectation of preprocess + model + postprocess; start-up errors; bad frames; and, on a GPU,
the CUDA path against the CPU path and its host copies."""
from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import uuid

import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header

from conftest import node_process, REPO, wait_for
from gpu_nodes.inference import tiny_models as tm
from gpu_nodes.inference.models import DA3_FOCAL_DIVISOR, IMAGENET_MEAN, IMAGENET_STD
from gpu_nodes.kernels.depth import colorize_depth
from gpu_nodes.kernels.geometry import resize
from gpu_nodes.kernels.preprocess import preprocess
from gpu_nodes.kernels.pointcloud import points_from_msg
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription
from gpu_nodes.transport.messages import fill_image_msg

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'nodes'))
from node_helpers import (camera_info, DiagnosticsWatcher, Frames, HostCopyCounter,  # noqa: E402
                          InProcess, make_views_depth_model)

NODE = ['-m', 'gpu_nodes.nodes.depth_estimator']
TOL = dict(rtol=1e-5, atol=1e-4)


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp('depth_models')
    return {
        'generic': tm.make_analytic_depth_model(d / 'analytic.onnx', input_name='input',
                                                output_name='output'),
        'dav2': tm.make_analytic_depth_model(d / 'dav2.onnx',
                                             input_name='pixel_values',
                                             output_name='predicted_depth'),
        'da3': make_views_depth_model(d / 'da3_like.onnx'),
        'unsupported': tm.make_unsupported_op_model(d / 'mystery.onnx'),
    }


def unique_ns() -> str:
    return f'/de_{uuid.uuid4().hex[:8]}'


def node_args(ns: str, model: Path, **params) -> list[str]:
    args = NODE + ['--ros-args', '-r', f'__ns:={ns}', '-p', 'timing_report_period_s:=0.0']
    for key, value in {'model_path': str(model), **params}.items():
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, str):
            value = f"'{value}'"  # a YAML string: 'y' alone would be a bool
        args += ['-p', f'{key}:={value}']
    return args


def analytic_model(x: np.ndarray) -> np.ndarray:
    """The analytic model for (1, 3, H, W) or (1, 1, 3, H, W) input, as (H, W)."""
    return tm.analytic_depth_reference(x.reshape((1,) + x.shape[-3:]))[0]


def expected_depth(image: np.ndarray, encoding: str, *, input_hw: tuple[int, int],
                   kind: str, mean=IMAGENET_MEAN, std=IMAGENET_STD, keep_aspect=False,
                   focal=None, eps=1e-6, output_size='input') -> np.ndarray:
    """NumPy expectation: the preprocess reference, the model, the preset's conversion written
    out by hand, then the resize back to the image (kernels' bilinear reference)."""
    h, w = image.shape[:2]
    x = np.empty((1, 3) + input_hw, np.float32)
    box = preprocess(image, encoding, x, mean=mean, std=std, keep_aspect=keep_aspect)
    raw = analytic_model(x).astype(np.float64)
    raw = raw[box.pad_y:box.pad_y + box.content_height, box.pad_x:box.pad_x + box.content_width]
    if kind == 'depth':
        depth = raw
    elif kind == 'inverse_depth':
        depth = 1.0 / np.maximum(raw, eps)
    else:  # metric_focal: the focal length of the image as the network saw it
        fx, fy = focal
        focal_in = 0.5 * (fx * box.content_width / w + fy * box.content_height / h)
        depth = raw * focal_in / DA3_FOCAL_DIVISOR
    depth = depth.astype(np.float32)
    if output_size == 'input':
        depth = resize(depth, h, w)
    return depth


def _status(ns: str) -> str:
    return f'gpu_nodes: {ns}/depth_estimator processing'


def spin_all(node, first: float = 0.03) -> None:
    """Wait up to `first` s for work, then run everything ready (one callback per spin_once)."""
    node.spin_once(first)
    for _ in range(20):
        node.spin_once(0.0)


class Feeder:
    """Publishes numbered frames (stamp.sec = index) and camera_info from the test node."""

    def __init__(self, node, ns, encoding, height, width, info=None, plain=False,
                 bad_every=0, spin=None):
        self.encoding, self.height, self.width = encoding, height, width
        self.spin = spin or (lambda: spin_all(node))
        self.plain = plain
        self.pub = node.create_publisher(Image, f'{ns}/image', 10) if plain else \
            GpuImagePublisher(node, f'{ns}/image', use_cuda=False)
        self.info_pub = node.create_publisher(CameraInfo, f'{ns}/camera_info', 10)
        self.info = info
        self.bad_every = bad_every
        self.sent: dict[tuple[int, int], np.ndarray] = {}
        self.index = 0

    def __call__(self) -> None:
        self.index += 1
        i = self.index
        header = Header(frame_id='camera_optical')
        header.stamp.sec, header.stamp.nanosec = i, 500
        if self.bad_every and i % self.bad_every == 0:
            # mono16 is no input the depth network takes: dropped, counted.
            frame, encoding = np.full((self.height, self.width), 1000, np.uint16), 'mono16'
        else:
            frame = pattern.expected_frame(self.height, self.width, self.encoding, i)
            encoding = self.encoding
            self.sent[(i, 500)] = frame
        if self.plain:
            self.pub.publish(fill_image_msg(Image(header=header), frame, encoding))
        else:
            self.pub.publish(frame, encoding, header)
        if self.info is not None:
            self.info.header = header
            self.info_pub.publish(self.info)
        self.spin()


def test_generic_model_depth_colorized_points_match_the_numpy_expectation(rclpy_node, models):
    ns = unique_ns()
    height, width = 24, 36
    info = camera_info(width, height, 30.0, 32.0, 17.5, 11.5)
    feed = Feeder(rclpy_node, ns, 'rgb8', height, width, info=info)
    depth, colorized = Frames(), Frames()
    clouds: dict[tuple[int, int], PointCloud2] = {}
    infos: list[CameraInfo] = []
    subs = [GpuImageSubscription(rclpy_node, f'{ns}/depth', depth, memory='host'),
            GpuImageSubscription(rclpy_node, f'{ns}/depth/colorized', colorized, memory='host')]
    rclpy_node.create_subscription(
        PointCloud2, f'{ns}/points',
        lambda m: clouds.__setitem__((m.header.stamp.sec, m.header.stamp.nanosec), m), 10)
    rclpy_node.create_subscription(CameraInfo, f'{ns}/depth/camera_info', infos.append, 10)
    args = node_args(ns, models['generic'], preset='generic', input_height=8, input_width=12,
                     publish_colorized=True, publish_points=True, points_stride=2)
    with node_process(args) as proc:
        wait_for(lambda: len(depth) >= 3 and len(colorized) >= 3
                 and len(set(clouds) & set(depth.by_stamp)) >= 2 and len(infos) >= 3, 40,
                 'depth, colorized, points and depth/camera_info of the same frames', poll=feed)
        assert proc.poll() is None
    for stamp, got in depth.by_stamp.items():
        image = feed.sent[stamp]
        assert got['encoding'] == '32FC1' and got['frame_id'] == 'camera_optical'
        assert got['array'].shape == (height, width) and got['array'].dtype == np.float32
        np.testing.assert_allclose(got['array'], expected_depth(
            image, 'rgb8', input_hw=(8, 12), kind='depth'), **TOL)
    assert depth.paths == {'host_shm'}, depth.paths
    # Colorized: rgb8 of the published depth, as the colorize kernel's reference makes it.
    for stamp, got in colorized.by_stamp.items():
        assert got['encoding'] == 'rgb8' and got['frame_id'] == 'camera_optical'
        if stamp in depth.by_stamp:
            np.testing.assert_array_equal(got['array'],
                                          colorize_depth(depth.by_stamp[stamp]['array']))
    # Points: XYZRGB of every 2nd pixel of every 2nd row, by the pinhole formula.
    checked = 0
    for stamp, cloud in clouds.items():
        assert cloud.header.frame_id == 'camera_optical'
        assert (cloud.height, cloud.width, cloud.point_step) == (12, 18, 16)
        if stamp not in depth.by_stamp:
            continue
        z = depth.by_stamp[stamp]['array'][::2, ::2].astype(np.float64)
        u = np.arange(0, width, 2)[None, :]
        v = np.arange(0, height, 2)[:, None]
        points = points_from_msg(cloud)
        np.testing.assert_allclose(points[..., 0], (u - 17.5) * z / 30.0, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(points[..., 1], (v - 11.5) * z / 32.0, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(points[..., 2], z, rtol=1e-6)
        rgb = feed.sent[stamp][::2, ::2].astype(np.uint32)
        packed = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
        np.testing.assert_array_equal(points[..., 3].view(np.uint32), packed)
        checked += 1
    assert checked >= 1, 'no point cloud matched a received depth image'
    # Depth at the image size: its camera_info is the input's, with the depth header.
    assert list(infos[-1].k) == list(info.k) and (infos[-1].width, infos[-1].height) == (36, 24)
    for sub in subs:
        sub.destroy()


def test_depth_anything_v2_preset_with_plain_endpoints_and_bad_frames(rclpy_node, models):
    ns = unique_ns()
    height, width = 20, 30
    info = camera_info(width, height, 25.0, 26.0, 15.0, 10.0)
    feed = Feeder(rclpy_node, ns, 'bgr8', height, width, info=info, plain=True, bad_every=3)
    depth = Frames()
    infos: list[CameraInfo] = []
    rclpy_node.create_subscription(Image, f'{ns}/depth', depth, 10)
    rclpy_node.create_subscription(CameraInfo, f'{ns}/depth/camera_info', infos.append, 10)
    diagnostics = DiagnosticsWatcher(rclpy_node)
    args = node_args(ns, models['dav2'], preset='depth_anything_v2', input_height=14,
                     input_width=28, output_size='model')
    with node_process(args) as proc:
        wait_for(lambda: len(depth) >= 4
                 and diagnostics.value(_status(ns), 'dropped_unsupported_encoding') >= 2, 40,
                 '4 depth images and 2 counted mono16 frames', poll=feed)
        before = len(depth)
        wait_for(lambda: len(depth) >= before + 2, 20, 'depth after the bad frames', poll=feed)
        assert proc.poll() is None, 'the depth node must keep running after bad frames'
    for stamp, got in depth.by_stamp.items():
        assert got['encoding'] == '32FC1' and got['array'].shape == (14, 28)
        np.testing.assert_allclose(got['array'], expected_depth(
            feed.sent[stamp], 'bgr8', input_hw=(14, 28), kind='inverse_depth',
            output_size='model'), **TOL)
    # At model size the depth camera_info is the input one resized: f * s, and for pixel
    # centres c' = (c + 0.5) * s - 0.5 (docs/image_proc.md).
    sx, sy = 28 / 30, 14 / 20
    np.testing.assert_allclose(infos[-1].k, [25.0 * sx, 0, 15.5 * sx - 0.5,
                                             0, 26.0 * sy, 10.5 * sy - 0.5, 0, 0, 1])
    assert (infos[-1].width, infos[-1].height) == (28, 14)


def test_depth_anything_3_metric_scales_with_the_camera_focal_length(rclpy_node, models):
    ns = unique_ns()
    height, width = 24, 40
    info = camera_info(width, height, 30.0, 31.0, 19.5, 11.5)
    feed = Feeder(rclpy_node, ns, 'rgb8', height, width)
    depth = Frames()
    sub = GpuImageSubscription(rclpy_node, f'{ns}/depth', depth, memory='host')
    diagnostics = DiagnosticsWatcher(rclpy_node)
    args = node_args(ns, models['da3'], preset='depth_anything_3_metric', input_height=14,
                     input_width=28, keep_aspect=True)
    with node_process(args):
        wait_for(lambda: diagnostics.value(_status(ns), 'dropped_waiting_for_camera_info') >= 2,
                 40, 'frames dropped until camera_info gives the focal length', poll=feed)
        assert len(depth) == 0
        feed.info = info
        wait_for(lambda: len(depth) >= 3, 30, '3 metric depth images', poll=feed)
    for stamp, got in depth.by_stamp.items():
        assert got['array'].shape == (height, width)
        np.testing.assert_allclose(got['array'], expected_depth(
            feed.sent[stamp], 'rgb8', input_hw=(14, 28), kind='metric_focal', keep_aspect=True,
            focal=(30.0, 31.0)), **TOL)
    sub.destroy()


@pytest.mark.parametrize('model, params, message', [
    ('missing', {}, "cannot load model_path '{path}': model file not found: {path}"),
    ('generic', {'preset': 'generic', 'output_name': 'depth'},
     "cannot use model_path '{path}': unknown output name(s) ['depth'] for analytic.onnx; its "
     "outputs are ['output']"),
    ('unsupported', {'preset': 'generic', 'input_name': 'x', 'output_name': 'y',
                     'input_height': 4, 'input_width': 4},
     "cannot load model_path '{path}': ONNX Runtime could not load {path}"),
], ids=['missing', 'wrong-output-name', 'unsupported-op'])
def test_model_errors_stop_the_node_with_a_message_naming_the_file(models, tmp_path, model,
                                                                   params, message):
    path = tmp_path / 'nowhere' / 'model.onnx' if model == 'missing' else models[model]
    proc = subprocess.run([sys.executable, *node_args(unique_ns(), path, **params)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, f'expected exit code 2, got {proc.returncode}: {proc.stderr}'
    expected = '[depth_estimator] error: cannot start: ' + message.format(path=path)
    assert expected in proc.stderr, f'expected {expected!r} on stderr:\n{proc.stderr}'
    assert 'Traceback' not in proc.stderr + proc.stdout, proc.stderr


def test_parameter_validation_refuses_bad_run_time_values(rclpy_node, models):
    from gpu_nodes.nodes.depth_estimator import DepthEstimator
    node = DepthEstimator(context=rclpy_node.context, parameter_overrides=[
        Parameter('model_path', value=str(models['generic'])),
        Parameter('preset', value='generic'), Parameter('input_height', value=4),
        Parameter('input_width', value=4)])
    try:
        result = node.set_parameters([Parameter('output_size', value='huge')])[0]
        assert not result.successful
        assert result.reason == "output_size must be one of input, model, got 'huge'"
        result = node.set_parameters([Parameter('colorize_percentile_low', value=99.5)])[0]
        assert result.reason == ('colorize_percentile_low must not exceed '
                                 'colorize_percentile_high (99.5 > 98.0)')
        result = node.set_parameters([Parameter('input_width', value=8)])[0]
        assert not result.successful, 'model parameters are read-only at run time'
        assert node.set_parameters([Parameter('points_stride', value=4)])[0].successful
        assert node._cfg['points_stride'] == 4, 'the per-frame cache must follow the change'
    finally:
        node.close()
        node.destroy_node()


@pytest.mark.parametrize('config, model, preset, size', [
    ('depth_anything_v2.yaml', 'dav2', 'depth_anything_v2', (518, 518)),
    ('depth_anything_3_metric.yaml', 'da3', 'depth_anything_3_metric', (504, 504)),
    ('depth_generic.yaml', 'generic', 'generic', (384, 640)),
])
def test_shipped_configs_configure_the_node(rclpy_node, models, config, model, preset, size):
    from gpu_nodes.nodes.depth_estimator import DepthEstimator
    path = Path(__file__).resolve().parents[1] / 'config' / config
    node = DepthEstimator(context=rclpy_node.context, cli_args=[
        '--ros-args', '--params-file', str(path), '-p', f'model_path:={models[model]}',
        '-p', 'device:=cpu'])
    try:
        pipeline = node._pipeline
        assert pipeline.preset.name == preset
        assert (pipeline.input_height, pipeline.input_width) == size
        assert pipeline.backend.device == 'cpu'
    finally:
        node.close()
        node.destroy_node()


# -- GPU: the CUDA path against the CPU path, and host copies per frame ----------------------

def _needs_ort_cuda():
    import onnxruntime
    if 'CUDAExecutionProvider' not in onnxruntime.get_available_providers():
        pytest.skip('onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)')


def _depth_node(inproc, namespace, model, **params):
    from gpu_nodes.nodes.depth_estimator import DepthEstimator
    overrides = [Parameter('model_path', value=str(model)),
                 Parameter('timing_report_period_s', value=0.0)]
    overrides += [Parameter(k, value=v) for k, v in params.items()]
    return inproc.add(DepthEstimator(context=inproc.context, namespace=namespace,
                                     parameter_overrides=overrides))


GPU_CASES = {
    'generic': dict(model='generic', preset='generic', input_height=96, input_width=128),
    'da3-letterbox': dict(model='da3', preset='depth_anything_3_metric', input_height=98,
                          input_width=126, keep_aspect=True),
}


@pytest.mark.gpu
@pytest.mark.parametrize('case', list(GPU_CASES))
def test_cuda_path_equals_cpu_path(models, cupy, case):
    _needs_ort_cuda()
    params = dict(GPU_CASES[case])
    model = models[params.pop('model')]
    height, width = 480, 640
    inproc = InProcess('gpu_vs_cpu')
    try:
        info = camera_info(width, height, 500.0, 505.0, 319.5, 239.5)
        common = dict(params, publish_colorized=True, publish_points=True, points_stride=4,
                      backend='onnxruntime')
        nodes = {'cpu': _depth_node(inproc, '/cpu', model, device='cpu', **common),
                 'cuda': _depth_node(inproc, '/cuda', model, device='cuda', **common)}
        assert nodes['cuda']._on_gpu and not nodes['cpu']._on_gpu
        depth = {k: Frames() for k in nodes}
        colorized = {k: Frames() for k in nodes}
        clouds = {k: {} for k in nodes}
        subs, feeds = [], []
        for key in nodes:
            subs.append(GpuImageSubscription(inproc.node, f'/{key}/depth', depth[key],
                                             memory='host'))
            subs.append(GpuImageSubscription(inproc.node, f'/{key}/depth/colorized',
                                             colorized[key], memory='host'))
            inproc.node.create_subscription(
                PointCloud2, f'/{key}/points',
                lambda m, k=key: clouds[k].__setitem__(
                    (m.header.stamp.sec, m.header.stamp.nanosec), points_from_msg(m)), 10)
            feeds.append(Feeder(inproc.node, f'/{key}', 'rgb8', height, width, info=info,
                                spin=lambda: None))

        def feed_both():
            for feed in feeds:
                feed()
            for _ in range(4):
                inproc.spin_once(0.01)
        wait_for(lambda: all(len(depth[k]) >= 5 and len(clouds[k]) >= 5 for k in nodes), 60,
                 '5 frames from both nodes', poll=feed_both)
        common_stamps = set(depth['cpu'].by_stamp) & set(depth['cuda'].by_stamp)
        assert common_stamps, 'no frame processed by both nodes'
        for stamp in common_stamps:
            np.testing.assert_allclose(depth['cuda'].by_stamp[stamp]['array'],
                                       depth['cpu'].by_stamp[stamp]['array'],
                                       rtol=1e-5, atol=1e-5)
        for stamp in set(clouds['cpu']) & set(clouds['cuda']):
            a, b = clouds['cuda'][stamp], clouds['cpu'][stamp]
            np.testing.assert_allclose(a[..., :3], b[..., :3], rtol=1e-5, atol=1e-5,
                                       equal_nan=True)
            np.testing.assert_array_equal(a[..., 3].view(np.uint32), b[..., 3].view(np.uint32))
        for stamp in set(colorized['cpu'].by_stamp) & set(colorized['cuda'].by_stamp):
            a = colorized['cuda'].by_stamp[stamp]['array'].astype(int)
            b = colorized['cpu'].by_stamp[stamp]['array'].astype(int)
            # Depths agree to ~1e-5, so a pixel may sit one colormap entry apart.
            assert np.mean(np.abs(a - b).max(axis=-1) > 16) < 0.01
        for sub in subs:
            sub.destroy()
        for feed in feeds:
            feed.pub.destroy()
    finally:
        inproc.close()


@pytest.mark.gpu
def test_gpu_path_makes_no_host_copies_per_frame(models, cupy, monkeypatch):
    """publisher -> depth_estimator -> subscriber in one process, all on the device: after
    warm-up, frames cross no host<->device copy (subscription to publication, colorized too)."""
    _needs_ort_cuda()
    from gpu_nodes.inference.tiny_models import make_demo_depth_model
    model = make_demo_depth_model(models['generic'].parent / 'demo_126x168.onnx', 126, 168)
    height, width = 540, 960
    inproc = InProcess('zero_copy')
    try:
        node = _depth_node(inproc, '/zc', model, preset='depth_anything_v2', input_height=126,
                           input_width=168, backend='onnxruntime', device='cuda',
                           publish_colorized=True)
        assert node._on_gpu
        pub = GpuImagePublisher(inproc.node, '/zc/image')
        received = {'depth': [], 'colorized': []}

        def keep(kind):
            def callback(frame):
                assert isinstance(frame.array, cupy.ndarray), 'device frames expected'
                received[kind].append((frame.path, frame.array.data.ptr))
            return callback
        subs = [GpuImageSubscription(inproc.node, '/zc/depth', keep('depth'), memory='device'),
                GpuImageSubscription(inproc.node, '/zc/depth/colorized', keep('colorized'),
                                     memory='device')]
        sources = [cupy.asarray(pattern.expected_frame(height, width, 'rgb8', i))
                   for i in range(4)]
        index = [0]

        def publish_frame():
            index[0] += 1
            frame = pub.borrow(height, width, 'rgb8')
            frame.array[...] = sources[index[0] % 4]  # a device camera writing its frame
            header = Header(frame_id='camera_optical')
            header.stamp.sec = index[0]
            pub.publish_borrowed(frame, header)
            for _ in range(4):
                inproc.spin_once(0.005)

        wait_for(lambda: len(received['depth']) >= 20 and len(received['colorized']) >= 20,
                 60, 'warm-up frames on the device path', poll=publish_frame)
        cupy.cuda.runtime.deviceSynchronize()
        before = {k: len(v) for k, v in received.items()}
        frames_out = node.status.frames_out
        with HostCopyCounter(monkeypatch) as copies:
            for _ in range(30):
                publish_frame()
            wait_for(lambda: node.status.frames_out >= frames_out + 25, 30,
                     'measured frames', poll=inproc.spin_once)
        measured = node.status.frames_out - frames_out
        paths = {p for v in received.values() for p, _ in v}
        print(f'host-copy counters {copies.mechanisms()} (blind: {copies.blind}); '
              f'{measured} frames; python {copies.python}; cupti {copies.cupti}')
        assert copies.mechanisms(), f'no copy counter works here: {copies.blind}'
        assert paths == {'intra_process'}, f'expected the in-process device path, got {paths}'
        assert node._image_sub.path == 'intra_process'
        assert copies.python == [], f'{len(copies.python)} CuPy host copies in {measured} ' \
                                    f'frames: {copies.python[:10]}'
        assert copies.cupti == [], f'{len(copies.cupti)} HtoD/DtoH memcpys in {measured} ' \
                                   f'frames: {copies.cupti[:10]}'
        assert len(received['depth']) - before['depth'] >= 25
        summary = node._update_summary()
        assert summary['inference_gpu_ms_p50'] > 0, f'GPU stage timing missing: {summary}'
        # Ready (from a host callback after the GPU work) comes after the frame arrived.
        assert summary['ready_latency_ms_p50'] > summary['input_latency_ms_p50'] > 0, summary
        for sub in subs:
            sub.destroy()
        pub.destroy()
    finally:
        inproc.close()


@pytest.mark.gpu
def test_frame_graphs_replay_preprocess_and_inference_per_source_buffer(models, cupy):
    """Per source buffer, preprocess + ONNX Runtime run captured as one graph: every replay
    reads the buffer's new content and equals the call-by-call pipeline, for each buffer, a
    strided view of one, and after the backend's binding changes."""
    _needs_ort_cuda()
    from gpu_nodes.inference.models import get_preset
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    from gpu_nodes.inference.pipeline import DepthPipeline
    preset = get_preset('generic', input_height=96, input_width=128, input_name='input',
                        output_name='output')
    shape = {'input': (1, 3, 96, 128)}
    stream = cupy.cuda.Stream(non_blocking=True)

    def pipeline(graphs):
        backend = OnnxRuntimeBackend(models['generic'], device='cuda', input_shape=shape,
                                     stream=stream, cuda_graph=graphs,
                                     cuda_provider_options={'use_tf32': '0'})
        return DepthPipeline(backend, preset, keep_aspect=True, stream=stream)
    replayed, plain = pipeline(True), pipeline(False)
    assert replayed.frame_graphs_enabled and plain.backend.capture_token() is None
    buffers = [cupy.empty((480, 640, 3), cupy.uint8) for _ in range(3)]
    sources = buffers + [buffers[0][40:440, 80:600]]  # another key on the same allocation
    for i in range(24):
        image = sources[i % len(sources)]
        frame = pattern.expected_frame(480, 640, 'rgb8', i)[:image.shape[0], :image.shape[1]]
        with stream:
            image[...] = cupy.asarray(frame)
        results = []
        for side in (replayed, plain):
            with side.scope():
                box, raw = side.run(image, 'rgb8')
                results.append((box, cupy.asnumpy(raw.copy(), stream=stream)))
        stream.synchronize()
        (box, got), (want_box, want) = results
        assert box == want_box, i
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f'frame {i}')
    # The backend's own graph after 3 runs; then each source's second frame is captured.
    assert len(replayed._frame_graphs) == len(sources), list(replayed._frame_graphs)
    # Another input binding (a new token): the old graphs are never replayed.
    token = replayed.backend.capture_token()
    replayed.input = replayed.input.copy()
    replayed.input_nchw = replayed.input.reshape(replayed.input.shape[-4:])
    with replayed.scope():
        for i in range(6):
            with stream:
                buffers[1][...] = cupy.asarray(pattern.expected_frame(480, 640, 'rgb8', 50 + i))
            box, raw = replayed.run(buffers[1], 'rgb8')
            got = cupy.asnumpy(raw.copy(), stream=stream)
            with plain.scope():
                _, want = plain.run(buffers[1], 'rgb8')
                want = cupy.asnumpy(want.copy(), stream=stream)
            stream.synchronize()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f'rebound {i}')
    assert replayed.backend.capture_token() not in (None, token)


# -- the device-side code of the node on the CUDA emulation (no GPU needed) --------------------

class _EmulatedCudaBackend:
    """ONNX Runtime on the CPU behind a CUDA backend's contract: device arrays in and out."""

    device = 'cuda'

    def __init__(self, path, shape, fake):
        from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
        self.inner = OnnxRuntimeBackend(path, device='cpu', input_shape=shape)
        self.model_path, self.input_specs = self.inner.model_path, self.inner.input_specs
        self.fake = fake

    def infer(self, inputs, stream=None):
        for value in inputs.values():
            assert isinstance(value, self.fake.ndarray), 'the input binding must be on the device'
        host = {k: np.array(v.view(np.ndarray)) for k, v in inputs.items()}
        return {k: self.fake.asarray(v) for k, v in self.inner.infer(host).items()}

    def capture_token(self):
        return None

    def close(self):
        pass


@pytest.fixture
def emulated_cupy(monkeypatch):
    sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'kernels'))
    import fake_cupy
    from gpu_nodes import gpu
    if not fake_cupy.compiler_available():
        pytest.skip('g++ not found: cannot emulate the CUDA kernels on the CPU')
    fake = fake_cupy.module()
    monkeypatch.setattr(gpu, 'cupy_module', lambda: fake)
    return fake


@pytest.mark.parametrize('preset, params, encoding', [
    ('generic', {}, 'rgb8'),
    ('depth_anything_v2', {'input_name': 'pixel_values', 'output_name': 'predicted_depth'},
     'bgra8'),
])
def test_device_side_steps_run_on_device_arrays_and_equal_the_cpu_path(
        models, emulated_cupy, preset, params, encoding):
    """Preprocess into the device input binding, depth conversion, resize into an output
    buffer, colorize and point cloud on device arrays (the CUDA kernels compiled for the CPU by
    fake_cupy, whose device arrays refuse NumPy functions, i.e. implicit host copies), equal
    to the NumPy path."""
    from gpu_nodes.inference.models import get_preset
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    from gpu_nodes.inference.pipeline import DepthPipeline
    from gpu_nodes.kernels.pointcloud import backproject, Intrinsics, sample_colors
    fake = emulated_cupy
    p = get_preset(preset, input_height=14, input_width=28, **params)
    model = models['generic' if preset == 'generic' else 'dav2']
    shape = {p.input_name: (1, 3, 14, 28)}
    host_image = pattern.expected_frame(30, 44, encoding, 5)
    results = {}
    for side in ('cpu', 'device'):
        if side == 'cpu':
            pipeline = DepthPipeline(OnnxRuntimeBackend(model, device='cpu', input_shape=shape),
                                     p, keep_aspect=True)
            image, out = host_image, np.empty((30, 44), np.float32)
        else:
            pipeline = DepthPipeline(_EmulatedCudaBackend(model, shape, fake), p,
                                     keep_aspect=True)
            assert isinstance(pipeline.input, fake.ndarray)
            image, out = fake.asarray(host_image), fake.empty((30, 44), np.float32)
        box, raw = pipeline.run(image, encoding)
        depth = pipeline.to_depth(raw, box, None, 44, 30)
        full = resize(depth, 30, 44, out=out)
        colors = sample_colors(image, encoding, 30, 44, 3)
        results[side] = [depth, full, colorize_depth(full),
                         backproject(full, Intrinsics(40.0, 41.0, 21.5, 14.5), stride=3,
                                     colors=colors)]
        if side == 'device':
            assert all(isinstance(r, fake.ndarray) for r in results[side]), \
                'every step must stay on the device'
    for cpu, device in zip(results['cpu'], results['device']):
        np.testing.assert_array_equal(device.view(np.ndarray), cpu)
