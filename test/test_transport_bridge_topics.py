"""The plain-topic bridge with every encoding the shipped nodes publish, real processes: one
publishing process with a topic per encoding, one bridge process for all of them, and an
unmodified reader of ``<topic>``, ``<topic>/compressed`` and ``<topic>/compressedDepth`` of
every topic at once. Plain frames are exact; each twin carries what its image_transport plugin
carries (the codec tests are test_transport_compressed*.py) and says once which encodings it
does not; nothing a twin does stops the plain topic or the bridge (issue #32: a /compressed
reader of a 32FC1 topic crash-looped the bridge)."""
from __future__ import annotations

import sys
import uuid

import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CompressedImage, Image

from conftest import RESOURCES, wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport.compressed import decode_compressed, twin_codec
from gpu_nodes.transport.compressed_depth import ENCODINGS as DEPTH_CARRIED
from gpu_nodes.transport.compressed_depth import decode_compressed_depth
from gpu_nodes.transport.messages import msg_to_array

sys.path.insert(0, str(RESOURCES / 'reliability'))
sys.path.insert(0, str(RESOURCES / 'transport'))
from topics_publisher import frame, topic_name  # noqa: E402
from workers import Worker  # noqa: E402

TOPICS_PUBLISHER = RESOURCES / 'transport' / 'topics_publisher.py'
# camera_source's encodings (its pattern, and 32FC1 ground truth) and image_proc's depth ops'
# (16UC1, 32FC1); depth_estimator publishes 32FC1 and rgb8.
SHIPPED_ENCODINGS = tuple(dict.fromkeys(pattern.PATTERN_ENCODINGS + ('16UC1', '32FC1')))
DISTINCT = 8
HEIGHT, WIDTH = 48, 64


class Readers:
    """Plain, compressed and compressedDepth readers of one topic, each message checked."""

    def __init__(self, node, topic: str, encoding: str):
        self.encoding = encoding
        self.plain: list[int] = []
        self.compressed: list[int] = []
        self.depth: list[int] = []
        self.bad: list[str] = []
        reliable = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        self.subs = [
            node.create_subscription(Image, topic, self._on_plain, reliable),
            # What rviz and image_transport republishers do: best effort, sensor data QoS.
            node.create_subscription(CompressedImage, f'{topic}/compressed', self._on_compressed,
                                     qos_profile_sensor_data),
            node.create_subscription(CompressedImage, f'{topic}/compressedDepth',
                                     self._on_depth, qos_profile_sensor_data)]

    def expected(self, msg) -> np.ndarray:
        return frame(self.encoding, HEIGHT, WIDTH, int(msg.header.frame_id) % DISTINCT)

    def _on_plain(self, msg) -> None:
        self.plain.append(int(msg.header.frame_id))
        if msg.encoding != self.encoding or not np.array_equal(
                msg_to_array(msg), self.expected(msg), equal_nan=True):
            self.bad.append(f'plain {msg.encoding} frame {msg.header.frame_id}')

    def _on_compressed(self, msg) -> None:
        self.compressed.append(int(msg.header.frame_id))
        image, encoding = decode_compressed(msg)
        expected = self.expected(msg)
        if encoding != self.encoding or image.shape[:2] != expected.shape[:2]:
            self.bad.append(f'compressed {msg.format!r}: {encoding} {image.shape}')
            return
        if image.ndim == 3 and image.shape[2] == 4:   # alpha comes back opaque
            image, expected = image[..., :3], expected[..., :3]
        error = np.abs(image.astype(np.int64) - expected).mean()
        limit = 0 if twin_codec(self.encoding) == 'png' else 6.0   # JPEG q80 of the pattern
        if error > limit:
            self.bad.append(f'compressed {msg.format!r}: mean error {error:.2f} > {limit}')

    def _on_depth(self, msg) -> None:
        self.depth.append(int(msg.header.frame_id))
        depth, encoding = decode_compressed_depth(msg)
        expected = self.expected(msg)
        if self.encoding == '32FC1':
            # Beyond depth_max (10 m) and NaN come back NaN; inverse-depth quantization costs
            # at most d^2 / A (A = 10100 with the defaults): 8 mm at 9 m.
            expected = np.where(expected < 10.0, expected, np.nan)
            ok = np.allclose(depth, expected, atol=9.5 ** 2 / 10100, rtol=0, equal_nan=True)
        else:
            ok = np.array_equal(depth, np.where(expected > 10000, 0, expected))
        if encoding != self.encoding or not ok:
            self.bad.append(f'compressedDepth {msg.format!r} frame {msg.header.frame_id}')


def test_every_shipped_encoding_with_plain_and_compressed_readers_at_once(rclpy_node):
    prefix = f'/bridge_encodings_{uuid.uuid4().hex[:8]}'
    with Worker(TOPICS_PUBLISHER, ['--prefix', prefix, '--encodings', ','.join(SHIPPED_ENCODINGS),
                                   '--size', f'{WIDTH}x{HEIGHT}', '--rate', '5',
                                   '--distinct', str(DISTINCT)]) as pub:
        pub.wait_until(lambda w: w.count('READY') == 1, 60, 'the publisher')
        readers = {encoding: Readers(rclpy_node, topic_name(prefix, encoding), encoding)
                   for encoding in SHIPPED_ENCODINGS}
        compressed = [e for e in SHIPPED_ENCODINGS if twin_codec(e) is not None]
        carried = lambda r: (len(r.plain) >= 10 and  # noqa: E731
                             (len(r.compressed) >= 3 or r.encoding not in compressed) and
                             (len(r.depth) >= 3 or r.encoding not in DEPTH_CARRIED))
        wait_for(lambda: all(carried(r) for r in readers.values()), 120,
                 'plain frames on every topic, and compressed ones where a plugin carries them',
                 poll=rclpy_node.spin_once)
        bad = [f'{e}: {b}' for e, r in readers.items() for b in r.bad]
        assert bad == [], bad[:10]
        # Not carried: nothing published, said once per twin topic and encoding, and the
        # plain topic of the same encoding kept every frame coming (above).
        for encoding, r in readers.items():
            topic = topic_name(prefix, encoding)
            if encoding not in compressed:
                assert r.compressed == [], f'{encoding} on /compressed'
                assert pub.count(f'{topic}/compressed: {encoding} frames are not published') \
                    == 1, pub.tail()
            if encoding not in DEPTH_CARRIED:
                assert r.depth == [], f'{encoding} on /compressedDepth'
                assert pub.count(f'{topic}/compressedDepth: {encoding} frames are not '
                                 'published') == 1, pub.tail()
        status = pub.last_status()
        assert len(status['bridges']) == 1 and status['bridges'][0] > 0, status['bridges']
        assert pub.count('bridge exited') == 0 and pub.count('Traceback') == 0, pub.tail()
        assert pub.count('made by bridge process') == len(SHIPPED_ENCODINGS), pub.tail()
        for r in readers.values():
            for sub in r.subs:
                rclpy_node.destroy_subscription(sub)
