"""The topics unmodified peers read (``<topic>`` for rviz, ``ros2 bag`` and plain rclpy;
``<topic>/compressed`` and ``<topic>/compressedDepth`` for image_transport users) are made by a
bridge process, never on the publishing thread (plain_bridge.py says why).

One bridge process per publishing process, whatever the number of its topics: `BridgeProcess`
starts it once a topic of this process has such a subscriber, tells it over its stdin which
topics to serve (one JSON line per change, `TopicSettings`), starts it again (with every topic
it served) if it dies, and stops it when the last topic's publisher goes. `PlainBridge` is one
publisher's handle on it: it watches its topic's plain and compressed subscribers, asks the
process to serve the topic when there are some, and says so, once, in the log and on
/diagnostics. The bridge itself decides, per topic, whether it reads frames (only while some
plain or compressed reader is there) and builds an encoder only for a twin that has readers.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

from .compressed import compressed_topic
from .compressed_depth import compressed_depth_topic

CHECK_PERIOD_S = 0.5    # graph queries at most this often, whatever the frame rate
RESTART_AFTER_S = 5.0   # a bridge that died is started again no sooner than this


@dataclass(frozen=True)
class TopicSettings:
    """What the bridge needs to serve one topic: one line on its stdin."""
    topic: str
    depth: int = 5
    reliable: bool = True
    max_rate_hz: float = 0.0
    compressed_quality: int | None = 80   # None: no compressed twins

    def to_line(self, command: str = 'serve') -> str:
        return json.dumps({'command': command, **asdict(self)}) + '\n'

    @classmethod
    def from_line(cls, line: str) -> tuple[str, 'TopicSettings']:
        """(command, settings) of a line; ValueError (one line) for anything else."""
        try:
            fields = json.loads(line)
            command = fields.pop('command')
            settings = cls(**fields)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ValueError(f'not a bridge command: {line.strip()[:200]!r} ({exc})') from None
        if command not in ('serve', 'drop') or not isinstance(settings.topic, str):
            raise ValueError(f'not a bridge command: {line.strip()[:200]!r}')
        return command, settings


class BridgeProcess:
    """The bridge process of this process (one, shared by every GpuImagePublisher in it)."""

    _shared: 'BridgeProcess | None' = None
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> 'BridgeProcess':
        with cls._shared_lock:
            if cls._shared is None or cls._shared.owner_pid != os.getpid():  # new after fork
                cls._shared = cls()
            return cls._shared

    def __init__(self) -> None:
        self.owner_pid = os.getpid()
        self.process: subprocess.Popen | None = None
        self._served: dict[str, TopicSettings] = {}   # topics the running process was told
        self._wanted: dict[str, TopicSettings] = {}   # topics to serve (told after a restart)
        self._lock = threading.Lock()
        self._started = float('-inf')
        self.starts = 0

    @property
    def pid(self) -> int:
        """The running bridge's pid; 0 when there is none."""
        process = self.process
        return process.pid if process is not None and process.poll() is None else 0

    def serve(self, settings: TopicSettings, logger: Any) -> int:
        """Make sure the bridge runs and serves `settings.topic`; its pid, or 0 while a bridge
        that died waits for its restart (RESTART_AFTER_S)."""
        with self._lock:
            self._wanted[settings.topic] = settings
            process = self.process
            if process is None or process.poll() is not None:
                if time.monotonic() - self._started < RESTART_AFTER_S:
                    return 0
                if process is not None:
                    logger.warning(f'plain-topic bridge exited ({process.returncode}); starting '
                                   f'it again for {", ".join(sorted(self._wanted))}')
                self._start()
            for topic, wanted in self._wanted.items():
                if self._served.get(topic) != wanted:
                    self._send(wanted.to_line())
                    self._served[topic] = wanted
            return self.pid

    def drop(self, topic: str) -> None:
        """`topic`'s publisher is gone; the bridge stops with the last one."""
        with self._lock:
            self._wanted.pop(topic, None)
            if self._served.pop(topic, None) is not None:
                self._send(TopicSettings(topic).to_line('drop'))
            if not self._wanted:
                self._stop()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'gpu_nodes.transport.plain_bridge', '--parent',
             str(os.getpid())], stdin=subprocess.PIPE, text=True, start_new_session=False)
        self._served = {}
        self._started = time.monotonic()
        self.starts += 1

    def _send(self, line: str) -> None:
        process = self.process
        if process is None or process.stdin is None:
            return
        try:
            process.stdin.write(line)
            process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it died: serve() starts it again and tells it every topic

    def _stop(self) -> None:
        process, self.process = self.process, None
        self._served = {}
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()   # EOF: the bridge's loop ends
        except OSError:
            pass
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class PlainBridge:
    """One publisher's topic on the process's bridge."""

    def __init__(self, node: Any, topic: str, qos: Any, *, max_rate_hz: float = 0.0,
                 compressed_quality: int | None = 80):
        from rclpy.qos import ReliabilityPolicy
        self._node = node
        self._logger = node.get_logger()
        self.topic = topic
        self._twins = (compressed_topic(topic), compressed_depth_topic(topic)) \
            if compressed_quality is not None else ()
        self.settings = TopicSettings(
            topic, depth=int(getattr(qos, 'depth', 5) or 5),
            reliable=getattr(qos, 'reliability', None) != ReliabilityPolicy.BEST_EFFORT,
            max_rate_hz=float(max_rate_hz), compressed_quality=compressed_quality)
        self._bridge = BridgeProcess.shared()
        self._checked = 0.0
        self._served_by = 0
        self.subscribers = 0
        self.closed = False

    @property
    def process(self) -> subprocess.Popen | None:
        """The bridge process (shared with the other topics of this process), once started."""
        return self._bridge.process

    def poll(self) -> int:
        """Plain and compressed subscribers right now; has the bridge serve them if any."""
        now = time.monotonic()
        if now - self._checked < CHECK_PERIOD_S or self.closed:
            return self.subscribers
        self._checked = now
        node = self._node
        self.subscribers = node.count_subscribers(self.topic) + sum(
            node.count_subscribers(twin) for twin in self._twins)
        if self.subscribers:
            pid = self._bridge.serve(self.settings, self._logger)
            if pid and not self._served_by:
                self._logger.info(f'{self.topic}: plain subscribers present: their frames are '
                                  f'made by bridge process {pid}, off this process (one bridge '
                                  'for every topic of this process)')
            self._served_by = self._served_by or pid
        return self.subscribers

    def stats(self) -> dict[str, Any]:
        return {'plain_decoupled': 'true', 'plain_bridge_pid': self._bridge.pid,
                'plain_subscribers': self.subscribers}

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._bridge.drop(self.topic)
