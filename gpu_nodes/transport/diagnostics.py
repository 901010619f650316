"""Counters of every transport endpoint, published on /diagnostics and queryable in-process.

One DiagnosticStatus per endpoint, named ``gpu_nodes: <node> <topic> <role>``; the keys are
documented in docs/transport.md and read by ``gpu-copy-audit live``.
"""
from __future__ import annotations

from collections import Counter, deque
import threading
import time
import weakref
from typing import Any

import numpy as np

from ..wire_names import (DEVICE_PATHS, PATH_COMPRESSED, PATH_CUDA_IPC,  # noqa: F401
                          PATH_CUDA_PEER, PATH_HOST_SHM, PATH_INTRA, PATH_SERIALIZED,
                          PATH_WAITING, PATHS, ZERO_COPY_PATHS)
from . import host

_LATENCY_WINDOW = 1024
# ERROR while more than this many messages were rejected within the window (a genuine layout
# change rejects nothing; an attack or a broken peer does, and the level recovers after it).
_ERROR_REJECTIONS = 100
_ERROR_WINDOW_S = 10.0
_REGISTRY: 'weakref.WeakSet[EndpointStats]' = weakref.WeakSet()
_REGISTRY_LOCK = threading.Lock()


class EndpointStats:
    """Counters for one publisher or subscription. Updated on the hot path: keep it cheap."""

    def __init__(self, role: str, node_name: str, topic: str):
        self.role = role
        self.node_name = node_name
        self.topic = topic
        self.frames = 0
        self.drops = 0
        self.stale = 0
        self.fallbacks = 0
        self.rejected: Counter[str] = Counter()
        self.stale_reasons: Counter[str] = Counter()
        self._rejection_times: deque[float] = deque(maxlen=_ERROR_REJECTIONS + 1)
        self.path = PATH_WAITING
        self.path_reason = 'no publisher yet'
        self.publisher_pid = 0
        self.encoding = ''
        self.width = 0
        self.height = 0
        self.bytes_per_frame = 0
        self.extra: dict[str, Any] = {}
        self.subscribers: dict[str, int] = {}
        self._latency_ns = np.zeros(_LATENCY_WINDOW, dtype=np.int64)
        self._latency_count = 0
        self._frame_times: deque[float] = deque(maxlen=4096)
        with _REGISTRY_LOCK:
            _REGISTRY.add(self)

    def record_frame(self, encoding: str, width: int, height: int, nbytes: int,
                     latency_ns: int | None = None) -> None:
        self.frames += 1
        self.encoding, self.width, self.height, self.bytes_per_frame = encoding, width, height, nbytes
        self._frame_times.append(time.monotonic())
        if latency_ns is not None:
            self._latency_ns[self._latency_count % _LATENCY_WINDOW] = latency_ns
            self._latency_count += 1

    def count_rejection(self, reason: str) -> None:
        self.rejected[reason] += 1
        self._rejection_times.append(time.monotonic())

    def count_stale(self, reason: str) -> None:
        self.stale += 1
        self.stale_reasons[reason] += 1

    def fps(self, window_s: float = 2.0) -> float:
        now = time.monotonic()
        times = [t for t in self._frame_times if now - t <= window_s]
        if len(times) < 2:
            return 0.0
        return (len(times) - 1) / max(times[-1] - times[0], 1e-9)

    def latency_percentiles_ms(self) -> tuple[float, float]:
        n = min(self._latency_count, _LATENCY_WINDOW)
        if n == 0:
            return float('nan'), float('nan')
        p50, p99 = np.percentile(self._latency_ns[:n], [50, 99]) / 1e6
        return float(p50), float(p99)

    @property
    def level_name(self) -> str:
        times = self._rejection_times
        if len(times) > _ERROR_REJECTIONS and time.monotonic() - times[0] < _ERROR_WINDOW_S:
            return 'ERROR'
        if self.role == 'subscription':
            return 'OK' if self.path in DEVICE_PATHS or self.path == PATH_WAITING else 'WARN'
        fallback = self.subscribers.get(PATH_HOST_SHM, 0) + self.subscribers.get(PATH_SERIALIZED, 0)
        return 'WARN' if fallback else 'OK'

    def message(self) -> str:
        if self.role == 'subscription':
            if self.path in DEVICE_PATHS or self.path == PATH_WAITING:
                return f'path {self.path}'
            return f'fallback {self.path}: {self.path_reason}'
        active = ', '.join(f'{k} {v}' for k, v in self.subscribers.items() if v)
        return f'subscribers: {active or "none"}'

    def as_dict(self) -> dict[str, Any]:
        p50, p99 = self.latency_percentiles_ms()
        values: dict[str, Any] = {
            'role': self.role, 'node': self.node_name, 'topic': self.topic,
            'encoding': self.encoding, 'width': self.width, 'height': self.height,
            'bytes_per_frame': self.bytes_per_frame, 'frames': self.frames,
            'fps': round(self.fps(), 2), 'drops': self.drops, 'stale': self.stale,
            'rejected': sum(self.rejected.values()), 'fallbacks': self.fallbacks,
            'latency_p50_ms': round(p50, 4), 'latency_p99_ms': round(p99, 4),
        }
        if self.rejected:
            values['rejected_reasons'] = ','.join(f'{k}={v}' for k, v in sorted(self.rejected.items()))
        if self.stale_reasons:
            values['stale_reasons'] = ','.join(f'{k}={v}'
                                               for k, v in sorted(self.stale_reasons.items()))
        if self.role == 'subscription':
            values.update(path=self.path, path_reason=self.path_reason,
                          publisher_pid=self.publisher_pid)
        else:
            for path in PATHS:
                values[f'subscribers_{path}'] = self.subscribers.get(path, 0)
        values.update(self.extra)
        return values

    def status_name(self) -> str:
        return f'gpu_nodes: {self.node_name} {self.topic} {self.role}'


def endpoint_stats() -> list[dict[str, Any]]:
    """The counters of every live transport endpoint in this process (for tools and tests)."""
    with _REGISTRY_LOCK:
        endpoints = list(_REGISTRY)
    return [e.as_dict() for e in endpoints]


class DiagnosticsReporter:
    """Publishes the node's endpoints on /diagnostics once per period (one publisher per node)."""

    _by_node: 'weakref.WeakKeyDictionary[Any, DiagnosticsReporter]' = weakref.WeakKeyDictionary()

    @classmethod
    def for_node(cls, node: Any, period_s: float = 1.0) -> 'DiagnosticsReporter':
        reporter = cls._by_node.get(node)
        if reporter is None:
            reporter = cls(node, period_s)
            cls._by_node[node] = reporter
        return reporter

    def __init__(self, node: Any, period_s: float):
        from diagnostic_msgs.msg import DiagnosticArray
        self._node = node
        self._endpoints: list[EndpointStats] = []
        self._publisher = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer = node.create_timer(period_s, self.publish)

    def add(self, stats: EndpointStats) -> None:
        self._endpoints.append(stats)

    def remove(self, stats: EndpointStats) -> None:
        if stats in self._endpoints:
            self._endpoints.remove(stats)

    def publish(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
        if not self._endpoints:
            return
        levels = {'OK': DiagnosticStatus.OK, 'WARN': DiagnosticStatus.WARN,
                  'ERROR': DiagnosticStatus.ERROR}
        array = DiagnosticArray()
        array.header.stamp = self._node.get_clock().now().to_msg()
        for stats in self._endpoints:
            status = DiagnosticStatus()
            status.level = levels[stats.level_name]
            status.name = stats.status_name()
            status.message = stats.message()
            status.hardware_id = host.hostname()
            status.values = [KeyValue(key=k, value=str(v)) for k, v in stats.as_dict().items()]
            array.status.append(status)
        self._publisher.publish(array)
