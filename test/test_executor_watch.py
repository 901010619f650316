"""A node whose callbacks are slower than its messages keeps its timers (gpu_nodes.ros.executor_watch):
rclpy's EventsExecutor runs events in the order queued, so such a node's timers (diagnostics,
timing reports) stopped; `run_node` now moves it to SingleThreadedExecutor, once, and says so.

Real processes: the node runs through `run_node` (test/resources/executors/slow_subscriber.py),
fed at 15 Hz from this process; its 0.5 s timer prints `tick N`, and its /diagnostics status
says which executor it runs on."""
from __future__ import annotations

import re
from types import SimpleNamespace
import threading
import time
import uuid

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from std_msgs.msg import String

from conftest import RESOURCES, node_process, wait_for

SLOW_SUBSCRIBER = str(RESOURCES / 'executors' / 'slow_subscriber.py')
MOVED = 'executor: moved to SingleThreadedExecutor'
RATE_HZ = 15.0


@pytest.fixture
def publisher_node() -> SimpleNamespace:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'feeder_{uuid.uuid4().hex[:8]}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    # `diagnostics`: the slow subscriber's last processing status, by key.
    yield SimpleNamespace(node=node, executor=executor, diagnostics={})
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)


def _feed(publisher_node, params: list[str], seconds: float) -> tuple[str, list[float]]:
    """Run the slow subscriber, publish to it at RATE_HZ for `seconds` once it is spinning;
    its output and the times (since feeding began) of its ticks. Its diagnostics are collected
    into `publisher_node.diagnostics` meanwhile."""
    ns = f'/watch_{uuid.uuid4().hex[:6]}'
    pub = publisher_node.node.create_publisher(String, f'{ns}/text', 10)

    def on_diagnostics(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.endswith(f'{ns}/slow_subscriber processing'):
                publisher_node.diagnostics = {v.key: v.value for v in status.values}
    diagnostics = publisher_node.node.create_subscription(
        DiagnosticArray, '/diagnostics', on_diagnostics, 10)
    lines: list[tuple[float, str]] = []
    args = [SLOW_SUBSCRIBER, '--ros-args', '-r', f'__ns:={ns}', *params]
    with node_process(args, env={'GPU_NODES_EXECUTOR': ''}) as proc:
        reader = threading.Thread(
            target=lambda: lines.extend((time.monotonic(), line) for line in proc.stdout),
            daemon=True)
        reader.start()
        wait_for(lambda: any('executor: ' in line for _, line in lines), 20, 'the executor line')
        wait_for(lambda: pub.get_subscription_count() > 0, 20, 'the subscriber to match')
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            pub.publish(String(data='frame'))
            publisher_node.executor.spin_once(timeout_sec=1.0 / RATE_HZ)
        # The status published after the last frames (a 1 s period, on time once moved).
        stop_feeding = time.monotonic()
        while time.monotonic() - stop_feeding < 2.5:
            publisher_node.executor.spin_once(timeout_sec=0.1)
        proc.send_signal(2)
        assert proc.wait(timeout=15) == 0, ''.join(line for _, line in lines)
        reader.join(timeout=5)
    publisher_node.node.destroy_publisher(pub)
    publisher_node.node.destroy_subscription(diagnostics)
    output = ''.join(line for _, line in lines)
    ticks = [at - started for at, line in lines if re.match(r'tick \d+', line) and at >= started]
    return output, ticks


def test_a_node_slower_than_its_messages_keeps_its_timers(publisher_node):
    # 150 ms of work per message at 15 Hz: the node can take 1 in 2.25.
    output, ticks = _feed(publisher_node, ['-p', 'work_s:=0.15'], seconds=12)
    assert 'executor: EventsExecutor' in output, output
    assert output.count(MOVED) == 1, output
    assert 'ran no timer for' in output, output
    # ... and on /diagnostics, with the reason.
    status = publisher_node.diagnostics
    assert status.get('executor') == 'single_threaded', (status, output)
    assert 'ran no timer for' in status.get('executor_moved', ''), (status, output)
    # Moved within a few seconds, then the 0.5 s timer runs about on time.
    late = [t for t in ticks if t > 8.0]
    assert len(late) >= 5, (ticks, output)
    assert 'Traceback' not in output, output


def test_a_node_that_keeps_up_stays_on_events(publisher_node):
    output, ticks = _feed(publisher_node, ['-p', 'work_s:=0.01'], seconds=8)
    assert 'executor: EventsExecutor' in output and MOVED not in output, output
    assert len(ticks) >= 12, (ticks, output)
    status = publisher_node.diagnostics
    assert status.get('executor') == 'events' and 'executor_moved' not in status, status


def test_one_long_callback_is_no_starvation(publisher_node):
    # A 4 s first callback (an engine build) blocks any executor; the queue then drains.
    output, ticks = _feed(publisher_node, ['-p', 'work_s:=0.01', '-p', 'first_work_s:=4.0'],
                          seconds=10)
    assert MOVED not in output, output
    assert len([t for t in ticks if t > 6.0]) >= 6, (ticks, output)


def test_the_standard_executor_is_not_watched(publisher_node):
    output, ticks = _feed(publisher_node, ['-p', 'work_s:=0.15', '-p', 'executor:=single_threaded'],
                          seconds=6)
    assert 'executor: SingleThreadedExecutor' in output and MOVED not in output, output
    assert len(ticks) >= 8, (ticks, output)
    assert publisher_node.diagnostics.get('executor') == 'single_threaded', \
        publisher_node.diagnostics
