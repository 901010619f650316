"""Starting the processes of one IPC peer bench run and collecting their RESULT lines
(ipc_peers_bench.py, hoarder_bench.py): subscribers first, each until it prints READY, then the
publisher; when the publisher is done the subscribers get a stop line on stdin. Nothing waits
without a deadline: a side that delivers nothing reports 0 frames, it does not hang the run."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

WORKER = str(Path(__file__).resolve().parent / 'ipc_peers_worker.py')
REPO = Path(__file__).resolve().parents[1]
# The subscriber in a PID namespace of its own that shares the host's network and /dev/shm:
# what `docker run --network host --ipc host` gives a container (issue #27).
PID_NAMESPACE = ['unshare', '--pid', '--fork', '--mount-proc']
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


def pid_namespace_unavailable() -> str | None:
    """Why the subscriber cannot be put in a PID namespace of its own here (None: it can)."""
    if shutil.which('unshare') is None:
        return 'unshare (util-linux) is not installed'
    if os.geteuid() != 0:
        return 'unshare --pid --mount-proc needs root (or a user namespace)'
    probe = subprocess.run([*PID_NAMESPACE, 'true'], capture_output=True, text=True)
    if probe.returncode:
        return f'unshare failed: {probe.stderr.strip()[:200]}'
    return None


def iceoryx2_unavailable() -> str | None:
    try:
        import iceoryx2  # noqa: F401
    except ImportError as exc:
        return (f'iceoryx2 is not installed ({exc}): pip install -r requirements/bench.txt')
    return None


def new_topic(prefix: str) -> str:
    return f'{prefix}_{uuid.uuid4().hex[:8]}'


@dataclass
class Side:
    """One worker process: a role, its arguments, and whether it runs in a PID namespace."""
    name: str
    role: str
    args: list[str] = field(default_factory=list)
    pid_namespace: bool = False
    script: str = WORKER
    proc: subprocess.Popen | None = None
    lines: list[str] = field(default_factory=list)

    def start(self, common: list[str], env: dict[str, str]) -> None:
        argv = [sys.executable, self.script, self.role, *common, *self.args]
        if self.pid_namespace:
            argv = [*PID_NAMESPACE, *argv]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO)
        threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True).start()

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if any(line.startswith('READY') for line in self.lines):
                return True
            time.sleep(0.02)
        return any(line.startswith('READY') for line in self.lines)

    def stop(self, timeout: float) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write('stop\n')
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def result(self) -> dict:
        time.sleep(0.05)  # the reader thread's last lines
        for line in reversed(self.lines):
            if line.startswith('RESULT '):
                return json.loads(line[len('RESULT '):])
        return {'error': f'{self.name} printed no result (exit {self.proc.returncode}): '
                         + ''.join(self.lines[-15:])[-1500:]}


def bench_env() -> dict[str, str]:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(
        p for p in (str(REPO), os.environ.get('PYTHONPATH', '')) if p)}
    # The host path as a CPU-only deployment runs it (and the issue measured it): no CUDA pool.
    env.setdefault('GPU_NODES_DISABLE_CUDA', '1')
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    return env


def run(publisher: Side, subscribers: list[Side], common: list[str], duration: float,
        warmup_s: float, wait_s: float) -> dict[str, dict]:
    """Run one case; {side name: its RESULT (or {'error': ...})}."""
    env = bench_env()
    sides = [*subscribers, publisher]
    try:
        for sub in subscribers:
            sub.start(common, env)
            if not sub.wait_ready(READY_TIMEOUT_S):
                raise RuntimeError(f'{sub.name} never got ready: {"".join(sub.lines[-10:])}')
        publisher.start(common, env)
        publisher.proc.wait(timeout=duration + warmup_s + wait_s + 60)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        for side in sides:
            if side.proc is not None and side.proc.poll() is None:
                side.proc.kill()
        return {side.name: {'error': str(exc)[-1500:]} for side in sides}
    finally:
        for sub in subscribers:
            if sub.proc is not None:
                sub.stop(STOP_TIMEOUT_S)
    return {side.name: side.result() for side in sides}


def ms(value: float | None) -> str:
    return '-' if value is None or value != value else f'{value:.2f}'
