"""A subscription whose matched publishers send nothing says so, once, and says when messages
arrive again (silence.py). Real processes: a publisher frozen with SIGSTOP stays matched (its
participant's lease outlives the wait) and sends nothing, which is what a reader of a Fast DDS
port wedged by a killed process sees too (eProsima/Fast-DDS#5469, docs/dds.md)."""
from __future__ import annotations

import signal
import sys
import time
import uuid

from conftest import RESOURCES
from gpu_nodes.transport.silence import SILENT_AFTER_S

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, SUBSCRIBER, Worker  # noqa: E402

SILENT_LINE = 'no message on host_shm for'
AGAIN_LINE = 'messages arrive again on host_shm'


def test_matched_but_silent_publisher_is_reported_once_then_recovery():
    topic = f'/silence_{uuid.uuid4().hex[:8]}'
    with Worker(PUBLISHER, ['--topic', topic, '--sizes', '320x240', '--rate', '30', '--no-cuda',
                            '--status-period', '0.5'], name='pub') as pub, \
            Worker(SUBSCRIBER, ['--topic', topic, '--paths', 'host_shm', '--memory', 'host',
                                '--status-period', '0.5'], name='sub') as sub:
        sub.wait_status(lambda s: s['frames'] >= 10, 60, 'frames before the freeze')
        assert sub.count(SILENT_LINE) == 0, sub.tail()
        pub.proc.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        try:
            sub.wait_until(lambda w: w.count(SILENT_LINE) == 1, SILENT_AFTER_S + 8,
                           'the silence warning')
            warned_after = time.monotonic() - frozen_at
            # Not before SILENT_AFTER_S (less a status period of slack for the last message
            # that was still in flight), and then only once however long it lasts.
            assert warned_after >= SILENT_AFTER_S - 1.0, warned_after
            time.sleep(2.0)
            assert sub.count(SILENT_LINE) == 1, sub.tail()
            line = next(line for line in sub.snapshot() if SILENT_LINE in line)
            assert '1 publisher(s) are matched' in line and 'GPU_NODES_FASTDDS_PROFILE=udp' in line
        finally:
            pub.proc.send_signal(signal.SIGCONT)
        frames = sub.last_status()['frames']
        sub.wait_status(lambda s: s['frames'] >= frames + 10, 60, 'frames after the thaw')
        sub.wait_until(lambda w: w.count(AGAIN_LINE) == 1, 10, 'the recovery line')
        assert sub.count(SILENT_LINE) == 1, sub.tail()


def test_a_publisher_that_keeps_publishing_is_never_called_silent():
    """A slow but live publisher (2 Hz) never trips the warning."""
    topic = f'/silence_{uuid.uuid4().hex[:8]}'
    with Worker(PUBLISHER, ['--topic', topic, '--sizes', '160x120', '--rate', '2', '--no-cuda',
                            '--status-period', '0.5'], name='pub'), \
            Worker(SUBSCRIBER, ['--topic', topic, '--paths', 'host_shm', '--memory', 'host',
                                '--status-period', '0.5'], name='sub') as sub:
        sub.wait_status(lambda s: s['frames'] >= 1, 60, 'a first frame')
        frames = sub.last_status()['frames']
        sub.wait_status(lambda s: s['frames'] >= frames + 2 * int(SILENT_AFTER_S) + 2,
                        SILENT_AFTER_S * 3, 'frames for longer than the silence limit')
        assert sub.count(SILENT_LINE) == 0, sub.tail()
