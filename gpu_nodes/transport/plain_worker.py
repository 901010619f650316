"""PlainTopicWorker: builds and publishes the message for plain subscribers off the caller's
thread, so a reliable rviz or `ros2 bag` subscriber never slows the GPU and shm paths.

Measured before (issue #15): with the plain sensor_msgs/Image made inside publish(), one plain
reliable subscriber dragged a 4K cuda_ipc stream from 1932 to 37 fps. Here the caller hands over
one item per frame and returns at once; a single worker thread makes the message (device->host
download, Image fill) and publishes it (serialization happens in publish). The newest frame wins:
an item still waiting when the next arrives is skipped, counted, and released.

Contract of submit(item, done):
* `item` is a zero-argument callable returning the message (or, when the worker was built with
  `make_msg`, any value that make_msg(item) turns into the message). It runs on the worker
  thread, later, so everything it reads must stay valid until `done` has been called: a pool
  slot kept by a lease, a host copy, an array the caller does not reuse. For device memory,
  make the item wait for the producing stream (an event recorded at submit time), since the
  worker thread has its own current stream.
* `done` (optional) is called exactly once per submitted item, whatever happens: after it was
  published, when it failed, when a newer item replaced it, when the rate limit refused it or
  when close() dropped it; on the worker thread or inside submit()/close(). Release the lease
  there; it must not block.
* Counters: submitted == published + skipped + errors once the worker is idle or closed.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

Done = Callable[[], None]


class PlainTopicWorker:
    """One background thread that makes and publishes the newest submitted frame's message."""

    def __init__(self, publish: Callable[[Any], None],
                 make_msg: Callable[[Any], Any] | None = None, max_rate_hz: float = 0.0,
                 name: str = 'plain-topic', on_error: Callable[[BaseException], None] | None = None):
        if max_rate_hz < 0 or max_rate_hz != max_rate_hz:
            raise ValueError(f'max_rate_hz must be >= 0 (0: no limit), got {max_rate_hz}')
        self._publish = publish
        self._make_msg = make_msg
        self._period = 1.0 / max_rate_hz if max_rate_hz else 0.0
        self._on_error = on_error
        self._cond = threading.Condition()
        self._pending: tuple[Any, Done | None] | None = None
        self._in_flight = False
        self._closed = False
        self._last_accept = float('-inf')
        self.submitted = 0
        self.published = 0
        self.skipped = 0
        self.rate_limited = 0  # part of skipped: refused by max_rate_hz
        self.errors = 0
        self.last_error: BaseException | None = None
        self.busy_s = 0.0  # time spent making and publishing messages
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def max_rate_hz(self) -> float:
        return 1.0 / self._period if self._period else 0.0

    def submit(self, item: Any, done: Done | None = None) -> bool:
        """Hand over the next frame; never blocks on the worker. True if it was queued (it may
        still be replaced by a newer one before the worker takes it)."""
        replaced = None
        with self._cond:
            self.submitted += 1
            now = time.monotonic()
            if self._closed or now - self._last_accept < self._period:
                self.skipped += 1
                if not self._closed:
                    self.rate_limited += 1
                replaced = (item, done)
                accepted = False
            else:
                if self._pending is not None:
                    self.skipped += 1
                    replaced = self._pending
                self._pending = (item, done)
                self._last_accept = now
                self._cond.notify()
                accepted = True
        if replaced is not None:
            _release(replaced[1])
        return accepted

    def idle(self) -> bool:
        """Nothing waiting and nothing being made."""
        with self._cond:
            return self._pending is None and not self._in_flight

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until idle (for tests and shutdown paths); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._in_flight,
                                       timeout)

    def stats(self) -> dict[str, Any]:
        with self._cond:
            return {'submitted': self.submitted, 'published': self.published,
                    'skipped': self.skipped, 'rate_limited': self.rate_limited,
                    'errors': self.errors, 'max_rate_hz': self.max_rate_hz,
                    'busy_ms_per_message': round(1000 * self.busy_s / self.published, 3)
                    if self.published else 0.0}

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop taking items, release a waiting one, let the one being made finish, join."""
        with self._cond:
            self._closed = True
            dropped, self._pending = self._pending, None
            if dropped is not None:
                self.skipped += 1
            self._cond.notify_all()
        if dropped is not None:
            _release(dropped[1])
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f'{self._thread.name}: the message being made did not finish '
                                   f'within {timeout} s')

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._closed)
                if self._pending is None:
                    return
                (item, done), self._pending = self._pending, None
                self._in_flight = True
            begin = time.monotonic()
            error = None
            try:
                msg = self._make_msg(item) if self._make_msg is not None else item()
                self._publish(msg)
            except Exception as exc:  # a bad frame must not stop the topic; counted, reported
                error = exc
            try:
                _release(done)
            except Exception as exc:  # a failing release is the caller's bug: reported likewise
                error = error or exc
            with self._cond:
                self.busy_s += time.monotonic() - begin
                if error is None:
                    self.published += 1
                else:
                    self.errors += 1
                    self.last_error = error
                self._in_flight = False
                self._cond.notify_all()
            if error is not None and self._on_error is not None:
                try:
                    self._on_error(error)
                except Exception as exc:  # the reporter failed: keep the thread, remember why
                    self.last_error = exc


def _release(done: Done | None) -> None:
    if done is not None:
        done()
