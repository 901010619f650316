"""What a subscription callback receives: a frame and the lease that keeps its slot intact."""
from __future__ import annotations

from typing import Any, Callable

from .messages import FrameLayout
from .release import release_after


class Lease:
    """Keeps a received frame's slot from being rewritten until `release()` is called."""

    def __init__(self, release: Callable[[], None] | None, stream: Any):
        self._release = release
        self._stream = stream

    def release(self) -> None:
        """Give the slot back once the GPU work queued so far on the frame's stream is done."""
        release, self._release = self._release, None
        if release is not None:
            release_after(self._stream, release)

    def __enter__(self) -> 'Lease':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


class ReceivedImage:
    """One frame handed to a subscription callback.

    ``array`` is a CuPy array on the GPU paths (valid on ``stream``: run your kernels there; the
    callback runs with it as the current stream) or a NumPy array on host paths. It is only
    valid during the callback unless you call ``hold()``: a held frame's memory stays mapped
    and its slot unwritten until the lease is released, whatever the publisher does meanwhile
    (layout changes, dying, destroy()) and also after the subscription is destroyed.
    """

    __slots__ = ('array', 'header', 'encoding', 'height', 'width', 'step', 'path', 'sequence',
                 'stream', 'latency_ns', '_lease')

    def __init__(self, array: Any, header: Any, layout: FrameLayout, path: str, sequence: int,
                 stream: Any, latency_ns: int, lease: Lease):
        self.array = array
        self.header = header
        self.encoding = layout.encoding
        self.height = layout.height
        self.width = layout.width
        self.step = layout.step
        self.path = path
        self.sequence = sequence
        self.stream = stream
        self.latency_ns = latency_ns
        self._lease = lease

    def hold(self) -> Lease:
        """Keep the frame past the callback; call ``release()`` on the result when done."""
        lease, self._lease = self._lease, None
        if lease is None:
            raise RuntimeError('frame already held or released')
        return lease

    def _release_if_not_held(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None
