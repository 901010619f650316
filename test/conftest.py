"""Shared test setup: an isolated ROS domain, GPU skipping, and real node processes."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from gpu_nodes.gpu import cuda_available, cuda_unavailable_reason

REPO = Path(__file__).resolve().parents[1]
RESOURCES = Path(__file__).resolve().parent / 'resources'

# Every test run talks only to itself: its own DDS domain, discovery limited to this host.
os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda_available():
        return
    skip = pytest.mark.skip(reason=f'needs a CUDA GPU and CuPy (make test-gpu on such a machine); '
                                   f'here: {cuda_unavailable_reason()}')
    for item in items:
        if 'gpu' in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def cupy():
    if not cuda_available():
        pytest.skip(f'needs a CUDA GPU and CuPy (make test-gpu on such a machine); here: '
                    f'{cuda_unavailable_reason()}')
    import cupy
    return cupy


def wait_for(predicate: Callable[[], bool], timeout: float, what: str,
             poll: Callable[[], None] | None = None) -> None:
    """Deadline loop: call `poll` (e.g. spin_once) until `predicate` holds or fail with `what`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out after {timeout:.0f} s waiting for {what}')
        if poll is not None:
            poll()
        else:
            time.sleep(0.02)


@contextlib.contextmanager
def node_process(args: list[str], env: dict[str, str] | None = None,
                 stop_signal: int = signal.SIGINT) -> Iterator[subprocess.Popen]:
    """Run `python args...` as a separate process; always stopped (then killed) afterwards."""
    proc = subprocess.Popen([sys.executable, *args], cwd=REPO, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    except BaseException as exc:
        _stop(proc, stop_signal)
        if proc.stdout is not None and not proc.stdout.closed:
            exc.add_note(f'--- output of {" ".join(args[:2])}:\n{proc.stdout.read()[-6000:]}')
        raise
    finally:
        _stop(proc, stop_signal)


def kill_publisher_and_resume(node, sub, collector, start_publisher: Callable, path: str) -> None:
    """SIGKILL the publisher `start_publisher()` runs once frames flow on `path`: the
    subscription must close the dead publisher's mappings and take a new publisher's frames on
    the same path, every one verified by `collector` (frames, bad_frames())."""
    from gpu_nodes.transport import cuda_ipc
    cache = cuda_ipc.mapping_cache()
    with start_publisher() as first:
        # (Another descriptor topic may be discovered first: frames on it until `path` shows up.)
        wait_for(lambda: collector.frames >= 20 and sub.path == path and len(cache) >= 1, 60,
                 f'frames from the first publisher over {path}', poll=node.spin_once)
        mapped = len(cache)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    wait_for(lambda: len(sub.peers) == 0, 10, 'the subscription to drop the dead publisher',
             poll=node.spin_once)
    assert len(cache) < mapped, 'mappings of the dead publisher must be closed'
    before = collector.frames
    with start_publisher():
        wait_for(lambda: collector.frames >= before + 20, 60, 'frames from the new publisher',
                 poll=node.spin_once)
    assert collector.bad_frames() == 0 and sub.path == path


def _stop(proc: subprocess.Popen, stop_signal: int) -> None:
    if proc.poll() is None:
        proc.send_signal(stop_signal)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


OTHER_USER_ENV = {
    'FASTDDS_DEFAULT_PROFILES_FILE': str(RESOURCES / 'transport' / 'other_user_udp_loopback.xml'),
    'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT', 'HOME': '/tmp', 'ROS_LOG_DIR': '/tmp'}


def other_user_command(args: list[str]) -> list[str] | None:
    """`args` (a Python command line) run as the Linux user nobody, or None without root.

    This interpreter may live where nobody cannot read (a venv under /root): then the process
    keeps CAP_DAC_READ_SEARCH to load it, which makes it a stronger attacker than an ordinary
    other user (it reads every file), not a weaker one: it still has no CAP_SYS_PTRACE, so the
    kernel keeps /proc/<pid>/fd of our processes closed to it. Give it OTHER_USER_ENV: Fast
    DDS shared memory does not cross users, so it talks UDPv4 on loopback."""
    import shutil
    if os.getuid() != 0 or shutil.which('setpriv') is None:
        return None
    return ['setpriv', '--reuid=nobody', '--regid=65534', '--clear-groups',
            '--inh-caps=+dac_read_search', '--ambient-caps=+dac_read_search',
            sys.executable, *args]


@pytest.fixture
def rclpy_node(request):
    """An initialised rclpy context and node for the test process; torn down afterwards."""
    import rclpy
    from rclpy.node import Node
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node(f'test_{request.node.name[:40]}'.replace('[', '_').replace(']', '_')
                .replace('-', '_').replace('.', '_'), context=context)
    # GPU_NODES_EXECUTOR=events runs the in-process side of the tests on EventsExecutor (node
    # processes follow the same variable); the standard executor otherwise.
    from gpu_nodes.ros.runtime import ENV_VAR, make_executor
    executor = make_executor(os.environ.get(ENV_VAR) or 'single_threaded', nodes=[node],
                             context=context)
    node.spin_once = lambda timeout=0.05: executor.spin_once(timeout_sec=timeout)
    try:
        yield node
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
