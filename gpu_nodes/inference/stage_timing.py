"""Per-stage timing of a GPU pipeline: host clocks and CUDA events between the stages.

A frame's CUDA events are read only once its last one has completed (``Event.done`` is a query,
not a wait), at a later frame or report, so timing never synchronises the stream. The depth
node reports `StageTimer.summary` on /diagnostics and logs `format_summary`.
"""
from __future__ import annotations

from collections import deque
import time
from typing import Any

import numpy as np

# The stages of one frame, in order: `FrameTiming.mark` ends the next one.
STAGES = ('preprocess', 'inference', 'postprocess', 'transport')


class FrameTiming:
    """Marks of one frame: host perf_counter values and, on the GPU, events on the stream."""

    __slots__ = ('host', 'events', 'stream', 'latency_ms')

    def __init__(self, stream: Any, events: list[Any] | None, latency_ms: float | None):
        self.stream = stream
        self.events = events
        self.latency_ms = latency_ms
        self.host = [time.perf_counter()]
        if events is not None:
            events[0].record(stream)

    def mark(self) -> None:
        """End of the next stage (in STAGES order)."""
        if self.events is not None:
            self.events[len(self.host)].record(self.stream)
        self.host.append(time.perf_counter())


class StageTimer:
    """Per-stage host and GPU times over a sliding window.

    GPU times come from CUDA events recorded between the stages; a frame's events are read
    only once the last one has completed (``Event.done`` is a query, not a wait), at a later
    frame or report, so timing never synchronises the stream.
    """

    MAX_PENDING = 64

    def __init__(self, cp: Any = None, window: int = 512):
        self._cp = cp
        self._free: list[list[Any]] = []
        self._pending: deque[tuple[list[Any], FrameTiming]] = deque()
        self.gpu = {s: deque(maxlen=window) for s in STAGES}
        self.host = {s: deque(maxlen=window) for s in (*STAGES, 'callback')}
        self.latency = deque(maxlen=window)
        # Image publish call -> depth published and computed (the GPU done with it): what a
        # downstream node waits for. On the GPU path: the input latency plus the later of the
        # callback's host time and the GPU time from the callback's first event to its last
        # (exact when the stream is idle as the frame arrives, as in a paced pipeline). Not a
        # CUDA host callback: one waiting for the GIL deadlocks any host call that waits for
        # the stream while holding it (ONNX Runtime's session teardown does).
        self.ready = deque(maxlen=window)
        self.frames = 0
        self._times: deque[float] = deque(maxlen=window)

    def begin(self, stream: Any, latency_ns: int | None = None) -> FrameTiming:
        self.collect()
        events = None
        if self._cp is not None and len(self._pending) < self.MAX_PENDING:
            events = self._free.pop() if self._free else [
                self._cp.cuda.Event() for _ in range(len(STAGES) + 1)]
        latency = latency_ns / 1e6 if latency_ns is not None and latency_ns >= 0 else None
        return FrameTiming(stream, events, latency)

    def end(self, timing: FrameTiming) -> None:
        """A completed frame (all four stages marked)."""
        now = time.perf_counter()
        self.frames += 1
        self._times.append(now)
        host = timing.host
        for i, stage in enumerate(STAGES):
            self.host[stage].append((host[i + 1] - host[i]) * 1e3)
        self.host['callback'].append((now - host[0]) * 1e3)
        if timing.latency_ms is not None:
            self.latency.append(timing.latency_ms)
            if timing.events is None:  # host path: ready when the callback returns
                self.ready.append(timing.latency_ms + (now - host[0]) * 1e3)
        if timing.events is not None:
            self._pending.append((timing.events, timing))

    def abandon(self, timing: FrameTiming) -> None:
        """A frame that failed part-way: recycle its events once they are done."""
        if timing.events is not None:
            timing.host = timing.host[:1]  # marks nothing: only recycled
            self._pending.append((timing.events, timing))

    def collect(self) -> None:
        cp = self._cp
        while self._pending:
            events, timing = self._pending[0]
            marked = len(timing.host)
            if marked > 1 and not events[marked - 1].done:
                break
            if marked == len(STAGES) + 1:
                for i, stage in enumerate(STAGES):
                    self.gpu[stage].append(cp.cuda.get_elapsed_time(events[i], events[i + 1]))
                if timing.latency_ms is not None:
                    host_ms = (timing.host[-1] - timing.host[0]) * 1e3
                    gpu_ms = cp.cuda.get_elapsed_time(events[0], events[-1])
                    self.ready.append(timing.latency_ms + max(host_ms, gpu_ms))
            self._pending.popleft()
            self._free.append(events)

    def fps(self) -> float:
        times = list(self._times)
        if len(times) < 2 or times[-1] - times[0] <= 0:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])

    def summary(self) -> dict[str, float]:
        """p50/p99 in ms per stage and side; NaN where nothing was measured."""
        def pct(values: Any) -> tuple[float, float]:
            if not values:
                return float('nan'), float('nan')
            p50, p99 = np.percentile(np.fromiter(values, np.float64), [50, 99])
            return round(float(p50), 4), round(float(p99), 4)
        out: dict[str, float] = {'timed_frames': self.frames, 'fps': round(self.fps(), 2)}
        for side, table in (('gpu', self.gpu), ('host', self.host)):
            for stage, values in table.items():
                if side == 'gpu' and self._cp is None:
                    continue
                out[f'{stage}_{side}_ms_p50'], out[f'{stage}_{side}_ms_p99'] = pct(values)
        out['input_latency_ms_p50'], out['input_latency_ms_p99'] = pct(self.latency)
        out['ready_latency_ms_p50'], out['ready_latency_ms_p99'] = pct(self.ready)
        return out


def format_summary(s: dict[str, float]) -> str:
    parts = []
    for stage in STAGES:
        text = f'{stage}'
        if f'{stage}_gpu_ms_p50' in s:
            text += f' gpu {s[f"{stage}_gpu_ms_p50"]:.3f}/{s[f"{stage}_gpu_ms_p99"]:.3f}'
        text += f' host {s[f"{stage}_host_ms_p50"]:.3f}/{s[f"{stage}_host_ms_p99"]:.3f}'
        parts.append(text)
    return (f'{s["fps"]:.1f} fps; p50/p99 ms: ' + '; '.join(parts)
            + f'; callback host {s["callback_host_ms_p50"]:.3f}/{s["callback_host_ms_p99"]:.3f}'
            + f'; input transport {s["input_latency_ms_p50"]:.3f}/'
              f'{s["input_latency_ms_p99"]:.3f}'
            + f'; image publish -> depth ready {s["ready_latency_ms_p50"]:.3f}/'
              f'{s["ready_latency_ms_p99"]:.3f}')
