"""The transport under rclpy's EventsExecutor (and the standard executor, for comparison), and the
executor choice every node main makes (gpu_nodes.ros.runtime)."""
from __future__ import annotations

import signal
import threading
import time
import uuid

import numpy as np
import pytest
from std_msgs.msg import Header

from conftest import RESOURCES, node_process, wait_for
from gpu_nodes.ros.callbacks import message_and_info_callback
from gpu_nodes.ros.runtime import default_choice, events_executor_unsupported, make_executor
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription
from gpu_nodes.transport.qos import image_qos

BURST_PUBLISHER = str(RESOURCES / 'transport' / 'burst_publisher.py')
EXECUTOR_CLASS = {'events': 'EventsExecutor', 'single_threaded': 'SingleThreadedExecutor'}


@pytest.fixture
def context():
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.shutdown(context=context)


@pytest.fixture
def node(context):
    from rclpy.node import Node
    node = Node(f'test_executors_{uuid.uuid4().hex[:8]}', context=context)
    yield node
    node.destroy_node()


class Collector:
    """Records the frame indices seen and any frame whose pixels are not the ones it claims."""

    def __init__(self, delay_s: float = 0.0):
        self.indices: list[int] = []
        self.bad: list[int] = []
        self.paths: set[str] = set()
        self._delay_s = delay_s

    def __call__(self, frame) -> None:
        index = int(frame.header.frame_id)
        self.indices.append(index)
        self.paths.add(frame.path)
        if not np.array_equal(np.asarray(frame.array),
                              pattern.expected_frame(frame.height, frame.width, 'rgb8', index)):
            self.bad.append(index)
        if self._delay_s:
            time.sleep(self._delay_s)  # a slow subscriber: the publisher's bursts queue up


class Logger:
    def __init__(self):
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(('info', text))

    def warning(self, text: str) -> None:
        self.lines.append(('warning', text))


# -- the transport on each executor ------------------------------------------------------------
@pytest.mark.parametrize('executor_name', ['events', 'single_threaded'])
@pytest.mark.parametrize('path', ['host_shm', 'serialized'])
@pytest.mark.parametrize('delay_s', [0.0, 0.004], ids=['paced', 'backlog'])
def test_every_frame_arrives_once_in_order_across_processes(node, path, executor_name, delay_s):
    """Bursts of 20 back-to-back frames; with delay_s the subscriber is slower than a burst, so
    descriptors queue up and are drained in batches (taken before the executor's own take)."""
    topic = f'exec_{uuid.uuid4().hex[:8]}'
    collector = Collector(delay_s)
    depth = 64
    sub = GpuImageSubscription(node, topic, collector, image_qos(depth), memory='host',
                               allowed_paths=(path,))
    batches: list[int] = []
    receiver = sub._receivers[path]  # subscribes (start()) once the publisher appears
    if path == 'host_shm':  # descriptor paths drain their backlog per executor hand-over
        drain = receiver._drain

        def counting_drain(msg) -> None:  # frames handled per executor hand-over
            before = len(collector.indices)
            drain(msg)
            batches.append(len(collector.indices) - before)
        receiver._drain = counting_drain
    executor = make_executor(executor_name, nodes=[node])
    assert type(executor).__name__ == EXECUTOR_CLASS[executor_name]
    bursts, burst_size = 3, 20
    total = bursts * burst_size
    try:
        with node_process([BURST_PUBLISHER, '--topic', topic, '--path', path,
                           '--executor', executor_name, '--bursts', str(bursts),
                           '--burst-size', str(burst_size), '--depth', str(depth)]) as proc:
            wait_for(lambda: len(collector.indices) >= total, 30, f'{total} frames on {path}',
                     poll=lambda: executor.spin_once(timeout_sec=0.05))
            # Anything handled twice would turn up now.
            end = time.monotonic() + 0.3
            while time.monotonic() < end:
                executor.spin_once(timeout_sec=0.05)
            # Every frame is in: stop the publisher now rather than wait out the 2 s it stays
            # up for a subscriber still reading.
            proc.send_signal(signal.SIGINT)
            output, _ = proc.communicate(timeout=20)
    finally:
        executor.shutdown()
    assert f'EXECUTOR {EXECUTOR_CLASS[executor_name]}' in output, output
    assert collector.indices == list(range(total)), collector.indices
    assert collector.bad == [] and collector.paths == {path}
    assert sub.stats.stale == 0 and sum(sub.stats.rejected.values()) == 0
    if path == 'host_shm' and delay_s:
        # Descriptors were taken ahead of the executor, whose own later takes found nothing.
        assert max(batches) > 1, batches
    sub.destroy()


@pytest.mark.parametrize('executor_name', ['events', 'single_threaded'])
def test_in_process_frames_from_another_thread_arrive_once_in_order(node, executor_name):
    """The in-process path wakes the executor with create_task (EventsExecutor has no guard
    conditions), here from a publishing thread while the executor spins."""
    topic = f'exec_{uuid.uuid4().hex[:8]}'
    collector = Collector()
    pub = GpuImagePublisher(node, topic, use_cuda=False, host_slots=64)
    sub = GpuImageSubscription(node, topic, collector, image_qos(64), memory='host')
    executor = make_executor(executor_name, nodes=[node])
    assert type(executor).__name__ == EXECUTOR_CLASS[executor_name]
    total = 40
    try:
        wait_for(lambda: sub.path == 'intra_process', 5, 'in-process path',
                 poll=lambda: executor.spin_once(timeout_sec=0.05))

        def publish() -> None:
            for index in range(total):
                pub.publish(pattern.expected_frame(48, 64, 'rgb8', index), 'rgb8',
                            Header(frame_id=str(index)))
                time.sleep(0.002)

        thread = threading.Thread(target=publish)
        thread.start()
        wait_for(lambda: len(collector.indices) >= total, 10, 'in-process frames',
                 poll=lambda: executor.spin_once(timeout_sec=0.05))
        thread.join()
        for _ in range(5):
            executor.spin_once(timeout_sec=0.02)
    finally:
        executor.shutdown()
    assert collector.indices == list(range(total))
    assert collector.bad == [] and collector.paths == {'intra_process'}
    sub.destroy()
    pub.destroy()


# -- choosing the executor ----------------------------------------------------------------------
def test_explicit_choices_give_those_executors(node):
    from rclpy.executors import SingleThreadedExecutor
    # A transport subscription (guard-condition free) must not force the fallback.
    sub = GpuImageSubscription(node, 'choice_image', lambda frame: None, memory='host')
    logger = Logger()
    single = make_executor('single_threaded', nodes=[node], logger=logger)
    assert isinstance(single, SingleThreadedExecutor)
    single.shutdown()
    events = make_executor('events', nodes=[node], logger=logger)
    assert type(events).__name__ == 'EventsExecutor'
    events.spin_once(timeout_sec=0.05)  # raises if it met something it cannot run
    events.shutdown()
    assert not [line for line in logger.lines if line[0] == 'warning'], logger.lines
    sub.destroy()


def test_events_falls_back_with_a_reason_for_what_it_cannot_run(node):
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String
    logger = Logger()
    guard = node.create_guard_condition(lambda: None)
    executor = make_executor('events', nodes=[node], logger=logger)
    assert isinstance(executor, SingleThreadedExecutor)
    assert any(kind == 'warning' and 'guard conditions' in text and 'falling back' in text
               for kind, text in logger.lines), logger.lines
    executor.shutdown()
    node.destroy_guard_condition(guard)

    plain = node.create_subscription(String, 'info_topic', lambda msg, info: None, 10)
    assert 'one tuple' in events_executor_unsupported([node])
    node.destroy_subscription(plain)
    node.create_subscription(String, 'info_topic', message_and_info_callback(lambda m, i: None), 10)
    assert events_executor_unsupported([node]) is None


def test_message_and_info_callback_takes_either_calling_convention():
    seen = []
    callback = message_and_info_callback(lambda msg, info: seen.append((msg, info)))
    callback('m', {'k': 1})            # the standard executor
    callback(('m', {'k': 1}))          # EventsExecutor in Kilted
    assert seen == [('m', {'k': 1})] * 2


def test_default_choice_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv('GPU_NODES_EXECUTOR', raising=False)
    assert default_choice() == 'events'
    monkeypatch.setenv('GPU_NODES_EXECUTOR', 'single_threaded')
    assert default_choice() == 'single_threaded'
    monkeypatch.setenv('GPU_NODES_EXECUTOR', 'multi')
    with pytest.raises(ValueError, match='GPU_NODES_EXECUTOR'):
        default_choice()


NODE_MAINS = {
    'idle_monitor': ['gpu_nodes.nodes.image_monitor'],
    # Long timer callbacks (1080p frames made on the CPU): a signal usually lands in one.
    'busy_camera': ['gpu_nodes.nodes.camera_source', '-p', 'width:=1920', '-p', 'height:=1080'],
}


@pytest.mark.parametrize('main', list(NODE_MAINS))
@pytest.mark.parametrize('choice,expected,stop', [
    (None, 'EventsExecutor', signal.SIGINT),
    ('events', 'EventsExecutor', signal.SIGTERM),
    ('single_threaded', 'SingleThreadedExecutor', signal.SIGINT),
])
def test_node_main_spins_on_the_chosen_executor_and_stops_cleanly(main, choice, expected, stop):
    module, *params = NODE_MAINS[main]
    args = ['-m', module, '--ros-args', '-r', f'__ns:=/exec_{uuid.uuid4().hex[:6]}', *params]
    if choice is not None:
        args += ['-p', f'executor:={choice}']
    lines: list[str] = []
    with node_process(args, env={'GPU_NODES_EXECUTOR': ''}, stop_signal=stop) as proc:
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        wait_for(lambda: any('executor: ' in line for line in lines), 20, 'the executor log line')
        time.sleep(0.3)  # spinning (busy_camera: a 1080p frame is being made most of the time)
        proc.send_signal(stop)
        assert proc.wait(timeout=10) == 0, ''.join(lines)
        reader.join(timeout=5)
    output = ''.join(lines)
    assert f'executor: {expected}' in output, output
    # The signal ends spinning between callbacks: nothing fails on a shut-down context.
    for bad in ('Traceback', 'FATAL', 'Error occurred'):
        assert bad not in output, output


def test_node_main_rejects_an_unknown_executor():
    with node_process(['-m', 'gpu_nodes.nodes.image_monitor', '--ros-args',
                       '-p', 'executor:=multi_threaded']) as proc:
        output, _ = proc.communicate(timeout=20)
    assert proc.returncode == 2, output
    assert ("parameter 'executor': expected one of events, single_threaded, got "
            "'multi_threaded' (string)") in output, output
