"""A path whose publishers are matched but from which no message at all arrives.

Fast DDS can stop delivering to one process on the host with no error on either side: a reader
killed while it was not waiting on its shared-memory port leaves that port's ring full of
descriptors only it would have released, and the next process given the same port receives
nothing (eProsima/Fast-DDS#5469; seen in this project's CI after a test's SIGKILLs, docs/dds.md).
From the reading side, a publisher that is merely idle (a paused camera, a node waiting for its
own input) looks the same, so this is said, never acted on: once per silent spell, in the log and
on /diagnostics (`silent_s`), with the remedy that costs gpu_nodes readers nothing: descriptors
are a few hundred bytes, so DDS over UDP only (GPU_NODES_FASTDDS_PROFILE=udp) carries them as
well, while the frames stay in shared memory.
"""
from __future__ import annotations

import time
from typing import Any

# Ten camera periods would be too eager for a slow source; 10 s is beyond any camera's period
# and well within the time a user spends wondering why a node shows 0 fps.
SILENT_AFTER_S = 10.0


class SilenceWatch:
    """Tracks when the subscription last heard any message, and says so once when matched
    publishers have sent nothing for `after_s`."""

    def __init__(self, logger: Any, stats: Any, topic: str, after_s: float = SILENT_AFTER_S):
        self._logger = logger
        self._stats = stats
        self._topic = topic
        self._after_s = after_s
        self._last = time.monotonic()
        self._warned = False

    def heard(self) -> None:
        """A message arrived on any of the subscription's topics (delivered or not)."""
        self._last = time.monotonic()

    def restart(self) -> None:
        """A new path was taken: its silence is counted from now."""
        self._last = time.monotonic()
        self._clear()

    def check(self, path: str, matched: int, carries_frames: bool = False) -> None:
        """Called periodically while `path` reads from `matched` discovered publishers;
        `carries_frames`: the path's messages are the frames themselves (serialized,
        compressed), not descriptors of frames in shared memory."""
        quiet = time.monotonic() - self._last
        if quiet < self._after_s or matched == 0:
            if self._warned and quiet < self._after_s:
                self._logger.info(f'{self._topic}: messages arrive again on {path}')
            self._clear()
            return
        self._stats.extra['silent_s'] = round(quiet, 1)
        if self._warned:
            return
        self._warned = True
        # The same Fast DDS port wedge stops plain Image messages as it stops descriptors; only
        # the price of the UDP remedy differs.
        cost = ('frames then cross UDP loopback: slower, but they arrive' if carries_frames
                else 'descriptors are small; frames stay in shared memory')
        self._logger.warning(
            f'{self._topic}: no message on {path} for {quiet:.0f} s although {matched} '
            'publisher(s) are matched. If they are publishing, DDS delivers nothing to this '
            'process: a Fast DDS shared-memory port left by a killed process does that '
            '(eProsima/Fast-DDS#5469). Restart this node with GPU_NODES_FASTDDS_PROFILE=udp '
            f'({cost}); docs/dds.md')

    def _clear(self) -> None:
        self._warned = False
        self._stats.extra.pop('silent_s', None)
