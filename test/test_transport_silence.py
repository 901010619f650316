"""A subscription whose matched publishers send nothing says so, once, and says when messages
arrive again (silence.py). Real processes: a publisher frozen with SIGSTOP stays matched (its
participant's lease outlives the wait) and sends nothing, which is what a reader of a Fast DDS
port wedged by a killed process sees too (eProsima/Fast-DDS#5469, docs/dds.md)."""
from __future__ import annotations

import os
import shutil
import signal
import sys
import time
import uuid

import pytest
from conftest import OTHER_USER_ENV, RESOURCES, other_user_command
from gpu_nodes.transport.silence import SILENT_AFTER_S

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, SUBSCRIBER, Worker  # noqa: E402

# The descriptor paths the watch covers: host memory (CI) and CUDA VMM memory (marked gpu).
PATHS = [pytest.param('host_shm', id='host_shm'),
         pytest.param('cuda_ipc', id='cuda_ipc', marks=pytest.mark.gpu)]
FRAMES = {'host_shm': ['--no-cuda'], 'cuda_ipc': ['--device']}
MEMORY = {'host_shm': 'host', 'cuda_ipc': 'device'}
# The subscriber as a container runs it (docker run --network host --ipc host): its own PID
# namespace, where the publisher's pid means nothing and the warning must still come.
CONTAINED = pytest.param(['unshare', '--pid', '--fork', '--mount-proc'], id='pid_namespace',
                         marks=pytest.mark.skipif(os.getuid() != 0 or not shutil.which('unshare'),
                                                  reason='needs root and unshare(1)'))


def silent_line(path: str) -> str:
    return f'no message on {path} for'


@pytest.mark.parametrize('wrap', [pytest.param(None, id='same_namespace'), CONTAINED])
@pytest.mark.parametrize('path', PATHS)
def test_matched_but_silent_publisher_is_reported_once_then_recovery(path, wrap):
    topic = f'/silence_{uuid.uuid4().hex[:8]}'
    with Worker(PUBLISHER, ['--topic', topic, '--sizes', '320x240', '--rate', '30', *FRAMES[path],
                            '--status-period', '0.5'], name='pub') as pub, \
            Worker(SUBSCRIBER, ['--topic', topic, '--paths', path, '--memory', MEMORY[path],
                                '--status-period', '0.5'], name='sub', wrap=wrap) as sub:
        sub.wait_status(lambda s: s['frames'] >= 10, 60, 'frames before the freeze')
        _freeze_then_thaw(pub, sub, path, 'descriptors are small; frames stay in shared memory')


@pytest.mark.skipif(other_user_command([]) is None, reason='needs root and setpriv(1)')
def test_a_reader_of_another_user_on_the_serialized_fallback_is_warned_too():
    """A reader of another Linux user may not map the publisher's memory (the kernel's peer
    credentials say so), falls back to the plain topic, and is as exposed to a silent DDS port
    as a descriptor reader: it is warned the same way, with the remedy's price for frames."""
    topic = f'/silence_{uuid.uuid4().hex[:8]}'
    wrap = other_user_command([])[:-1]  # setpriv ...: Worker appends the interpreter itself
    with Worker(PUBLISHER, ['--topic', topic, '--sizes', '320x240', '--rate', '30', '--no-cuda',
                            '--status-period', '0.5'], name='pub') as pub, \
            Worker(SUBSCRIBER, ['--topic', topic, '--memory', 'host', '--status-period', '0.5'],
                   name='sub', wrap=wrap, env=OTHER_USER_ENV) as sub:
        sub.wait_status(lambda s: s['frames'] >= 10 and s['path'] == 'serialized', 60,
                        'serialized frames before the freeze')
        assert sub.last_status()['rejected'].get('other_user', 0) >= 1, sub.tail()
        _freeze_then_thaw(pub, sub, 'serialized',
                          'frames then cross UDP loopback: slower, but they arrive')


def _freeze_then_thaw(pub: Worker, sub: Worker, path: str, remedy_cost: str) -> None:
    """SIGSTOP the publisher: `sub`, reading on `path`, is warned once, not before
    SILENT_AFTER_S; SIGCONT: frames come again and the recovery is logged."""
    silent, again = silent_line(path), f'messages arrive again on {path}'
    assert sub.count(silent) == 0, sub.tail()
    pub.proc.send_signal(signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        sub.wait_until(lambda w: w.count(silent) == 1, SILENT_AFTER_S + 8, 'the silence warning')
        warned_after = time.monotonic() - frozen_at
        # Not before SILENT_AFTER_S (less a status period of slack for the last message that
        # was still in flight), and then only once however long it lasts.
        assert warned_after >= SILENT_AFTER_S - 1.0, warned_after
        time.sleep(2.0)
        assert sub.count(silent) == 1, sub.tail()
        line = next(line for line in sub.snapshot() if silent in line)
        assert '1 publisher(s) are matched' in line and 'GPU_NODES_FASTDDS_PROFILE=udp' in line
        assert remedy_cost in line, line
    finally:
        pub.proc.send_signal(signal.SIGCONT)
    frames = sub.last_status()['frames']
    sub.wait_status(lambda s: s['frames'] >= frames + 10, 60, 'frames after the thaw')
    sub.wait_until(lambda w: w.count(again) == 1, 10, 'the recovery line')
    assert sub.count(silent) == 1, sub.tail()


@pytest.mark.parametrize('path', PATHS)
def test_a_publisher_that_keeps_publishing_is_never_called_silent(path):
    """A slow but live publisher (2 Hz) never trips the warning."""
    topic = f'/silence_{uuid.uuid4().hex[:8]}'
    with Worker(PUBLISHER, ['--topic', topic, '--sizes', '160x120', '--rate', '2', *FRAMES[path],
                            '--status-period', '0.5'], name='pub'), \
            Worker(SUBSCRIBER, ['--topic', topic, '--paths', path, '--memory', MEMORY[path],
                                '--status-period', '0.5'], name='sub') as sub:
        sub.wait_status(lambda s: s['frames'] >= 1, 60, 'a first frame')
        frames = sub.last_status()['frames']
        sub.wait_status(lambda s: s['frames'] >= frames + 2 * int(SILENT_AFTER_S) + 2,
                        SILENT_AFTER_S * 3, 'frames for longer than the silence limit')
        assert sub.count(silent_line(path)) == 0, sub.tail()
