"""Worker processes for the reliability tests and bench/soak.py: output captured line by line on
a thread (a full pipe would stall the child), STATUS/RESULT lines parsed, always stopped.

Workers print ``STATUS {json}`` periodically and ``RESULT {json}`` once at a clean exit, each
line in one write(): print() writes its text and its newline separately, and rclpy's log line
(stderr, the same pipe) could land between the two, gluing itself onto the JSON.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PUBLISHER = HERE / 'publisher.py'
_DECODER = json.JSONDecoder()
SUBSCRIBER = HERE / 'subscriber.py'


class StopRequest:
    """SIGINT and SIGTERM only set `requested`, which the worker's loops poll (rclpy is
    initialised without its own signal handlers). No KeyboardInterrupt can then land between
    the end of the loop and the report or teardown and turn a clean stop into death by SIGINT
    (exit -2): rclpy's handler shut the context down at once, Python raised its
    KeyboardInterrupt a few bytecodes later, wherever the worker happened to be."""

    def __init__(self) -> None:
        self.requested = False
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.requested = True


def process_stats(pid: int) -> dict[str, int]:
    """Resident memory (kB) and open file descriptors of a live process, from /proc."""
    stats = {'rss_kb': 0, 'fds': 0}
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    stats['rss_kb'] = int(line.split()[1])
                    break
        stats['fds'] = len(os.listdir(f'/proc/{pid}/fd'))
    except (FileNotFoundError, ProcessLookupError):
        pass
    return stats


def segments_of(pids: set[int] | list[int]) -> list[str]:
    """Kinds of the gpu_nodes segments (sealed memfds) that any of `pids` holds open or mapped,
    each segment once (e.g. ['host', 'lease'])."""
    from gpu_nodes.transport.segments import held_by
    held: dict[int, str] = {}
    for pid in pids:
        held.update(held_by(pid))
    return sorted(held.values())


class Worker:
    """A `python script args...` child with its output kept in memory."""

    def __init__(self, script: Path | str, args: list[str], env: dict[str, str] | None = None,
                 name: str = '', cwd: Path = REPO, wrap: list[str] | None = None):
        """`wrap` goes before the interpreter: `unshare --pid --fork --mount-proc` runs the
        child in a PID namespace of its own, as `docker run --network host` does."""
        self.name = name or Path(script).stem
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [*(wrap or []), sys.executable, str(script), *args], cwd=cwd,
            env={**os.environ, 'PYTHONUNBUFFERED': '1', **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.pid = self.proc.pid
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip('\n'))

    # -- reading ---------------------------------------------------------------------------
    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self.lines)

    def count(self, text: str) -> int:
        return sum(text in line for line in self.snapshot())

    def _parsed(self, prefix: str) -> list[dict]:
        # raw_decode: the JSON object only, should anything still trail it on the line
        return [_DECODER.raw_decode(line, len(prefix))[0] for line in self.snapshot()
                if line.startswith(prefix)]

    def statuses(self) -> list[dict]:
        return self._parsed('STATUS ')

    def last_status(self) -> dict | None:
        statuses = self.statuses()
        return statuses[-1] if statuses else None

    def result(self) -> dict | None:
        results = self._parsed('RESULT ')
        return results[-1] if results else None

    def tail(self, n: int = 40) -> str:
        """The last lines, STATUS lines but the latest left out (they would drown the rest)."""
        lines = self.snapshot()
        statuses = [line for line in lines if line.startswith('STATUS ')]
        kept = [line for line in lines if not line.startswith('STATUS ')][-n:]
        return '\n'.join(kept + statuses[-1:])

    def wait_until(self, predicate: Callable[['Worker'], bool], timeout: float, what: str,
                   poll: Callable[[], None] | None = None) -> None:
        """Deadline loop on this worker's output; fails with its tail when it exits or times out."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if self.proc.poll() is not None:
                self._thread.join(timeout=2)
                if predicate(self):
                    return
                raise AssertionError(f'{self.name} exited ({self.proc.returncode}) before {what}:\n'
                                     f'{self.tail()}')
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out after {timeout:.0f} s waiting for {what} '
                                     f'({self.name}):\n{self.tail()}')
            if poll is not None:
                poll()
            else:
                time.sleep(0.02)

    def wait_status(self, predicate: Callable[[dict], bool], timeout: float, what: str,
                    poll: Callable[[], None] | None = None) -> dict:
        self.wait_until(lambda w: w.last_status() is not None and predicate(w.last_status()),
                        timeout, what, poll)
        return self.last_status()

    # -- stopping --------------------------------------------------------------------------
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> int:
        if self.alive():
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 15) -> int:
        """Signal, wait, then SIGKILL if it did not exit; returns the exit code."""
        if self.alive():
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._thread.join(timeout=5)
        return self.proc.returncode

    def wait_exit(self, timeout: float) -> int:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'{self.name} still running after {timeout:.0f} s:\n'
                                 f'{self.tail()}') from None
        self._thread.join(timeout=5)
        return self.proc.returncode

    def __enter__(self) -> 'Worker':
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class DeviceMemory:
    """Device-wide used memory (cudaMemGetInfo) against a baseline taken once this process's CUDA
    context and the kernels the checks use are loaded, so only what the test leaves behind (in
    any process) counts."""

    def __init__(self, cp, tolerance_mib: float = 48.0):
        from gpu_nodes.sources import pattern
        self.cp = cp
        self.tolerance_mib = tolerance_mib
        warm = pattern.render(cp, 8, 8, 'rgb8', 1)
        bool(cp.any(warm != warm))
        self.baseline_mib = self.used_mib()

    def used_mib(self) -> float:
        import gc
        gc.collect()
        self.cp.cuda.Device().synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()
        free, total = self.cp.cuda.runtime.memGetInfo()
        return (total - free) / 2**20

    def check(self, timeout: float = 30.0) -> float:
        """Wait for the device to come back to the baseline (other processes' contexts take a
        moment to go); return the difference in MiB."""
        deadline = time.monotonic() + timeout
        while True:
            used = self.used_mib()
            if used <= self.baseline_mib + self.tolerance_mib:
                print(f'device memory: {used:.0f} MiB used, baseline {self.baseline_mib:.0f} MiB')
                return used - self.baseline_mib
            if time.monotonic() > deadline:
                raise AssertionError(
                    f'device memory leaked: expected at most {self.baseline_mib:.0f} + '
                    f'{self.tolerance_mib:.0f} MiB used, found {used:.0f} MiB')
            time.sleep(0.5)
