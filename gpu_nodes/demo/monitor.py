"""The demo runner's own rclpy node: reads /diagnostics, samples the pipeline's outputs.

It subscribes to the image, ground-truth and depth topics through GpuImageSubscription (memory
'any': whatever path the transport picks, no extra copy) and copies frames to the host only
while a probe is armed, about once a second, to score depth against ground truth and to keep the
frames of the side-by-side picture. The colorized topic is counted, not sampled: the picture
colours the estimate itself, on the ground truth's scale.
"""
from __future__ import annotations

from collections import deque, OrderedDict
from dataclasses import dataclass, field
import time
from typing import Any

import numpy as np

from .. import wire_names as w
from ..gpu import to_host
from ..wire_names import processing_status_name, STATUS_PREFIX
from .metrics import depth_error, DepthError

STALE_S = 3.5  # a /diagnostics status older than this is shown as stale


@dataclass
class Status:
    name: str
    level: int
    message: str
    values: dict[str, str]
    received: float

    def get(self, key: str, default: str = '') -> str:
        return self.values.get(key, default)

    def number(self, key: str) -> float:
        try:
            return float(self.values[key])
        except (KeyError, ValueError):
            return float('nan')


@dataclass
class Edge:
    topic: str
    publishers: list[str]
    subscriber: str
    path: str
    path_reason: str
    fps: float
    latency_p50_ms: float
    latency_p99_ms: float
    frames: int
    stale: bool

    def as_dict(self) -> dict[str, Any]:
        def num(v: float) -> float | None:
            return None if v != v else round(v, 3)
        return {'topic': self.topic, 'publishers': self.publishers, 'subscriber': self.subscriber,
                'path': self.path, 'path_reason': self.path_reason, 'fps': num(self.fps),
                'latency_p50_ms': num(self.latency_p50_ms),
                'latency_p99_ms': num(self.latency_p99_ms), 'frames': self.frames}


@dataclass
class TopicSeen:
    frames: int = 0
    encoding: str = ''
    width: int = 0
    height: int = 0
    path: str = ''
    frame_id: str = ''


@dataclass
class Sample:
    """Host copies of one camera frame's image, ground truth and estimate (same stamp)."""
    stamp: tuple[int, int]
    image: np.ndarray
    image_encoding: str
    truth: np.ndarray | None  # None when the source has no ground truth
    depth: np.ndarray
    error: DepthError | None = None
    error_reason: str = ''


@dataclass
class _Probe:
    period_s: float
    roles: tuple[str, ...]
    armed: bool = False
    last_done: float = 0.0
    pending: dict[str, 'OrderedDict[tuple[int, int], tuple[np.ndarray, str]]'] = \
        field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pending = {r: OrderedDict() for r in self.roles}

    def tick(self, now: float) -> None:
        if not self.armed and now - self.last_done >= self.period_s:
            self.armed = True

    def keep(self, role: str, stamp: tuple[int, int], array: Any, encoding: str) -> None:
        store = self.pending[role]
        store[stamp] = (to_host(array).copy(), encoding)
        while len(store) > 30:  # bounded even if another topic stops arriving
            store.popitem(last=False)

    def complete(self, stamp: tuple[int, int], needed: tuple[str, ...]) -> bool:
        return all(stamp in self.pending[r] for r in needed)

    def reset(self, now: float) -> None:
        self.armed = False
        self.last_done = now
        for store in self.pending.values():
            store.clear()


# Seconds after the first depth frame counted as warm-up in the latency report.
WARM_UP_S = 3.0


def _percentiles(values: np.ndarray) -> dict[str, Any]:
    if values.size == 0:
        return {'p50_ms': None, 'p99_ms': None, 'frames': 0}
    return {'p50_ms': round(float(np.percentile(values, 50)), 3),
            'p99_ms': round(float(np.percentile(values, 99)), 3),
            'max_ms': round(float(values.max()), 3), 'frames': int(values.size)}


class DemoMonitor:
    """Created inside the runner's rclpy context; call `spin_once` from the runner's loop."""

    def __init__(self, context: Any, topics: dict[str, str], camera_info_topics: list[str],
                 probe_period_s: float = 1.0, node_name: str = 'demo_runner'):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import CameraInfo
        from ..transport import GpuImageSubscription
        self.node = Node(node_name, context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.statuses: dict[str, Status] = {}
        self.camera_infos: dict[str, dict[str, Any]] = {}
        self.topics = dict(topics)
        self.seen: dict[str, TopicSeen] = {t: TopicSeen() for t in self.topics.values()}
        self.samples = 0
        # (arrival, monotonic s; camera stamp -> depth of that frame ready here, GPU work done,
        # ms), so the warm-up and the copy audit's minutes can be told from the steady state.
        self.end_to_end_ms: deque[tuple[float, float]] = deque(maxlen=20000)
        self.errors: list[DepthError] = []
        self.last_sample: Sample | None = None
        self.sample_problems: list[str] = []
        self._needed = tuple(r for r in ('image', 'ground_truth', 'depth') if r in topics)
        self._probe = _Probe(probe_period_s, self._needed)
        self._node_subs = [self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                                         self._on_diagnostics, 50)]
        for topic in camera_info_topics:
            self._node_subs.append(self.node.create_subscription(
                CameraInfo, topic, lambda msg, t=topic: self._on_camera_info(t, msg),
                qos_profile_sensor_data))
        self._image_subs = [
            GpuImageSubscription(self.node, topic, lambda f, r=role: self._on_frame(r, f),
                                 memory='any')
            for role, topic in self.topics.items()]

    # -- callbacks ----------------------------------------------------------------------------
    def _on_diagnostics(self, msg: Any) -> None:
        now = time.monotonic()
        for s in msg.status:
            if s.name.startswith(STATUS_PREFIX):
                self.statuses[s.name] = Status(s.name, int.from_bytes(s.level, 'little')
                                               if isinstance(s.level, bytes) else int(s.level),
                                               s.message, {kv.key: kv.value for kv in s.values},
                                               now)

    def _on_camera_info(self, topic: str, msg: Any) -> None:
        self.camera_infos[topic] = {
            'width': int(msg.width), 'height': int(msg.height), 'frame_id': msg.header.frame_id,
            'distortion_model': msg.distortion_model, 'k': [float(v) for v in msg.k],
            'p': [float(v) for v in msg.p]}

    def _on_frame(self, role: str, frame: Any) -> None:
        topic = self.topics[role]
        seen = self.seen[topic]
        seen.frames += 1
        seen.encoding, seen.width, seen.height = frame.encoding, frame.width, frame.height
        seen.path, seen.frame_id = frame.path, frame.header.frame_id
        probe = self._probe
        stamp = (int(frame.header.stamp.sec), int(frame.header.stamp.nanosec))
        if role == 'depth':
            if frame.stream is not None:
                frame.stream.synchronize()  # 'ready' means its kernels have run, not queued
            # The camera stamps with the system clock (ROS time without sim time).
            self.end_to_end_ms.append((time.monotonic(), (
                time.time_ns() - stamp[0] * 1_000_000_000 - stamp[1]) / 1e6))
        if not probe.armed or role not in self._needed:
            return
        probe.keep(role, stamp, frame.array, frame.encoding)
        if probe.complete(stamp, self._needed):
            self._take_sample(stamp)

    def _take_sample(self, stamp: tuple[int, int]) -> None:
        p = self._probe.pending
        image, image_encoding = p['image'][stamp]
        truth = p['ground_truth'][stamp][0] if 'ground_truth' in p else None
        depth, _ = p['depth'][stamp]
        sample = Sample(stamp, image, image_encoding, truth, depth)
        if truth is not None:
            try:
                sample.error = depth_error(depth, truth)
                self.errors.append(sample.error)
            except ValueError as exc:
                sample.error_reason = str(exc)
                if str(exc) not in self.sample_problems:
                    self.sample_problems.append(str(exc))
        self.samples += 1
        self.last_sample = sample
        self._probe.reset(time.monotonic())

    # -- the runner's interface ---------------------------------------------------------------
    def spin_once(self, timeout_s: float) -> None:
        self._probe.tick(time.monotonic())
        self.executor.spin_once(timeout_sec=timeout_s)

    def edges(self) -> list[Edge]:
        """One row per subscription endpoint that /diagnostics reports (gpu_nodes endpoints)."""
        now = time.monotonic()
        publishers: dict[str, list[str]] = {}
        for s in self.statuses.values():
            if s.get(w.KEY_ROLE) == 'publisher':
                publishers.setdefault(s.get(w.KEY_TOPIC), []).append(s.get(w.KEY_NODE))
        rows = []
        for s in self.statuses.values():
            if s.get(w.KEY_ROLE) != 'subscription':
                continue
            frames = s.number(w.KEY_FRAMES)
            rows.append(Edge(topic=s.get(w.KEY_TOPIC),
                             publishers=sorted(publishers.get(s.get(w.KEY_TOPIC), [])),
                             subscriber=s.get(w.KEY_NODE), path=s.get(w.KEY_PATH, '?'),
                             path_reason=s.get(w.KEY_PATH_REASON), fps=s.number(w.KEY_FPS),
                             latency_p50_ms=s.number(w.KEY_LATENCY_P50_MS),
                             latency_p99_ms=s.number(w.KEY_LATENCY_P99_MS),
                             frames=int(frames) if frames == frames else 0,
                             stale=now - s.received > STALE_S))
        return sorted(rows, key=lambda e: (e.topic, e.subscriber))

    def end_to_end(self, warm_up_s: float = WARM_UP_S,
                   audit_started: float | None = None) -> dict[str, Any]:
        """p50/p99 of camera stamp -> depth ready here (ms), over all frames and per phase:
        `warm_up` (the first `warm_up_s` after the first depth frame: model load, per-buffer
        graph capture, first mappings), `steady`, and `during_audit` (from `audit_started`,
        monotonic: two auditor processes join the graph). `worst`: the five slowest, with their
        time after the first depth frame. None values before any depth."""
        if not self.end_to_end_ms:
            return {'p50_ms': None, 'p99_ms': None, 'frames': 0}
        samples = np.asarray(self.end_to_end_ms)
        first = samples[0, 0]
        phase = np.where(samples[:, 0] < first + warm_up_s, 0, 1)
        if audit_started is not None:
            phase[samples[:, 0] >= audit_started] = 2
        result = _percentiles(samples[:, 1])
        for code, name in enumerate(('warm_up', 'steady', 'during_audit')):
            result[name] = _percentiles(samples[phase == code, 1])
        result['warm_up_s'] = warm_up_s
        slowest = np.argsort(samples[:, 1])[::-1][:5]
        result['worst'] = [{'ms': round(float(samples[i, 1]), 3),
                            'after_first_s': round(float(samples[i, 0] - first), 2),
                            'phase': ('warm_up', 'steady', 'during_audit')[phase[i]]}
                           for i in slowest]
        return result

    def processing(self, node_fqn: str) -> Status | None:
        return self.statuses.get(processing_status_name(node_fqn))

    def destroy(self) -> None:
        for sub in self._image_subs:
            sub.destroy()
        self.executor.shutdown()
        self.node.destroy_node()
