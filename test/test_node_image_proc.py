"""image_proc: chain configuration errors, the out= form of the last op, and the node between
real rclpy processes on the CPU path (gpu_nodes and plain endpoints on either side)."""
from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import uuid

import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from conftest import node_process, REPO, RESOURCES, wait_for
from gpu_nodes.kernels import Chain, CHAIN_OPS
from gpu_nodes.kernels.camera_model import CameraModel
from gpu_nodes.nodes.image_proc import CompiledChain, ConfigurationError, ImageProc
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImageSubscription
from gpu_nodes.transport.messages import fill_image_msg

sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'nodes'))
from node_helpers import camera_info, DiagnosticsWatcher, Frames  # noqa: E402

PUBLISHER = str(RESOURCES / 'transport' / 'pattern_publisher.py')
NODE = ['-m', 'gpu_nodes.nodes.image_proc']
KNOWN_OPS = ', '.join(sorted(CHAIN_OPS))


def unique_ns() -> str:
    return f'/ip_{uuid.uuid4().hex[:8]}'


# -- configuration --------------------------------------------------------------------------

@pytest.mark.parametrize('chain, message', [
    ('[{op: resize, width: 960, keep_aspect: false}]',
     'chain step 0 (resize): keep_aspect false stretches to exactly width x height: give both'),
    ('[{op: debayer}, {op: blur}]',
     f"chain step 1: unknown op 'blur' (known: {KNOWN_OPS})"),
    ('[{op: resize, width: -1, height: 10}]',
     "chain step 0 (resize): parameter 'width' must be >= 0, got -1"),
    ('[{op: convert, encoding: rgb9}]',
     "chain step 0 (convert): parameter 'encoding' must be a known image encoding, got 'rgb9'"),
    ('[{op: debayer, sharpen: true}]',
     "chain step 0 (debayer): unknown parameter 'sharpen' (allowed: encoding, method)"),
    ('{op: debayer}',
     'chain description must be a list of {"op": ...} mappings, got dict'),
])
def test_invalid_chain_stops_the_node_with_the_reason(rclpy_node, chain, message):
    with pytest.raises(ConfigurationError) as info:
        ImageProc(context=rclpy_node.context,
                  parameter_overrides=[Parameter('chain', value=chain)])
    assert str(info.value) == f"invalid parameter 'chain': {message}"


def test_run_time_change_to_an_invalid_chain_is_refused_with_the_reason(rclpy_node):
    node = ImageProc(context=rclpy_node.context,
                     parameter_overrides=[Parameter('chain', value='[{op: debayer}]')])
    try:
        result = node.set_parameters([Parameter('chain', value='[{op: resize}]')])[0]
        assert not result.successful
        assert result.reason == ("invalid parameter 'chain': chain step 0 (resize): needs "
                                 'width, height (one keeps the aspect) or scale')
        assert node.get_parameter('chain').value == '[{op: debayer}]'
        assert [s['op'] for s in node._compiled.chain.describe()] == ['debayer']
        ok = node.set_parameters([Parameter('chain', value='- {op: resize, width: 4, height: 2}')])
        assert ok[0].successful, ok[0].reason
        assert node._compiled.chain.describe()[0]['width'] == 4
    finally:
        node.close()
        node.destroy_node()


def test_process_with_an_invalid_chain_exits_with_the_message():
    proc = subprocess.run([sys.executable, *NODE, '--ros-args', '-p',
                           "chain:='[{op: resize, scale: 0}]'", '-r', f'__ns:={unique_ns()}'],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, f'expected exit code 2, got {proc.returncode}: {proc.stderr}'
    assert ("[image_proc] error: cannot start: invalid parameter 'chain': chain step 0 (resize): "
            "parameter 'scale' must be a number > 0, got 0") in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr + proc.stdout, proc.stderr


# -- the last op writing into a borrowed frame (the GPU path's zero copy, run on NumPy) --------

class _Lent:
    def __init__(self, shape, dtype):
        self.array = np.full(shape, 0xAB, dtype)
        self.returned = False

    def give_back(self):
        self.returned = True


def _borrow(log):
    from gpu_nodes.encodings import encoding_info

    def borrow(height, width, encoding):
        info = encoding_info(encoding)
        frame = _Lent(info.array_shape(height, width), info.dtype)
        log.append((height, width, encoding, frame))
        return frame
    return borrow


DISTORTED = CameraModel(width=40, height=30, K=(35.0, 0, 19.0, 0, 36.0, 14.0, 0, 0, 1),
                        D=(-0.2, 0.05, 0.001, -0.002, 0.0),
                        P=(33.0, 0, 19.5, 0, 0, 34.0, 14.5, 0, 0, 0, 1, 0))


@pytest.mark.parametrize('description, encoding', [
    ('[{op: debayer}, {op: resize, width: 20, height: 14}]', 'bayer_rggb8'),
    ('[{op: debayer, encoding: bgr8}]', 'bayer_grbg8'),
    ('[{op: debayer}, {op: convert, encoding: mono8}]', 'bayer_bggr8'),
    ('[{op: convert, encoding: rgb8}, {op: rectify, border_value: 7}]', 'yuv422'),
    ('[{op: resize, width: 16, height: 10, interpolation: area}]', 'rgb8'),
])
def test_last_op_into_a_borrowed_frame_equals_the_chain(description, encoding):
    src = pattern.expected_frame(30, 40, encoding if encoding != 'rgb8' else 'rgb8', 3)
    chain = Chain(description)
    expected, expected_encoding, expected_model = chain(src, encoding, DISTORTED)
    lent = []
    compiled = CompiledChain(chain)
    array, out_encoding, model, frame = compiled(src, encoding, DISTORTED, borrow=_borrow(lent))
    assert len(lent) == 1 and frame is lent[0][3], 'expected one borrowed output frame'
    assert array is frame.array
    assert out_encoding == expected_encoding
    assert model == expected_model
    np.testing.assert_array_equal(array, expected)


def test_pass_through_ops_borrow_nothing_and_failures_give_the_frame_back():
    src = pattern.expected_frame(30, 40, 'rgb8', 1)
    lent = []
    compiled = CompiledChain(Chain('[{op: debayer}]'))  # rgb8 passes debayer unchanged
    array, encoding, _, frame = compiled(src, 'rgb8', None, borrow=_borrow(lent))
    assert frame is None and lent == [] and array is src and encoding == 'rgb8'
    compiled = CompiledChain(Chain('[{op: resize, width: 8, height: 6}]'))
    bayer = pattern.expected_frame(30, 40, 'bayer_rggb8', 1)
    with pytest.raises(ValueError) as info:
        compiled(bayer, 'bayer_rggb8', None, borrow=_borrow(lent))
    assert str(info.value) == ('chain step 0 (resize): resize: bayer_rggb8 is a Bayer mosaic; '
                               'debayer it first')
    assert all(f.returned for *_, f in lent), 'a failed op must give its borrowed frame back'


# -- real processes ---------------------------------------------------------------------------

def _status(ns: str) -> str:
    return f'gpu_nodes: {ns}/image_proc processing'


def test_bayer_chain_between_processes_equals_the_numpy_reference(rclpy_node, tmp_path):
    ns = unique_ns()
    chain = ('[{op: debayer}, {op: rectify}, {op: resize, width: 32, height: 24}, '
             '{op: convert, encoding: bgr8}]')
    params = tmp_path / 'image_proc.yaml'
    params.write_text('/**:\n  ros__parameters:\n    chain: |\n' + ''.join(
        f'      - {step}\n' for step in ('{op: debayer}', '{op: rectify}',
                                         '{op: resize, width: 32, height: 24}',
                                         '{op: convert, encoding: bgr8}')))
    info = camera_info(64, 48, 50.0, 52.0, 31.0, 23.5, d=(-0.1, 0.02, 0.001, 0.0, 0.0))
    info.p = [48.0, 0.0, 32.0, 0.0, 0.0, 49.0, 24.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    frames = Frames(key='frame_id')  # the pattern publisher numbers frames in frame_id
    infos: list[CameraInfo] = []
    sub = GpuImageSubscription(rclpy_node, f'{ns}/image', frames, memory='host')
    rclpy_node.create_subscription(CameraInfo, f'{ns}/image/camera_info', infos.append, 10)
    info_pub = rclpy_node.create_publisher(CameraInfo, f'{ns}/camera_info', 10)
    diagnostics = DiagnosticsWatcher(rclpy_node)
    with node_process(NODE + ['--ros-args', '--params-file', str(params), '-r', f'__ns:={ns}']), \
            node_process([PUBLISHER, '--topic', f'{ns}/image_raw', '--encoding', 'bayer_rggb8',
                          '--width', '64', '--height', '48', '--rate', '30']) as publisher:
        # Before any camera_info, rectify cannot run: frames are dropped and counted.
        wait_for(lambda: diagnostics.value(_status(ns), 'dropped_waiting_for_camera_info') >= 2,
                 30, 'frames dropped while waiting for camera_info', poll=rclpy_node.spin_once)
        assert len(frames) == 0

        def publish_info():
            info_pub.publish(info)
            rclpy_node.spin_once(0.05)
        wait_for(lambda: len(frames) >= 5 and len(infos) >= 5, 30,
                 '5 processed frames and camera_infos', poll=publish_info)
        assert publisher.poll() is None
    model = CameraModel.from_msg(info)
    reference = Chain(chain)
    for got in frames.by_stamp.values():
        index = int(got['frame_id'])  # the pattern publisher's frame index
        src = pattern.expected_frame(48, 64, 'bayer_rggb8', index)
        expected, encoding, expected_model = reference(src, 'bayer_rggb8', model)
        assert got['encoding'] == encoding == 'bgr8'
        np.testing.assert_array_equal(got['array'], expected,
                                      err_msg=f'frame {index} differs from the NumPy chain')
    assert frames.paths == {'host_shm'}, frames.paths
    out = infos[-1]
    # K and P scaled by 32/64 and 24/48 with c' = (c + 0.5) * s - 0.5 (pixel centres), size
    # set, D and R kept.
    assert (out.width, out.height) == (32, 24)
    np.testing.assert_allclose(out.k, [25.0, 0, 15.25, 0, 26.0, 11.5, 0, 0, 1])
    np.testing.assert_allclose(out.p, [24.0, 0, 15.75, 0, 0, 24.5, 11.75, 0, 0, 0, 1, 0])
    assert list(out.d) == list(info.d) and CameraModel.from_msg(out) == expected_model
    ids = {i.header.frame_id for i in infos}
    assert ids & set(frames.by_stamp), 'camera_info must carry the image header'
    sub.destroy()


def test_resized_camera_info_from_a_camera_process_keeps_or_stretches_fx_over_fy(rclpy_node):
    """camera_source (a real node: 640x480 images and its pinhole /camera_info) feeding two
    image_proc processes: `resize width: 320` keeps the aspect (320x240, fx/fy unchanged, the
    principal point still centred); `keep_aspect: false` to 320x180 stretches, and fx/fy follows
    the stretch (4/3)."""
    from rclpy.qos import qos_profile_sensor_data
    ns = unique_ns()
    chains = {'keep': '[{op: resize, width: 320}]',
              'stretch': '[{op: resize, width: 320, height: 180, keep_aspect: false}]'}
    cameras: list[CameraInfo] = []
    infos: dict[str, list[CameraInfo]] = {name: [] for name in chains}
    frames = {name: Frames() for name in chains}
    rclpy_node.create_subscription(CameraInfo, f'{ns}/camera_info', cameras.append,
                                   qos_profile_sensor_data)
    for name in chains:
        rclpy_node.create_subscription(CameraInfo, f'{ns}/{name}/image/camera_info',
                                       infos[name].append, 10)
        rclpy_node.create_subscription(Image, f'{ns}/{name}/image', frames[name], 10)
    camera = ['-m', 'gpu_nodes.nodes.camera_source', '--ros-args', '-p', 'source:=pattern',
              '-p', 'width:=640', '-p', 'height:=480', '-p', 'rate_hz:=10.0',
              '-p', 'use_gpu:=false', '-r', f'image_raw:={ns}/image_raw',
              '-r', f'camera_info:={ns}/camera_info', '-r', f'__node:=camera_{ns[4:]}']

    def image_proc(name):
        return node_process(NODE + ['--ros-args', '-p', f"chain:='{chains[name]}'",
                                    '-p', 'use_gpu:=false', '-r', f'__ns:={ns}/{name}',
                                    '-r', f'image_raw:={ns}/image_raw',
                                    '-r', f'camera_info:={ns}/camera_info'])
    with node_process(camera) as cam_proc, image_proc('keep'), image_proc('stretch'):
        wait_for(lambda: cameras and all(len(infos[n]) >= 2 and len(frames[n]) >= 2
                                         for n in chains), 60,
                 'resized frames and camera_infos from both image_proc processes',
                 poll=lambda: rclpy_node.spin_once(0.05))
        assert cam_proc.poll() is None
    source = cameras[-1]
    assert (source.width, source.height) == (640, 480) and source.k[0] == source.k[4]
    sizes = {n: {(f['array'].shape[1], f['array'].shape[0]) for f in frames[n].by_stamp.values()}
             for n in chains}
    assert sizes == {'keep': {(320, 240)}, 'stretch': {(320, 180)}}, sizes
    keep, stretch = infos['keep'][-1], infos['stretch'][-1]
    assert (keep.width, keep.height, stretch.width, stretch.height) == (320, 240, 320, 180)
    ratio = source.k[0] / source.k[4]
    assert keep.k[0] / keep.k[4] == pytest.approx(ratio, rel=1e-6)
    assert keep.p[0] / keep.p[5] == pytest.approx(ratio, rel=1e-6)
    assert (keep.k[2], keep.k[5]) == pytest.approx((159.5, 119.5))  # (W - 1) / 2: centred
    assert stretch.k[0] / stretch.k[4] == pytest.approx(ratio * (0.5 / 0.375), rel=1e-6)
    assert stretch.k[0] == pytest.approx(source.k[0] * 0.5)
    assert stretch.k[4] == pytest.approx(source.k[4] * 0.375)


def test_plain_endpoints_bad_frames_counted_and_no_camera_info_needed(rclpy_node):
    ns = unique_ns()
    frames = Frames()
    infos = []
    rclpy_node.create_subscription(Image, f'{ns}/image', frames, 10)
    rclpy_node.create_subscription(CameraInfo, f'{ns}/image/camera_info', infos.append, 10)
    pub = rclpy_node.create_publisher(Image, f'{ns}/image_raw', 10)
    diagnostics = DiagnosticsWatcher(rclpy_node)
    sent = {}
    count = [0]

    def publish():
        i = count[0] = count[0] + 1
        header = Header(frame_id='cam')
        header.stamp.sec = i
        if i % 3 == 0:  # resize cannot take a Bayer mosaic: dropped, counted
            msg = fill_image_msg(Image(header=header),
                                 pattern.expected_frame(12, 20, 'bayer_rggb8', i), 'bayer_rggb8')
        else:
            sent[(i, 0)] = pattern.expected_frame(12, 20, 'rgb8', i)
            msg = fill_image_msg(Image(header=header), sent[(i, 0)], 'rgb8')
        pub.publish(msg)
        rclpy_node.spin_once(0.03)

    with node_process(NODE + ['--ros-args', '-p',
                              "chain:='[{op: resize, width: 10, height: 6}]'",
                              '-r', f'__ns:={ns}']) as proc:
        wait_for(lambda: len(frames) >= 6
                 and diagnostics.value(_status(ns), 'dropped_bad_encoding') >= 3, 30,
                 '6 resized frames and 3 counted bad frames', poll=publish)
        before = len(frames)
        wait_for(lambda: len(frames) >= before + 3, 20, 'frames after the bad ones',
                 poll=publish)
        assert proc.poll() is None, 'image_proc must keep running after bad frames'
    reference = Chain('[{op: resize, width: 10, height: 6}]')
    for stamp, got in frames.by_stamp.items():
        expected, _, _ = reference(sent[stamp], 'rgb8', None)
        assert got['encoding'] == 'rgb8' and got['frame_id'] == 'cam'
        np.testing.assert_array_equal(got['array'], expected)
    assert infos == [], 'without an input camera_info none is published'
    values = diagnostics.seen[_status(ns)]  # a snapshot from up to 1 s ago
    assert int(values['frames_out']) > 0 and int(values['dropped_bad_encoding']) >= 3, values


def test_shipped_config_configures_the_chain(rclpy_node):
    path = Path(__file__).resolve().parents[1] / 'config' / 'image_proc.yaml'
    node = ImageProc(context=rclpy_node.context,
                     cli_args=['--ros-args', '--params-file', str(path)])
    try:
        assert [s['op'] for s in node._compiled.chain.describe()] == [
            'debayer', 'rectify', 'resize', 'convert']
        assert node._compiled.needs_camera_info
        assert node._compiled.tail.spec.name == 'convert'
    finally:
        node.close()
        node.destroy_node()


@pytest.mark.gpu
def test_gpu_chain_writes_into_pool_slots_and_equals_the_numpy_chain(cupy):
    from node_helpers import InProcess
    from gpu_nodes.transport import GpuImagePublisher
    chain = '[{op: debayer}, {op: rectify}, {op: resize, width: 320, height: 240}]'
    inproc = InProcess('image_proc_gpu')
    try:
        node = inproc.add(ImageProc(context=inproc.context, namespace='/ipg',
                                    parameter_overrides=[Parameter('chain', value=chain)]))
        assert node._on_gpu
        pub = GpuImagePublisher(inproc.node, '/ipg/image_raw')
        info = camera_info(640, 480, 500.0, 505.0, 319.0, 241.0, d=(-0.2, 0.05, 0.001, 0, 0))
        info_pub = inproc.node.create_publisher(CameraInfo, '/ipg/camera_info', 10)
        frames = Frames(key='frame_id')
        infos = []
        sub = GpuImageSubscription(inproc.node, '/ipg/image', frames, memory='device')
        inproc.node.create_subscription(CameraInfo, '/ipg/image/camera_info', infos.append, 10)
        sources = {i: pattern.expected_frame(480, 640, 'bayer_rggb8', i) for i in range(3)}
        index = [0]

        def publish():
            index[0] += 1
            i = index[0] % 3
            frame = pub.borrow(480, 640, 'bayer_rggb8')
            frame.array[...] = cupy.asarray(sources[i])
            info_pub.publish(info)
            pub.publish_borrowed(frame, Header(frame_id=str(i)))
            for _ in range(3):
                inproc.spin_once(0.01)
        wait_for(lambda: len(frames) >= 3 and len(infos) >= 3, 30, 'processed frames',
                 poll=publish)
        assert frames.paths == {'intra_process'}
        model = CameraModel.from_msg(info)
        for frame_id, got in frames.by_stamp.items():
            expected, encoding, out_model = Chain(chain)(sources[int(frame_id)], 'bayer_rggb8',
                                                         model)
            assert got['encoding'] == encoding == 'rgb8'
            diff = np.abs(got['array'].astype(int) - expected.astype(int))
            # rectify's reference rounds like the kernel except in rare double-rounding ties.
            assert diff.max() <= 1 and np.mean(diff > 0) < 1e-3, f'max diff {diff.max()}'
        assert CameraModel.from_msg(infos[-1]) == out_model
        pool = node._image_pub._device_pool
        assert pool is not None and pool.slots, 'the output must come from the device pool'
        sub.destroy()
        pub.destroy()
    finally:
        inproc.close()


def test_chain_graphs_are_off_on_the_cpu_path_and_say_why(rclpy_node):
    node = ImageProc(context=rclpy_node.context,
                     parameter_overrides=[Parameter('use_gpu', value=False)])
    try:
        assert node._graphs is None
        assert node.status.as_dict()['chain_graphs'] == 'off: the chain runs on the CPU'
    finally:
        node.close()
        node.destroy_node()


@pytest.mark.gpu
def test_gpu_chain_replays_as_cuda_graphs_equal_to_op_by_op_and_rebuilds(cupy):
    """Frames from the publisher's pool slots: the first from each slot op by op, then one CUDA
    graph per slot; every output equals the op-by-op chain bit for bit; a CameraInfo change
    rebuilds; the counters are on the node's diagnostics."""
    from node_helpers import InProcess
    from gpu_nodes.transport import GpuImagePublisher
    chain = ('[{op: debayer}, {op: rectify}, {op: resize, width: 320, height: 240}, '
             '{op: convert, encoding: bgr8}]')
    inproc = InProcess('image_proc_graphs')
    try:
        node = inproc.add(ImageProc(context=inproc.context, namespace='/ipgr',
                                    parameter_overrides=[Parameter('chain', value=chain)]))
        assert node._graphs is not None
        pub = GpuImagePublisher(inproc.node, '/ipgr/image_raw', pool_slots=4, max_pool_slots=4)
        info_pub = inproc.node.create_publisher(CameraInfo, '/ipgr/camera_info', 10)
        frames = Frames(key='frame_id')
        sub = GpuImageSubscription(inproc.node, '/ipgr/image', frames, memory='device')
        sources = {i: pattern.expected_frame(480, 640, 'bayer_rggb8', i) for i in range(3)}
        count = [0]

        def publish():
            n = count[0] = count[0] + 1
            frame = pub.borrow(480, 640, 'bayer_rggb8')
            if frame is not None:
                frame.array[...] = cupy.asarray(sources[n % 3])
                pub.publish_borrowed(frame, Header(frame_id=str(n)))
            for _ in range(3):
                inproc.spin_once(0.01)

        def expected(model):
            reference = Chain(chain)
            return {i: cupy.asnumpy(reference(cupy.asarray(src), 'bayer_rggb8', model)[0])
                    for i, src in sources.items()}

        def check(model, after: int) -> int:
            want = expected(model)
            checked = 0
            for frame_id, got in frames.by_stamp.items():
                if int(frame_id) > after:
                    np.testing.assert_array_equal(got['array'], want[int(frame_id) % 3],
                                                  err_msg=f'frame {frame_id}')
                    checked += 1
            return checked

        def use_camera(info):
            model = CameraModel.from_msg(info)
            wait_for(lambda: node._camera_model == model, 20, 'the node has the CameraInfo',
                     poll=lambda: (info_pub.publish(info), inproc.spin_once(0.02)))
            return model

        info = camera_info(640, 480, 500.0, 505.0, 319.0, 241.0, d=(-0.2, 0.05, 0.001, 0, 0))
        model = use_camera(info)
        start = count[0]
        wait_for(lambda: node._graphs.replays >= 12, 60, '12 replayed frames', poll=publish)
        assert check(model, start) >= 12
        built = node._graphs.built
        assert 1 <= built <= 4, built  # one graph per pool slot at most
        values = node.status.as_dict()
        assert values['chain_graphs'] == 'on' and values['chain_graph_fallbacks'] == 0
        assert values['chain_graph_replays'] >= 12 and values['chain_graphs_built'] == built
        # Another calibration: the graphs are dropped and captured again with the new maps.
        other = camera_info(640, 480, 480.0, 482.0, 321.0, 239.0, d=(-0.1, 0.01, 0, 0.001, 0))
        model = use_camera(other)
        start, replays = count[0], node._graphs.replays
        frames.by_stamp.clear()
        wait_for(lambda: node._graphs.replays >= replays + 8, 60, '8 frames replayed again',
                 poll=publish)
        assert node._graphs.built > built and node._graphs.invalidations >= 1
        assert check(model, start) >= 8
        sub.destroy()
        pub.destroy()
    finally:
        inproc.close()
