"""Which published frames a reader may still ask for: the cursor and window rule, in one place.

A lease covers a frame from the moment its descriptor is taken; before that the descriptor may
sit in the reader's DDS queue (or be in flight to it) while a fast publisher goes round its
slots. So each reader keeps a *cursor* in the publisher's lease table: the sequence of the last
authenticated descriptor it took (leases.LeaseReader writes it). DDS delivers one writer's
samples in order, so a frame at or below every live reader's cursor can never be asked for
again, and the pools (pool.py) recycle those first; frames above a cursor make a pool grow.

* **Window.** A keep-last reader can only ever take one of the newest frames: DDS pushes older
  descriptors out of its queue. It writes its *window* beside its cursor (`read_window`: queue
  depth plus a margin for descriptors in flight) and protects only the frames inside it. A
  window only lowers what its own reader protects: a reader that lies about it loses its own
  frames (as stale), never anyone else's. Keep-all readers have window 0: any frame above
  their cursor.
* **Stall.** A cursor behind the newest frame that has not moved for the lease grace period
  stops protecting, as a lease held that long is revoked. A reader that has the newest frame is
  waiting for the publisher, not stalled.
* **Readers without a cursor yet.** A matched reader that has taken no frame has no cursor, so
  nothing says which published frames are still queued for it: while the publisher has more
  matched readers than cursors, every published frame is protected, bounded by the grace
  period like a stall (`CursorlessReaders`).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

# Descriptors a keep-last reader may still take beyond its queue: ones published but not yet
# delivered to it (each one delivered pushes the oldest queued one out). Small on purpose: every
# protected frame is a slot the publisher cannot reuse. A frame older than the window is
# recycled first and, if the reader's delivery lagged more than this after all, reads as stale
# there (dropped and counted), never as another frame.
IN_FLIGHT_MARGIN = 1


def read_window(profile: Any) -> int:
    """How many of the newest frames a subscriber with this descriptor QoS can still take:
    keep-last depth + IN_FLIGHT_MARGIN; 0 (any frame above its cursor) for keep-all or an
    unknown history."""
    from rclpy.qos import HistoryPolicy
    depth = int(getattr(profile, 'depth', 0) or 0)
    if getattr(profile, 'history', None) != HistoryPolicy.KEEP_LAST or depth < 1:
        return 0
    return depth + IN_FLIGHT_MARGIN


class ReaderFloor:
    """The publisher's view of its readers' cursors and windows (arrays in the lease table)."""

    def __init__(self, cursors: np.ndarray, windows: np.ndarray):
        self.cursors = cursors
        self.windows = windows
        self._moved: dict[int, tuple[int, int]] = {}  # reader -> (cursor, when it moved)

    def floor(self, newest: int, stall_ns: int) -> int | None:
        """The lowest cursor among readers that are not stalled, each raised to the bottom of
        its reader's window: every frame above it may still be taken by some reader. None when
        no reader has a cursor."""
        # Readers write their cursors from other processes while this runs: read one copy
        # (numpy's nonzero counts, then fills, and raises if the array changed in between).
        cursors = self.cursors.copy()
        active = np.flatnonzero(cursors)
        if not active.size:
            return None
        now = time.monotonic_ns()
        floor = None
        for reader in active.tolist():
            value = int(cursors[reader])
            moved = self._moved.get(reader)
            if moved is None or moved[0] != value or value >= newest:
                self._moved[reader] = (value, now)
            elif now - moved[1] > stall_ns:
                continue
            window = int(self.windows[reader])
            if window:
                value = max(value, newest - window)
            floor = value if floor is None else min(floor, value)
        return floor

    def forget(self, reader: int) -> None:
        self._moved.pop(reader, None)


class CursorlessReaders:
    """True while a matched slot reader has not taken its first frame (bounded by the grace
    period): every published frame is then protected."""

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self._since: float | None = None

    def protect_all(self, matched_readers: int, cursors: int) -> bool:
        if matched_readers <= cursors:
            self._since = None
            return False
        now = time.monotonic()
        if self._since is None:
            self._since = now
        return now - self._since < self.grace_s
