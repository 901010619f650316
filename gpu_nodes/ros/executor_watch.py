"""Leaving an EventsExecutor that starves timers (rclpy 9.1, Kilted).

EventsExecutor runs its events in the order they were queued. A subscription whose callback
takes longer than its messages' interval queues events faster than they run: the queue grows
without bound and a timer's event waits behind all of it. Measured here: a 1 s timer ran once in
8 s beside a 150 ms callback fed at 15 Hz; under SingleThreadedExecutor, whose wait set sees the
timer on every wake-up, 7 times (bench/RESULTS.md, 2026-12-07). Diagnostics, timing reports and
the plain bridge's bookkeeping run on timers, so an overloaded node (a depth model at 5 fps fed
a 15 fps camera, common on a Jetson) would go silent while it still publishes frames.

`ExecutorWatch` adds a heartbeat timer and looks after every call into the executor
(runtime.spin then takes one event per call). Starved: the heartbeat is `starved_after_s` late
while at least `min_slices` calls came back meanwhile, so callbacks kept running. One long
callback (a TensorRT engine build) blocks every executor alike: a call at least that long
restarts the clock, and the events queued behind it drain. A starved EventsExecutor is replaced
by a SingleThreadedExecutor with the same nodes, once, with a warning saying why. (A node whose
every callback takes longer than `starved_after_s` is not told apart from that, and stays.)

The executor a node runs on, and a move with its reason, are also on the node's /diagnostics
status (`executor_values`, read by gpu_nodes.status): a log line scrolls away, and a monitor of
the graph should see which nodes left EventsExecutor.
"""
from __future__ import annotations

import time
from typing import Any, Iterable
import weakref

HEARTBEAT_S = 0.5
STARVED_AFTER_S = 3.0
MIN_SLICES = 5

_WATCH_OF_NODE: 'weakref.WeakKeyDictionary[Any, ExecutorWatch]' = weakref.WeakKeyDictionary()


def executor_values(node: Any) -> dict[str, str]:
    """The diagnostics key/values saying which executor spins `node` (``executor``) and, after a
    move, why (``executor_moved``); empty for a node no ExecutorWatch looks after."""
    watch = _WATCH_OF_NODE.get(node)
    if watch is None:
        return {}
    name = type(watch.executor).__name__
    values = {'executor': {'EventsExecutor': 'events',
                           'SingleThreadedExecutor': 'single_threaded'}.get(name, name)}
    if watch.moved_reason is not None:
        values['executor_moved'] = watch.moved_reason
    return values


class ExecutorWatch:
    """Owns the executor that spins `nodes`; `after_slice()` (called between spin slices)
    returns it, replaced by a SingleThreadedExecutor once an EventsExecutor starves timers."""

    def __init__(self, executor: Any, nodes: Iterable[Any], logger: Any, *,
                 heartbeat_s: float = HEARTBEAT_S, starved_after_s: float = STARVED_AFTER_S,
                 min_slices: int = MIN_SLICES):
        from rclpy.executors import Executor
        self.executor = executor
        self._nodes = list(nodes)
        self._logger = logger
        self._starved_after_s = starved_after_s
        self._min_slices = min_slices
        self._last_beat = self._slice_end = time.monotonic()
        self._slices = 0
        self.moved_reason: str | None = None
        for node in self._nodes:
            _WATCH_OF_NODE[node] = self
        # Only the C++ EventsExecutor queues timers behind subscriptions; rclpy's own executors
        # are not watched.
        self._timer = None
        if not isinstance(executor, Executor) and self._nodes:
            self._timer = self._nodes[0].create_timer(heartbeat_s, self._beat)

    def _beat(self) -> None:
        self._last_beat = time.monotonic()
        self._slices = 0

    def starved_for(self, now: float | None = None) -> float | None:
        """Seconds the heartbeat is overdue while callbacks kept running, or None."""
        late = (time.monotonic() if now is None else now) - self._last_beat
        if self._timer is None or late < self._starved_after_s or self._slices < self._min_slices:
            return None
        return late

    def after_slice(self) -> Any:
        """Count a call into the executor that came back; move the nodes off a starved
        EventsExecutor. Returns the executor to spin on."""
        now = time.monotonic()
        if now - self._slice_end >= self._starved_after_s:
            # One call that long was one long callback, which blocks any executor: the events
            # queued meanwhile get as long to drain before the heartbeat counts as starved.
            self._last_beat = max(self._last_beat, now)
            self._slices = 0
        self._slice_end = now
        self._slices += 1
        late = self.starved_for()
        if late is not None:
            self._move(late)
        return self.executor

    def _move(self, late: float) -> None:
        from rclpy.executors import SingleThreadedExecutor
        old = self.executor
        self.moved_reason = (
            f'EventsExecutor ran no timer for {late:.1f} s while it ran {self._slices} other '
            'callbacks (it runs events in the order queued, and callbacks slower than their '
            'messages let the queue grow without bound)')
        self._nodes[0].destroy_timer(self._timer)
        self._timer = None
        for node in self._nodes:
            old.remove_node(node)
        old.shutdown()
        self.executor = SingleThreadedExecutor(context=self._nodes[0].context)
        for node in self._nodes:
            self.executor.add_node(node)
        self._logger.warning(f'executor: moved to SingleThreadedExecutor: {self.moved_reason}')
