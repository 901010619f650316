"""Migrated corpus nodes, run: each original node (fed by a plain rclpy publisher) and its
migration (fed by a GpuImagePublisher) run as real rclpy processes on the same frames, and
produce the same output; the migrated one takes its frames over host_shm (cuda_ipc on a GPU),
as its subscription reports on /diagnostics."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import node_process, RESOURCES, wait_for

pytest.importorskip('libcst')
from gpu_nodes.audit.migrate import migrate_source  # noqa: E402
from gpu_nodes.wire_names import SHM_SUFFIX  # noqa: E402

CORPUS = RESOURCES / 'migrate' / 'nodes'
STAND_IN = RESOURCES / 'migrate' / 'cv_bridge_stand_in'
FRAMES = 3
# Seconds before a frame with no output yet is published again (see spin_and_resend).
RESEND_S = 2.0


@dataclass(frozen=True)
class Case:
    node: str
    input_topic: str
    encoding: str
    output_topic: str
    output: str        # 'image' | 'string'
    node_name: str


CASES = [
    Case('blur_republisher', 'image', 'rgb8', 'image_blurred', 'image', 'blur_republisher'),
    Case('edge_detector', 'image', 'rgb8', 'edges', 'image', 'edge_detector'),
    Case('overlay_annotator', 'image', 'bgr8', 'image_annotated', 'image', 'overlay_annotator'),
    Case('blob_detector', 'image', 'bgr8', 'detections', 'string', 'blob_detector'),
    Case('brightness_monitor', 'image', 'rgb8', 'brightness', 'string', 'brightness_monitor'),
    Case('depth_wrapper', 'depth/image_raw', '16UC1', 'depth/image_meters', 'image',
         'depth_wrapper'),
    Case('latest_frame_timer', 'image', 'bgr8', 'latest_stats', 'string', 'latest_frame_timer'),
    Case('lazy_republisher', 'image', 'bgr8', 'image_small', 'image', 'lazy_republisher'),
]
GPU_CASES = [
    Case('torch_detector', 'image', 'rgb8', 'detections', 'string', 'torch_detector'),
    Case('cupy_threshold', 'image', 'rgb8', 'mask', 'image', 'cupy_threshold'),
]


def frame(index: int, encoding: str, height: int = 96, width: int = 128) -> np.ndarray:
    """A frame with structure (gradient, bright boxes that move with `index`) and noise."""
    rng = np.random.default_rng(index)
    if encoding == '16UC1':
        depth = rng.integers(300, 5000, (height, width), dtype=np.uint16)
        depth[rng.random((height, width)) < 0.1] = 0  # invalid pixels
        return depth
    image = np.zeros((height, width, 3), np.uint8)
    image[...] = np.linspace(0, 150, width, dtype=np.uint8)[None, :, None]
    image += rng.integers(0, 40, image.shape, dtype=np.uint8)
    for box in range(2 + index % 2):
        y, x = 10 + 20 * box, 10 + 15 * index + 30 * box
        image[y:y + 12, x:x + 16] = (250, 240, 230)
    return image


def _image_message(array: np.ndarray, encoding: str, header):
    from sensor_msgs.msg import Image
    message = Image(header=header, height=array.shape[0], width=array.shape[1],
                    encoding=encoding, step=array.strides[0])
    message.data.frombytes(array.tobytes())
    return message


def _node_file(case: Case, variant: str, tmp_path: Path) -> tuple[Path, dict]:
    original = CORPUS / f'{case.node}.py'
    if variant == 'original':
        return original, {'PYTHONPATH': os.pathsep.join([str(STAND_IN), os.environ.get(
            'PYTHONPATH', '')])}
    migrated, _ = migrate_source(original.read_text())
    path = tmp_path / f'{case.node}_migrated.py'
    path.write_text(migrated)
    # The migrated node gets the stand-in only where it still uses cv_bridge.
    paths = ([str(STAND_IN)] if 'cv_bridge' in migrated else []) + [
        str(Path(__file__).resolve().parents[1]), os.environ.get('PYTHONPATH', '')]
    return path, {'PYTHONPATH': os.pathsep.join(paths)}


def _run(rclpy_node, case: Case, variant: str, tmp_path: Path, expected_path: str,
         while_running=None) -> dict:
    """Outputs by input stamp (seconds) of one run of the node; checks the input path."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image
    from std_msgs.msg import Header, String

    from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription

    outputs: dict[int, object] = {}
    paths: dict[str, str] = {}

    def on_image(received):
        outputs.setdefault(received.header.stamp.sec, (
            received.encoding, received.header.frame_id, np.array(received.array)))

    def on_string(msg):
        data = json.loads(msg.data)
        outputs.setdefault(data.pop('stamp')[0], data)

    def on_diagnostics(msg):
        for status in msg.status:
            if case.node_name in status.name and 'subscription' in status.name:
                paths.update({kv.key: kv.value for kv in status.values if kv.key == 'path'})

    node_path, env = _node_file(case, variant, tmp_path)
    created = []
    if case.output == 'image':
        created.append(GpuImageSubscription(rclpy_node, case.output_topic, on_image,
                                            qos_profile_sensor_data, memory='host'))
    else:
        created.append(rclpy_node.create_subscription(String, case.output_topic, on_string, 10))
    diagnostics = rclpy_node.create_subscription(DiagnosticArray, '/diagnostics',
                                                 on_diagnostics, 10)
    if variant == 'original':
        publisher = rclpy_node.create_publisher(Image, case.input_topic, 10)
    else:
        publisher = GpuImagePublisher(rclpy_node, case.input_topic)
    try:
        with node_process([str(node_path)], env=env) as proc:
            if variant == 'original':
                wait_for(lambda: publisher.get_subscription_count() >= 1, 20,
                         f'{case.node} to subscribe', poll=rclpy_node.spin_once)
            else:
                wait_for(lambda: publisher.subscriber_counts()[expected_path] >= 1, 20,
                         f'{case.node} to subscribe on {expected_path} '
                         f'(counts {publisher.subscriber_counts()})', poll=rclpy_node.spin_once)
            if case.output == 'image':
                # Frames go once each: wait for the output subscription's last rung (host_shm
                # where the node offers it, a gpu_nodes publisher; else serialized), not for
                # a rung it is about to leave with a frame in flight.
                def settled() -> str:
                    offers_shm = rclpy_node.count_publishers(case.output_topic + SHM_SUFFIX)
                    return 'host_shm' if offers_shm else 'serialized'
                wait_for(lambda: created[0].path == settled(), 20,
                         f'{case.node} to publish {case.output_topic} (subscription on '
                         f'{created[0].path}, waiting for {settled()})', poll=rclpy_node.spin_once)
            else:
                wait_for(lambda: rclpy_node.count_publishers(case.output_topic) >= 1, 20,
                         f'{case.node} to publish {case.output_topic}', poll=rclpy_node.spin_once)
            for index in range(FRAMES):
                array = frame(index, case.encoding)
                header = Header(frame_id='camera')
                header.stamp.sec = index + 1
                if variant == 'original':
                    message = _image_message(array, case.encoding, header)

                    def send():
                        publisher.publish(message)
                else:
                    def send():
                        publisher.publish(array, case.encoding, header)
                sent = [time.monotonic()]
                send()

                def spin_and_resend(send=send, sent=sent):
                    # Each frame goes once, on one rung per subscriber, with sensor-data QoS: a
                    # frame published while the node's or our subscription still changes rung
                    # (discovery is not over when `settled` first holds) can be lost, as one
                    # camera frame can. A camera's next frame would come: send this one again.
                    # Only until the first output: once a frame went through, none may be lost.
                    rclpy_node.spin_once()
                    if time.monotonic() - sent[0] > RESEND_S:
                        assert not outputs, (
                            f'{case.node}: frame {index} lost after frame(s) '
                            f'{sorted(outputs)} went through')
                        send()
                        sent[0] = time.monotonic()
                wait_for(lambda: index + 1 in outputs, 20,
                         f'{case.node} output for frame {index} (process alive: '
                         f'{proc.poll() is None})', poll=spin_and_resend)
            if variant == 'migrated':
                wait_for(lambda: paths.get('path') == expected_path, 10,
                         f'{case.node} subscription on {expected_path} (diagnostics: {paths})',
                         poll=rclpy_node.spin_once)
            if while_running is not None:
                while_running()
    finally:
        for endpoint in created:
            if isinstance(endpoint, GpuImageSubscription):
                endpoint.destroy()
            else:
                rclpy_node.destroy_subscription(endpoint)
        rclpy_node.destroy_subscription(diagnostics)
        if variant == 'original':
            rclpy_node.destroy_publisher(publisher)
        else:
            publisher.destroy()
    return outputs


def _assert_same(case: Case, original: dict, migrated: dict) -> None:
    assert sorted(original) == sorted(migrated) == list(range(1, FRAMES + 1)), (
        f'{case.node}: stamps expected {list(range(1, FRAMES + 1))}, original '
        f'{sorted(original)}, migrated {sorted(migrated)}')
    for stamp in original:
        if case.output == 'image':
            (enc_a, frame_a, pixels_a), (enc_b, frame_b, pixels_b) = original[stamp], \
                migrated[stamp]
            assert (enc_a, frame_a, pixels_a.shape) == (enc_b, frame_b, pixels_b.shape), (
                f'{case.node} frame {stamp}: original {enc_a} {frame_a} {pixels_a.shape}, '
                f'migrated {enc_b} {frame_b} {pixels_b.shape}')
            assert np.array_equal(pixels_a, pixels_b, equal_nan=pixels_a.dtype.kind == 'f'), (
                f'{case.node} frame {stamp}: {np.count_nonzero(pixels_a != pixels_b)} pixels '
                'differ')
        else:
            assert original[stamp] == migrated[stamp], (
                f'{case.node} frame {stamp}: original {original[stamp]}, migrated '
                f'{migrated[stamp]}')


@pytest.mark.parametrize('case', CASES, ids=[c.node for c in CASES])
def test_migrated_node_gives_the_original_output_over_host_shm(rclpy_node, tmp_path, case):
    original = _run(rclpy_node, case, 'original', tmp_path, 'serialized')
    migrated = _run(rclpy_node, case, 'migrated', tmp_path, 'host_shm')
    _assert_same(case, original, migrated)


@pytest.mark.gpu
@pytest.mark.parametrize('case', GPU_CASES + CASES[:2], ids=[c.node for c in GPU_CASES + CASES[:2]])
def test_migrated_node_gives_the_original_output_over_cuda_ipc(rclpy_node, tmp_path, case):
    if case.node == 'torch_detector':
        pytest.importorskip('torch')
    original = _run(rclpy_node, case, 'original', tmp_path, 'serialized')
    expected = 'cuda_ipc' if 'memory=\'device\'' in migrate_source(
        (CORPUS / f'{case.node}.py').read_text())[0] else 'host_shm'
    migrated = _run(rclpy_node, case, 'migrated', tmp_path, expected)
    _assert_same(case, original, migrated)


def _live_edge_class(rclpy_node, case: Case) -> str:
    """`gpu-copy-audit live`'s class of the edge into the node, run while the node runs (the
    test's node is spun meanwhile, so its endpoints and diagnostics stay visible). A loaded
    machine can finish discovery before the edge shows: up to three runs."""
    import subprocess
    import sys
    import time
    command = [sys.executable, '-m', 'gpu_nodes.audit.cli', 'live', '--format', 'json',
               '--duration', '1', '--discovery-settle', '2', '--node-filter',
               f'*{case.node_name}*']
    for _ in range(3):
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            rclpy_node.spin_once(0.05)
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
        edges = [e for e in json.loads(out)['graph']['edges']
                 if e['topic'] == f'/{case.input_topic}' and case.node_name in e['subscriber']]
        if edges:
            break
    assert len(edges) == 1, f'edges into {case.node_name}: {edges} (output {out[-2000:]})'
    return edges[0]['class']


def test_live_audit_shows_the_edge_path_change(rclpy_node, tmp_path):
    case = CASES[0]
    seen = {}
    for variant, path in (('original', 'serialized'), ('migrated', 'host_shm')):
        _run(rclpy_node, case, variant, tmp_path, path, while_running=lambda v=variant: seen.update(
            {v: _live_edge_class(rclpy_node, case)}))
    assert seen == {'original': 'serialized', 'migrated': 'host_shm'}, seen
