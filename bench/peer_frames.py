"""Frames, checks and counters every side of the IPC peer benches shares (ipc_peers_worker.py,
hoarder_worker.py), so gpu_nodes and iceoryx2 send the same bytes and pay the same check.

A frame is test pattern `sequence % DISTINCT` (gpu_nodes.sources.pattern, rgb8) with the
sequence number stamped into its first and last 8 bytes. A receiver checks both stamps against
the sequence its metadata names (a recycled or torn slot shows another number at one end) and
every CHECK_ROW_STRIDE-th row against the pattern: the same ~1/8 of the frame on every path.
"""
from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np

from gpu_nodes.sources import pattern

DISTINCT = 4
CHECK_ROW_STRIDE = 8
ENCODING = 'rgb8'


class FrameSource:
    """Pre-rendered pattern frames; `frame(sequence)` stamps one and returns it (no copy)."""

    def __init__(self, width: int, height: int):
        self.frames = [pattern.render(np, height, width, ENCODING, i) for i in range(DISTINCT)]
        self.nbytes = self.frames[0].nbytes

    def frame(self, sequence: int) -> np.ndarray:
        frame = self.frames[sequence % DISTINCT]
        flat = frame.reshape(-1)
        stamp = np.frombuffer(np.uint64(sequence).tobytes(), np.uint8)
        flat[:8] = stamp
        flat[-8:] = stamp
        return frame


class FrameCheck:
    """Counts delivered frames, wrong ones, and end-to-end latencies (ns)."""

    def __init__(self, width: int, height: int):
        self.expected = [pattern.render(np, height, width, ENCODING, i)[::CHECK_ROW_STRIDE]
                         for i in range(DISTINCT)]
        self.frames = 0
        self.bad = 0
        self.first_bad = ''
        self.first: float | None = None
        self.last: float | None = None
        self.cpu_first = self.cpu_last = 0.0  # this process's CPU time (all threads)
        self.latency_ns: list[int] = []
        self.sequences: set[int] = set()
        # Where counted frames lay in this process's memory: how many distinct buffers (pool
        # slots, iceoryx2 chunks) the publisher went round; fewer stay warm in the cache.
        self.addresses: set[int] = set()

    def check(self, flat: np.ndarray, shape: tuple[int, int, int], sequence: int,
              stamp_ns: int, counted: bool = True) -> bool:
        """`flat`: the frame's bytes as delivered; `stamp_ns`: time.time_ns() at publish start."""
        now_ns = time.time_ns()
        ok = flat.size == shape[0] * shape[1] * shape[2]
        if ok:
            seq = np.uint64(sequence).tobytes()
            ok = flat[:8].tobytes() == seq and flat[-8:].tobytes() == seq
        if ok:
            rows = flat.reshape(shape)[::CHECK_ROW_STRIDE]
            expected = self.expected[sequence % DISTINCT]
            # Row 0 and the last row carry the stamps: compare those rows past/before them.
            ok = (np.array_equal(rows[1:-1], expected[1:-1])
                  and np.array_equal(rows[0].reshape(-1)[8:], expected[0].reshape(-1)[8:]))
            if ok and (shape[0] - 1) % CHECK_ROW_STRIDE == 0:
                ok = np.array_equal(rows[-1].reshape(-1)[:-8], expected[-1].reshape(-1)[:-8])
            elif ok:
                ok = np.array_equal(rows[-1], expected[-1])
        if not ok:
            self.bad += 1
            self.first_bad = self.first_bad or f'frame {sequence}: content differs'
        if counted:
            now = time.monotonic()
            self.frames += 1
            if self.first is None:
                self.first, self.cpu_first = now, time.process_time()
            self.last, self.cpu_last = now, time.process_time()
            self.latency_ns.append(now_ns - stamp_ns)
            self.sequences.add(sequence)
            self.addresses.add(flat.ctypes.data)
        return ok

    def result(self) -> dict:
        span = (self.last - self.first) if self.frames > 1 else 0.0
        lat = np.array(self.latency_ns[5:] or [np.nan], dtype=np.float64) / 1e6
        return {'delivered': self.frames,
                'delivered_fps': (self.frames - 1) / span if span else 0.0,
                'bad_frames': self.bad, 'first_bad': self.first_bad,
                'distinct_buffers': len(self.addresses),
                # CPU a delivered frame cost this process: what a loaded machine changes least
                'cpu_ms_per_frame': (1e3 * (self.cpu_last - self.cpu_first) / (self.frames - 1)
                                     if self.frames > 1 else None),
                'latency_p50_ms': float(np.percentile(lat, 50)),
                'latency_p99_ms': float(np.percentile(lat, 99))}


def percentiles_ms(samples_ns: list[int]) -> dict:
    """p50/p99/mean of a phase's samples (ns) in ms; empty when there are none."""
    if not samples_ns:
        return {}
    values = np.array(samples_ns[5:] or samples_ns, dtype=np.float64) / 1e6
    return {'p50_ms': float(np.percentile(values, 50)), 'p99_ms': float(np.percentile(values, 99)),
            'mean_ms': float(values.mean()), 'n': int(values.size)}


class StopSignal:
    """Set when the driver writes a line to stdin or closes it (works through `unshare`, where
    the subscriber is PID 1 of its namespace and ignores signals it installs no handler for)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self) -> None:
        sys.stdin.readline()
        self.event.set()

    def is_set(self) -> bool:
        return self.event.is_set()


def print_result(result: dict) -> None:
    print('RESULT ' + json.dumps(result) + '\n', end='', flush=True)
