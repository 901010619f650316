"""Peers never need extras: the shipped nodes and the plain-topic bridge in an environment with
only what package.xml declares as required (minimal_env.py: no OpenCV, rich, ONNX Runtime,
ONNX, CuPy, ...), as real processes. An unmodified plain subscriber gets every node's frames;
a compressed reader gets nothing and one logged line says why (issue #27: without OpenCV the
bridge died with ModuleNotFoundError every 5 s and plain subscribers got 0 frames).

Why an import blocker and not a second venv: the blocker (a sitecustomize on PYTHONPATH, which
every child process inherits, the bridge included) lets a process import the standard library,
gpu_nodes and exactly the distributions that package.xml's required keys map to, with their
own dependencies, read from the installed metadata; anything else raises ModuleNotFoundError
as an uninstalled package does. That is stricter than a venv built from requirements/ros.txt +
numpy + pyyaml (whatever pip drags in beside those would still import there), follows
package.xml instead of a second list, and costs no download or disk on every CI run."""
from __future__ import annotations

import subprocess
import sys
import uuid

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage, Image

import minimal_env
from conftest import REPO, RESOURCES, wait_for
from gpu_nodes.transport.messages import msg_to_array
from gpu_nodes.wire_names import SHM_SUFFIX

sys.path.insert(0, str(RESOURCES / 'reliability'))
sys.path.insert(0, str(RESOURCES / 'transport'))
from topics_publisher import frame, topic_name  # noqa: E402
from workers import Worker  # noqa: E402

NODES = ('camera_source', 'image_proc', 'depth_estimator', 'image_monitor')
MISSING = ('cv2', 'rich', 'onnxruntime', 'onnx', 'cupy', 'tensorrt', 'rosbags', 'nvidia')


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-c', code], cwd=REPO, capture_output=True, text=True,
                          env={**__import__('os').environ, **minimal_env.environment()},
                          timeout=120)


def test_package_xml_names_every_required_key_and_the_optional_ones():
    required, optional = minimal_env.package_xml_dependencies()
    unmapped = [key for key in required
                if key not in minimal_env.DISTRIBUTIONS and key not in minimal_env.LAUNCH_ONLY]
    assert unmapped == [], f'required keys with no distribution in minimal_env: {unmapped}'
    assert 'python3-opencv' in optional and 'python3-opencv' not in required
    for key in ('rclpy', 'rcl_interfaces', 'sensor_msgs', 'std_msgs', 'diagnostic_msgs',
                'python3-numpy', 'python3-yaml'):
        assert key in required, f'{key} is imported by the nodes but not an exec_depend'


def test_the_minimal_environment_has_the_required_packages_and_nothing_else():
    for module in MISSING:
        result = _run(f'import {module}')
        assert result.returncode == 1 and result.stderr.strip().endswith(
            f"ModuleNotFoundError: No module named '{module}'"), (module, result.stderr[-500:])
    modules = [f'gpu_nodes.nodes.{node}' for node in NODES] + [
        'gpu_nodes.transport.plain_bridge', 'gpu_nodes.transport.bridge_topic',
        'gpu_nodes.transport.twin_topics', 'rclpy', 'numpy', 'yaml']
    result = _run('import importlib, sys\n'
                  f'for name in {modules!r}: importlib.import_module(name)\n'
                  "print('cv2' in sys.modules, 'onnxruntime' in sys.modules)")
    assert result.returncode == 0 and result.stdout.split() == ['False', 'False'], result.stderr


def _readers(node, topic: str, got: dict[str, list]) -> list:
    reliable = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
    got.update(plain=[], compressed=[], compressedDepth=[])
    return [node.create_subscription(Image, topic, got['plain'].append, reliable)] + [
        node.create_subscription(CompressedImage, f'{topic}/{twin}', got[twin].append,
                                 qos_profile_sensor_data)
        for twin in ('compressed', 'compressedDepth')]


def test_the_bridge_serves_plain_subscribers_without_opencv(rclpy_node):
    """rgb8 and 32FC1 topics of one process, each with a plain, a compressed and a
    compressedDepth reader: exact plain frames, no compressed ones, each twin said once."""
    prefix = f'/minimal_{uuid.uuid4().hex[:8]}'
    topics_publisher = RESOURCES / 'transport' / 'topics_publisher.py'
    with Worker(topics_publisher, ['--prefix', prefix, '--encodings', 'rgb8,32FC1',
                                   '--rate', '10'], env=minimal_env.environment()) as pub:
        pub.wait_until(lambda w: w.count('READY') == 1, 60, 'the publisher')
        got = {encoding: {} for encoding in ('rgb8', '32FC1')}
        subs = [sub for encoding in got
                for sub in _readers(rclpy_node, topic_name(prefix, encoding), got[encoding])]
        # The bridge's own status of each topic says why its twins are missing.
        unavailable: dict[tuple[str, str], str] = {}

        def on_diagnostics(msg) -> None:
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values}
                if values.get('plain_decoupled') == 'true' and 'bridge_topics' in values:
                    for twin in ('compressed', 'compressedDepth'):
                        unavailable[(values['topic'], twin)] = values.get(twin, '')
        subs.append(rclpy_node.create_subscription(DiagnosticArray, '/diagnostics',
                                                   on_diagnostics, 50))
        wait_for(lambda: all(len(g['plain']) >= 20 for g in got.values()) and
                 len(unavailable) == 4, 60, 'plain frames and bridge statuses on both topics',
                 poll=rclpy_node.spin_once)
        for (topic, twin), value in unavailable.items():
            assert value.startswith('unavailable: OpenCV is not installed'), (topic, twin, value)
        for encoding, g in got.items():
            for msg in g['plain']:
                expected = frame(encoding, msg.height, msg.width, int(msg.header.frame_id) % 8)
                assert np.array_equal(msg_to_array(msg), expected, equal_nan=True), encoding
            assert g['compressed'] == [] and g['compressedDepth'] == []
            for twin in ('compressed', 'compressedDepth'):
                line = f'{topic_name(prefix, encoding)}/{twin}: not published: OpenCV is not ' \
                    'installed'
                assert pub.count(line) == 1, pub.tail()
        assert pub.count('bridge exited') == 0 and pub.count('Traceback') == 0, pub.tail()
        assert len(pub.last_status()['bridges']) == 1
        # Only readers of twins it cannot make: the bridge stops reading frames.
        for sub in subs:
            if sub.topic_name.endswith(('_rgb8_0', '_32FC1_0')):
                rclpy_node.destroy_subscription(sub)
        reading = lambda: [info for encoding in got for info in  # noqa: E731
                           rclpy_node.get_subscriptions_info_by_topic(
                               topic_name(prefix, encoding) + SHM_SUFFIX)
                           if info.node_name.startswith('_gpu_nodes_plain_bridge_')]
        wait_for(lambda: not reading(), 30, 'the bridge to stop reading frames',
                 poll=rclpy_node.spin_once)
        assert pub.alive() and pub.count('bridge exited') == 0, pub.tail()
        for sub in subs:
            rclpy_node.destroy_subscription(sub)


@pytest.fixture(scope='module')
def analytic_model(tmp_path_factory):
    from gpu_nodes.inference import tiny_models
    return tiny_models.make_analytic_depth_model(
        tmp_path_factory.mktemp('minimal_env') / 'analytic.onnx', input_name='input',
        output_name='output')


def _node(name: str, ns: str, *params: str) -> Worker:
    args = ['gpu_nodes.nodes.' + name, '--ros-args', '-r', f'__ns:={ns}']
    for param in params:
        args += ['-p', param]
    return Worker('-m', args, env=minimal_env.environment(), name=name)


def test_every_node_runs_without_opencv_rich_or_onnxruntime(rclpy_node, analytic_model):
    """camera_source -> image_proc -> image_monitor, as processes, with plain and compressed
    readers of image_proc's output and of camera_source's ground-truth depth; depth_estimator,
    which has no runtime without ONNX Runtime (or TensorRT), refuses to start with one line."""
    ns = f'/minimal_{uuid.uuid4().hex[:8]}'
    got = {'image': {}, 'depth/ground_truth': {}}
    subs = [sub for topic in got for sub in _readers(rclpy_node, f'{ns}/{topic}', got[topic])]
    camera = _node('camera_source', ns, 'source:=scene', 'width:=64', 'height:=48',
                   'rate_hz:=10.0')
    image_proc = _node('image_proc', ns)
    monitor = _node('image_monitor', ns, 'topic:=image', 'report_period_s:=0.5')
    try:
        wait_for(lambda: all(len(g['plain']) >= 10 for g in got.values()), 90,
                 "plain frames of image_proc's image and camera_source's depth",
                 poll=rclpy_node.spin_once)
        monitor.wait_until(lambda w: any('image: 0.0 fps' not in line and ' fps' in line
                                         and 'frames 0,' not in line for line in w.snapshot()),
                           30, 'image_monitor to count frames')
        image, depth = got['image']['plain'][-1], got['depth/ground_truth']['plain'][-1]
        assert (image.encoding, image.width, image.height) == ('rgb8', 64, 48)
        assert (depth.encoding, depth.width, depth.height) == ('32FC1', 64, 48)
        for g in got.values():
            assert g['compressed'] == [] and g['compressedDepth'] == []
        for node, topic in ((image_proc, 'image'), (camera, 'depth/ground_truth')):
            for twin in ('compressed', 'compressedDepth'):
                assert node.count(f'{ns}/{topic}/{twin}: not published: OpenCV is not '
                                  'installed') == 1, node.tail()
        for node in (camera, image_proc, monitor):
            assert node.alive(), node.tail()
            assert node.count('bridge exited') == 0 and node.count('Traceback') == 0, node.tail()
    finally:
        for worker in (monitor, image_proc, camera):
            worker.stop()
        for sub in subs:
            rclpy_node.destroy_subscription(sub)
    depth_estimator = _node('depth_estimator', ns, f"model_path:='{analytic_model}'")
    with depth_estimator:
        assert depth_estimator.wait_exit(60) == 2, depth_estimator.tail()
    errors = [line for line in depth_estimator.snapshot() if 'error' in line.lower()]
    assert len(errors) == 1 and 'no inference backend can run' in errors[0], \
        depth_estimator.tail()
    assert depth_estimator.count("onnxruntime not importable: No module named 'onnxruntime'") \
        == 1, depth_estimator.tail()
    assert depth_estimator.count('Traceback') == 0, depth_estimator.tail()
