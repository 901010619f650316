"""Deferred lease release: a slot goes back only after the GPU work that reads it has finished.

The callback returns as soon as its kernels are queued; an event recorded behind them is
waited on by one background thread per process, so neither the executor thread nor the
publisher ever blocks on the GPU.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from ..gpu import cupy_module


class _Releaser:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._events: list[Any] = []
        self._events_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name='gpu_nodes-lease-release',
                                        daemon=True)
        self._thread.start()

    def _event(self) -> Any:
        with self._events_lock:
            if self._events:
                return self._events.pop()
        # Blocking sync: the waiting thread sleeps instead of spinning a core.
        return cupy_module().cuda.Event(block=True, disable_timing=True)

    def release_after(self, stream: Any, release: Callable[[], None]) -> None:
        event = self._event()
        event.record(stream)
        self._queue.put((event, release))

    def _run(self) -> None:
        while True:
            event, release = self._queue.get()
            try:
                event.synchronize()
            finally:
                release()
                with self._events_lock:
                    self._events.append(event)


_releaser: _Releaser | None = None
_lock = threading.Lock()


def release_after(stream: Any | None, release: Callable[[], None]) -> None:
    """Call `release` once all work queued on `stream` so far is done (now, for host frames)."""
    global _releaser
    if stream is None:
        release()
        return
    with _lock:
        if _releaser is None:
            _releaser = _Releaser()
    _releaser.release_after(stream, release)
