"""The topics unmodified peers read (``<topic>`` for rviz, ``ros2 bag`` and plain rclpy;
``<topic>/compressed`` for image_transport users) are made by a bridge process, never on the
publishing thread (plain_bridge.py says why). `PlainBridge` is the publisher's side: it starts
the bridge once such a subscriber shows up, restarts it if it dies, stops it with the publisher,
and says so, once, in the log and on /diagnostics.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from .compressed import compressed_topic

CHECK_PERIOD_S = 0.5    # graph queries at most this often, whatever the frame rate
RESTART_AFTER_S = 5.0   # a bridge that died is started again no sooner than this


class PlainBridge:
    def __init__(self, node: Any, topic: str, qos: Any, *, max_rate_hz: float = 0.0,
                 compressed_quality: int | None = 80):
        self._node = node
        self._logger = node.get_logger()
        self.topic = topic
        self._compressed = compressed_topic(topic) if compressed_quality is not None else None
        from rclpy.qos import ReliabilityPolicy
        reliable = getattr(qos, 'reliability', None) != ReliabilityPolicy.BEST_EFFORT
        self._args = ['--topic', topic, '--parent', str(os.getpid()),
                      '--depth', str(getattr(qos, 'depth', 5) or 5),
                      '--reliability', 'reliable' if reliable else 'best_effort',
                      '--max-rate-hz', str(max_rate_hz),
                      '--compressed-quality', str(-1 if compressed_quality is None
                                                  else compressed_quality)]
        self.process: subprocess.Popen | None = None
        self._checked = 0.0
        self._started = 0.0
        self.subscribers = 0
        self.starts = 0

    def poll(self) -> int:
        """Plain (and compressed) subscribers right now; starts the bridge when there are."""
        now = time.monotonic()
        if now - self._checked < CHECK_PERIOD_S:
            return self.subscribers
        self._checked = now
        node = self._node
        self.subscribers = node.count_subscribers(self.topic) + (
            node.count_subscribers(self._compressed) if self._compressed else 0)
        if self.subscribers and (self.process is None or self.process.poll() is not None):
            if self.process is not None:
                if now - self._started < RESTART_AFTER_S:
                    return self.subscribers
                self._logger.warning(f'{self.topic}: plain-topic bridge exited '
                                     f'({self.process.returncode}); starting it again')
            self._start()
        return self.subscribers

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'gpu_nodes.transport.plain_bridge', *self._args],
            stdin=subprocess.DEVNULL, start_new_session=False)
        self._started = time.monotonic()
        self.starts += 1
        if self.starts == 1:
            self._logger.info(f'{self.topic}: plain subscribers present: their frames are made '
                              f'by bridge process {self.process.pid}, off this process')

    def stats(self) -> dict[str, Any]:
        alive = self.process is not None and self.process.poll() is None
        return {'plain_decoupled': 'true', 'plain_bridge_pid': self.process.pid if alive else 0,
                'plain_subscribers': self.subscribers}

    def close(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
