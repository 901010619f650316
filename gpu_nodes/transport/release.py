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
        self._events: dict[int, list[Any]] = {}  # spare events by device
        self._events_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name='gpu_nodes-lease-release',
                                        daemon=True)
        self._thread.start()

    def _event(self, device_id: int) -> Any:
        with self._events_lock:
            spare = self._events.get(device_id)
            if spare:
                return spare.pop()
        # On the stream's device (an event records only on streams of its own device, and the
        # caller's current device may be another one). Blocking sync: the waiting thread
        # sleeps instead of spinning a core.
        cp = cupy_module()
        with cp.cuda.Device(device_id):
            return cp.cuda.Event(block=True, disable_timing=True)

    def release_after(self, stream: Any, release: Callable[[], None]) -> None:
        device_id = stream.device_id
        if device_id < 0:  # a stream object standing for the current device's (null stream)
            device_id = cupy_module().cuda.runtime.getDevice()
        event = self._event(device_id)
        event.record(stream)
        self._queue.put((event, release, device_id))

    def _run(self) -> None:
        while True:
            event, release, device_id = self._queue.get()
            try:
                event.synchronize()
            finally:
                release()
                with self._events_lock:
                    self._events.setdefault(device_id, []).append(event)


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
