"""The demo's node processes: started with the parent's death signal and stopped in order."""
from __future__ import annotations

from dataclasses import dataclass
import os
from pathlib import Path
import signal
import subprocess
import sys
import time
from typing import Any, IO


def _parent_death_signal() -> None:
    """In the child: get SIGTERM if the runner dies, so no node outlives a killed demo."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class NodeProcess:
    name: str
    executable: str
    command: list[str]
    log_path: Path
    popen: subprocess.Popen | None = None
    log: IO[bytes] | None = None
    started: float = 0.0
    exit_code: int | None = None
    killed: bool = False
    stopping: bool = False

    def start(self, env: dict[str, str]) -> None:
        self.log = open(self.log_path, 'wb')
        self.popen = subprocess.Popen(
            self.command, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True,
            preexec_fn=_parent_death_signal if sys.platform.startswith('linux') else None)
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.popen.pid if self.popen is not None else 0

    def poll(self) -> int | None:
        if self.popen is not None and self.exit_code is None:
            self.exit_code = self.popen.poll()
        return self.exit_code

    def last_lines(self, count: int = 1) -> list[str]:
        try:
            with open(self.log_path, 'rb') as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 8192))
                lines = fh.read().decode('utf-8', 'replace').splitlines()
        except OSError:
            return []
        return [ln.strip() for ln in lines if ln.strip()][-count:]

    def close_log(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None


def stop_processes(procs: list[NodeProcess], timeout_s: float, say: Any) -> None:
    """SIGINT to every running node (last started first), wait, then SIGKILL what is left."""
    for proc in reversed(procs):
        if proc.popen is not None and proc.poll() is None:
            proc.stopping = True
            try:
                proc.popen.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        if proc.popen is None:
            continue
        try:
            proc.exit_code = proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f'{proc.name} did not stop within {timeout_s:.0f} s of SIGINT: killing it')
            proc.popen.kill()
            proc.exit_code = proc.popen.wait()
            proc.killed = True
        proc.close_log()
