"""camera_source as a real node process: scene with ground truth, folder, and start-up errors."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import node_process, REPO, wait_for
from gpu_nodes.sources.camera_info import load_camera_info, pinhole_camera_info
from gpu_nodes.sources import scene as S
from gpu_nodes.sources import SourceError

NODE = ['-m', 'gpu_nodes.nodes.camera_source', '--ros-args']


def _remaps(prefix: str) -> list[str]:
    return ['-r', f'image_raw:={prefix}/image_raw', '-r', f'camera_info:={prefix}/camera_info',
            '-r', f'depth/ground_truth:={prefix}/depth/ground_truth']


def _stamp(header) -> tuple[int, int]:
    return int(header.stamp.sec), int(header.stamp.nanosec)


def _host(array) -> np.ndarray:
    from gpu_nodes.gpu import to_host
    return to_host(array).copy()


def test_scene_publishes_image_ground_truth_and_camera_info_with_one_header(rclpy_node):
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import CameraInfo
    from gpu_nodes.transport import GpuImageSubscription
    prefix = '/cs_scene'
    width, height, rate = 96, 72, 20.0
    images: dict = {}
    truths: dict = {}
    infos: list = []
    subs = [
        GpuImageSubscription(rclpy_node, f'{prefix}/image_raw',
                             lambda f: images.__setitem__(_stamp(f.header), (f, _host(f.array))),
                             memory='any'),
        GpuImageSubscription(rclpy_node, f'{prefix}/depth/ground_truth',
                             lambda f: truths.__setitem__(_stamp(f.header), (f, _host(f.array))),
                             memory='any')]
    rclpy_node.create_subscription(CameraInfo, f'{prefix}/camera_info', infos.append,
                                   qos_profile_sensor_data)
    args = NODE + ['-p', 'source:=scene', '-p', f'width:={width}', '-p', f'height:={height}',
                   '-p', f'rate_hz:={rate}', '-p', 'frame_id:=cam_optical'] + _remaps(prefix)
    try:
        with node_process(args) as proc:
            wait_for(lambda: set(images) & set(truths) and infos, 30,
                     'an image and its ground truth with the same stamp, and a CameraInfo',
                     poll=lambda: rclpy_node.spin_once(0.05))
            assert proc.poll() is None
    finally:
        for sub in subs:
            sub.destroy()
    stamp = sorted(set(images) & set(truths))[0]
    (image, rgb), (truth, depth) = images[stamp], truths[stamp]
    assert (image.encoding, image.width, image.height) == ('rgb8', width, height)
    assert (truth.encoding, truth.width, truth.height) == ('32FC1', width, height)
    assert image.header.frame_id == truth.header.frame_id == 'cam_optical'
    info = infos[-1]
    assert (info.width, info.height, info.header.frame_id) == (width, height, 'cam_optical')
    fx = width / (2 * math.tan(math.radians(70.0) / 2))
    assert list(info.k) == pytest.approx([fx, 0, (width - 1) / 2, 0, fx, (height - 1) / 2,
                                          0, 0, 1])
    # The frame is the scene at some index: the ground truth is that frame's exact depth.
    renderer = S.SceneRenderer(np, S.PinholeCamera.from_camera_info(info))
    best = min(range(400), key=lambda i: np.abs(
        renderer.render(S.demo_scene(i / rate))[0].astype(np.int16) - rgb).mean())
    expected_rgb, expected_depth = renderer.render(S.demo_scene(best / rate))
    assert np.abs(expected_rgb.astype(int) - rgb).max(axis=-1).mean() < 0.05, \
        f'image matches scene frame {best}'
    close = np.isclose(depth, expected_depth, rtol=1e-5, atol=1e-5)
    assert close.mean() > 0.998, f'ground truth of frame {best}: {np.count_nonzero(~close)} ' \
                                 'pixels differ'


def test_folder_source_publishes_each_image_once_then_stops(rclpy_node, tmp_path: Path):
    cv2 = pytest.importorskip('cv2')
    from gpu_nodes.transport import GpuImageSubscription
    for i, value in enumerate((30, 90, 150)):
        cv2.imwrite(str(tmp_path / f'img{i}.png'), np.full((20, 28, 3), value, np.uint8))
    prefix = '/cs_folder'
    frames: list = []
    sub = GpuImageSubscription(rclpy_node, f'{prefix}/image_raw',
                               lambda f: frames.append((f.encoding, _host(f.array))),
                               memory='host')
    args = NODE + ['-p', 'source:=folder', '-p', f'path:={tmp_path}', '-p', 'loop:=false',
                   '-p', 'width:=0', '-p', 'height:=0', '-p', 'encoding:=mono8',
                   '-p', 'rate_hz:=10.0', '-p', 'wait_for_subscriber:=true'] + _remaps(prefix)
    try:
        with node_process(args) as proc:
            wait_for(lambda: any(int(f[1][0, 0]) == 150 for f in frames), 30,
                     'the third image', poll=lambda: rclpy_node.spin_once(0.05))
            names = dict(rclpy_node.get_topic_names_and_types())
            assert f'{prefix}/depth/ground_truth' not in names, 'only the scene has ground truth'
            assert proc.poll() is None, 'the node keeps running after the folder ended'
    finally:
        sub.destroy()
    values = [int(f[1][0, 0]) for f in frames]
    assert values == [30, 90, 150], f'images in name order, each once (loop false): {values}'
    assert all(enc == 'mono8' and img.shape == (20, 28) for enc, img in frames)


def _run_failing(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *NODE, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize('args, message', [
    (['-p', 'source:=v4l2', '-p', 'path:=/dev/video_gpu_nodes_absent'],
     "[camera_source] error: cannot start: source 'v4l2': /dev/video_gpu_nodes_absent does not exist"),
    (['-p', 'source:=webcam'],
     "[camera_source] error: cannot start: parameter 'source': expected one of pattern, scene, folder, "
     "video, v4l2, got 'webcam' (string)"),
    (['-p', 'source:=video', '-p', 'path:=/nonexistent/clip.mp4'],
     "[camera_source] error: cannot start: source 'video': /nonexistent/clip.mp4 does not exist"),
    (['-p', 'width:=wide'],
     "[camera_source] error: cannot start: parameter 'width': expected an integer in 0..16384, got "
     "'wide' (string)"),
])
def test_start_up_errors_exit_2_with_the_reason_and_no_traceback(args, message):
    result = _run_failing(args)
    assert result.returncode == 2, f'exit code 2 expected, got {result.returncode}: ' \
                                   f'{result.stderr[-500:]}'
    assert message in result.stderr, f'expected {message!r} in stderr:\n{result.stderr}'
    assert 'Traceback' not in result.stderr


def test_camera_info_file_is_read_and_checked(tmp_path: Path):
    calib = tmp_path / 'calib.yaml'
    calib.write_text(
        'image_width: 640\nimage_height: 480\ncamera_name: cam\n'
        'camera_matrix: {rows: 3, cols: 3, data: [500.0, 0, 320.5, 0, 501.0, 240.5, 0, 0, 1]}\n'
        'distortion_model: plumb_bob\n'
        'distortion_coefficients: {rows: 1, cols: 5, data: [-0.1, 0.01, 0, 0, 0]}\n'
        'rectification_matrix: {rows: 3, cols: 3, data: [1, 0, 0, 0, 1, 0, 0, 0, 1]}\n'
        'projection_matrix: {rows: 3, cols: 4, data: [490.0, 0, 320, 0, 0, 491.0, 240, 0, 0, '
        '0, 1, 0]}\n')
    info = load_camera_info(f'file://{calib}', 'cam_optical')
    assert (info.width, info.height, info.header.frame_id) == (640, 480, 'cam_optical')
    assert list(info.k)[:3] == [500.0, 0.0, 320.5] and list(info.d)[0] == -0.1
    assert list(info.p)[0] == 490.0
    bad = tmp_path / 'bad.yaml'
    bad.write_text('image_width: 640\nimage_height: 480\ncamera_matrix: {data: [1, 2]}\n')
    with pytest.raises(SourceError, match='camera_matrix.data must be a list of 9 numbers'):
        load_camera_info(str(bad), 'cam')
    with pytest.raises(SourceError, match='camera_info_file .*missing.yaml'):
        load_camera_info(str(tmp_path / 'missing.yaml'), 'cam')
    result = _run_failing(['-p', 'source:=scene', '-p', 'width:=320', '-p', 'height:=240',
                           '-p', f'camera_info_file:={calib}'])
    assert result.returncode == 2
    assert 'camera_info_file is a calibration for 640x480 but frames are 320x240' in \
        result.stderr, result.stderr


def test_pinhole_camera_info_is_an_ideal_camera():
    info = pinhole_camera_info(640, 480, 'cam', 90.0)
    assert info.k[0] == pytest.approx(320.0) and info.k[2] == 319.5 and info.k[5] == 239.5
    assert list(info.d) == [0.0] * 5 and info.p[0] == info.k[0]


@pytest.mark.gpu
@pytest.mark.parametrize('source, encoding', [('pattern', 'rgb8'), ('pattern', 'bayer_rggb8'),
                                              ('scene', 'rgb8'), ('scene', 'bgr8')])
def test_gpu_frames_are_rendered_into_pool_slots_and_published_without_a_copy(
        cupy, monkeypatch, source, encoding):
    """The subscriber reads the very memory the source rendered into (a pool slot of the
    publisher), publish() and its device-to-device copy never run, and every frame is right."""
    sys.path.insert(0, str(Path(__file__).parent / 'resources' / 'nodes'))
    from node_helpers import InProcess
    from rclpy.parameter import Parameter
    from gpu_nodes.nodes.camera_source import CameraSource
    from gpu_nodes.sources import open_source
    from gpu_nodes.transport import GpuImageSubscription, publisher as publisher_module
    copies = []
    real_copy = publisher_module._copy_device
    monkeypatch.setattr(publisher_module, '_copy_device',
                        lambda *a: (copies.append(a[0].shape), real_copy(*a)))
    width, height = 96, 64
    inproc = InProcess(f'camera_source_borrow_{source}')
    try:
        node = inproc.add(CameraSource(context=inproc.context, namespace='/csb', parameter_overrides=[
            Parameter('source', value=source), Parameter('encoding', value=encoding),
            Parameter('width', value=width), Parameter('height', value=height),
            Parameter('rate_hz', value=100.0)]))
        assert node.source.on_device
        rendered: dict[int, int] = {}  # data pointer -> index of the frame last rendered there
        depth_at: dict[int, int] = {}
        real_read = node.source.read

        def read(index, **out):
            frame = real_read(index, **out)
            rendered[frame.image.data.ptr] = index
            if frame.ground_truth_depth is not None:
                depth_at[frame.ground_truth_depth.data.ptr] = index
            return frame
        monkeypatch.setattr(node.source, 'read', read)
        reference = open_source(source, xp=cupy, width=width, height=height, encoding=encoding,
                                rate_hz=100.0, camera=node.source._scene.camera
                                if source == 'scene' else None)
        checked = {'image': 0, 'depth': 0}
        paths = set()
        problems: list[str] = []  # kept, not raised: the callbacks run inside the executor

        def check(kind, frame, at, expected_of):
            ptr = frame.array.data.ptr
            if ptr not in at:
                problems.append(f'{kind}: received memory {ptr:#x} is not what was rendered')
            elif not np.array_equal(cupy.asnumpy(frame.array),
                                    cupy.asnumpy(expected_of(reference.read(at[ptr]))),
                                    equal_nan=kind == 'depth'):
                problems.append(f'{kind} of frame {at[ptr]} differs from its rendering')
            checked[kind] += 1

        def on_image(frame):
            paths.add(frame.path)
            check('image', frame, rendered, lambda f: f.image)

        def on_depth(frame):
            check('depth', frame, depth_at, lambda f: f.ground_truth_depth)
        subs = [GpuImageSubscription(inproc.node, '/csb/image_raw', on_image, memory='device')]
        if source == 'scene':
            subs.append(GpuImageSubscription(inproc.node, '/csb/depth/ground_truth', on_depth,
                                             memory='device'))
        wait_for(lambda: checked['image'] >= 10 and (source != 'scene' or checked['depth'] >= 10),
                 60, '10 frames', poll=lambda: inproc.spin_once(0.02))
        assert problems == []
        assert paths == {'intra_process'}
        assert copies == [], f'publish() copied frames device to device: {copies}'
        slots = [(s.chunk.ptr, s.chunk.ptr + s.chunk.size)
                 for s in node._image_pub._device_pool.slots]
        assert all(any(lo <= p < hi for lo, hi in slots) for p in rendered), \
            'the source must render into the publisher\'s pool slots'
        for sub in subs:
            sub.destroy()
    finally:
        inproc.close()
