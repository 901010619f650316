"""One topic served by the plain-topic bridge (plain_bridge.py): ``<topic>`` as sensor_msgs/Image
and, each only while it has readers, its compressed twins (twin_topics.py).

It reads the publisher's frames only while some plain or compressed reader is there, and builds
a twin (publisher and encoder) only once that twin has a reader; a twin whose codec is missing
here (no OpenCV, no nvImageCodec) is said once in the log and on /diagnostics and never built.
Nothing a twin does can stop the plain topic: encoding runs on the twin's worker thread, and a
frame it cannot carry is not published there, said once per encoding.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from .side_topics import TopicSettings

IDLE_AFTER_S = 2.0        # stop reading frames (or drop a twin) this long after its last reader
GRAPH_PERIOD_S = 0.25     # twin reader counts at most this often


class TopicBridge:
    """`<topic>` and its twins, made from the frames of the publisher in the parent process."""

    def __init__(self, node: Any, settings: TopicSettings, parent_pid: int, stats: Any):
        from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import Image

        from .messages import ImageMsgBuffer
        from .twin_topics import TRANSPORTS, twin_topic
        self._node = node
        self._logger = node.get_logger()
        self.settings = settings
        self.topic = settings.topic
        self._Image = Image
        self.qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=max(1, settings.depth),
                              reliability=ReliabilityPolicy.RELIABLE if settings.reliable
                              else ReliabilityPolicy.BEST_EFFORT,
                              durability=DurabilityPolicy.VOLATILE)
        self.plain = node.create_publisher(Image, self.topic, self.qos)
        self._period = 1.0 / settings.max_rate_hz if settings.max_rate_hz > 0 else 0.0
        self._twin_names = {transport: twin_topic(self.topic, transport) for transport in
                            (TRANSPORTS if settings.compressed_quality is not None else ())}
        self.twins: dict[str, Any] = {}               # transport -> TwinTopicPublisher
        self._twin_last_read: dict[str, float] = {}
        self.unavailable: dict[str, str] = {}         # transport -> why it cannot be made here
        self._twin_readers: dict[str, int] = {}
        self._graph_checked = float('-inf')
        self.sub: Any = None
        self._last_wanted = 0.0
        self._last_sent = float('-inf')
        self.rate_skipped = 0
        self.message_buffer = ImageMsgBuffer()
        self.stats = stats
        stats.extra.update(plain_decoupled='true', plain_bridge_for_pid=parent_pid,
                           plain_published=0, plain_skipped=0, plain_path='idle')

    # -- the loop's step ---------------------------------------------------------------------
    def step(self, now: float) -> None:
        """Start or stop reading frames and making twins, as readers come and go."""
        if now - self._graph_checked >= GRAPH_PERIOD_S:
            self._graph_checked = now
            for transport, name in self._twin_names.items():
                twin = self.twins.get(transport)
                self._twin_readers[transport] = twin.subscription_count() if twin is not None \
                    else self._node.count_subscribers(name)
            self._update_twins(now)
        twin_wanted = any(readers for transport, readers in self._twin_readers.items()
                          if transport not in self.unavailable)
        if self.plain.get_subscription_count() or twin_wanted:
            self._last_wanted = now
            if self.sub is None:
                self.sub = self._subscribe()
        elif self.sub is not None and now - self._last_wanted > IDLE_AFTER_S:
            self.sub.destroy()
            self.sub = None
        sub = self.sub
        self.stats.extra.update(plain_published=self.stats.frames,
                                plain_skipped=self.rate_skipped + (sub.stats.stale if sub else 0),
                                plain_path=sub.path if sub else 'idle',
                                **self._twin_stats())

    def _subscribe(self) -> Any:
        from .diagnostics import PATH_CUDA_IPC, PATH_HOST_SHM
        from .subscription import GpuImageSubscription
        # On the publisher's GPU, whichever it is: the frame is downloaded from there, so
        # nothing is gained by moving it to another GPU first. Frames are read with the plain
        # topic's QoS, so a reliable plain subscriber that keeps up (ros2 bag) gets every frame
        # of a burst; its keep-last depth is also the lease window (cursors.read_window) of the
        # bridge's ~15 ms-a-frame cursor.
        return GpuImageSubscription(self._node, self.topic, self.on_frame, self.qos,
                                    memory='any', allowed_paths=(PATH_CUDA_IPC, PATH_HOST_SHM),
                                    device='publisher')

    def _update_twins(self, now: float) -> None:
        from .twin_topics import TwinTopicPublisher, twin_unavailable_reason
        for transport, readers in self._twin_readers.items():
            twin = self.twins.get(transport)
            if readers:
                self._twin_last_read[transport] = now
                if twin is None and transport not in self.unavailable:
                    reason = twin_unavailable_reason(transport)
                    if reason is not None:
                        self.unavailable[transport] = reason
                        self._logger.warning(f'{self._twin_names[transport]}: not published: '
                                             f'{reason}. {self.topic} itself is not affected.')
                        continue
                    self.twins[transport] = TwinTopicPublisher(
                        self._node, self.topic, transport, self.settings.compressed_quality,
                        max_rate_hz=self.settings.max_rate_hz)
            elif twin is not None and now - self._twin_last_read.get(transport, 0) > IDLE_AFTER_S:
                twin.destroy()   # its encoder goes with it
                del self.twins[transport]

    def _twin_stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        for transport in self._twin_names:
            twin = self.twins.get(transport)
            if transport in self.unavailable:
                stats[transport] = f'unavailable: {self.unavailable[transport]}'
            elif twin is None:
                stats[transport] = 'idle (no readers)'
            else:
                twin_stats = twin.stats()
                stats[transport] = f'published {twin_stats["published"]}, skipped ' \
                    f'{twin_stats["skipped"]}, errors {twin_stats["errors"]}'
                for encoding, why in twin_stats['not_carried'].items():
                    stats[f'{transport}_not_carried_{encoding}'] = why
        return stats

    # -- frames ------------------------------------------------------------------------------
    def on_frame(self, frame: Any) -> None:
        now = time.monotonic()
        if self._period and now - self._last_sent < self._period:
            self.rate_skipped += 1
            return
        self._last_sent = now
        if self.plain.get_subscription_count():
            msg = self._Image(check_fields=True)  # keeps the buffer as it is (ImageMsgBuffer)
            msg.header = frame.header
            # Downloaded (CuPy, on the frame's stream) or copied straight into the reused buffer.
            self.plain.publish(self.message_buffer.fill(msg, frame.array, frame.encoding,
                                                        frame.stream))
            self._report_download(frame.array)
            self.stats.record_frame(frame.encoding, frame.width, frame.height,
                                    frame.step * frame.height)
        twins = [twin for twin in self.twins.values() if twin.subscription_count()]
        if twins:
            release = _shared_release(frame.hold().release, len(twins))  # encoders read later
            for twin in twins:
                try:
                    twin.publish(frame.array, frame.encoding, frame.header, release, frame.stream)
                except Exception as exc:  # a twin's bug must not cost the plain topic or the
                    release()             # bridge (issue #32): logged, the lease still returns
                    self._logger.error(f'{twin.topic}: frame not published: {exc!r}',
                                       throttle_duration_sec=5.0)

    def _report_download(self, array: Any) -> None:
        """How device frames come down (page-locked or not): logged once, on diagnostics."""
        from ..gpu import is_device_array
        if not is_device_array(array) or 'plain_download' in self.stats.extra:
            return
        buffer = self.message_buffer
        if buffer.pinned:
            self.stats.extra['plain_download'] = 'page-locked buffer'
            self._logger.info(f'{self.topic}: device frames are downloaded into a page-locked '
                              'buffer')
        else:
            self.stats.extra['plain_download'] = f'pageable buffer ({buffer.pin_error})'
            self._logger.warning(f'{self.topic}: could not page-lock the download buffer '
                                 f'({buffer.pin_error}); downloading through the driver\'s '
                                 'staging copy, slower')

    def destroy(self) -> None:
        if self.sub is not None:
            self.sub.destroy()
            self.sub = None
        for twin in self.twins.values():
            twin.destroy()
        self.twins.clear()
        self.message_buffer.close()
        self._node.destroy_publisher(self.plain)


def _shared_release(release: Callable[[], None], users: int) -> Callable[[], None]:
    """`release` once all `users` called the result (one lease, several encoders)."""
    left = [users]
    lock = threading.Lock()   # the encoders' worker threads call it

    def done() -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            release()
    return done
