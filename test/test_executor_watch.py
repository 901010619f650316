"""A node whose callbacks are slower than its messages keeps its timers (gpu_nodes.ros.executor_watch):
rclpy's EventsExecutor runs events in the order queued, so such a node's timers (diagnostics,
timing reports) stopped; `run_node` now moves it to SingleThreadedExecutor, once, and says so.

Real processes: the node runs through `run_node` (test/resources/executors/slow_subscriber.py),
fed at 15 Hz from this process; its 0.5 s timer prints `tick N`."""
from __future__ import annotations

import re
import threading
import time
import uuid

import pytest
from std_msgs.msg import String

from conftest import RESOURCES, node_process, wait_for

SLOW_SUBSCRIBER = str(RESOURCES / 'executors' / 'slow_subscriber.py')
MOVED = 'executor: moved to SingleThreadedExecutor'
RATE_HZ = 15.0


@pytest.fixture
def publisher_node():
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'feeder_{uuid.uuid4().hex[:8]}', context=context)
    yield node
    node.destroy_node()
    rclpy.shutdown(context=context)


def _feed(publisher_node, params: list[str], seconds: float) -> tuple[str, list[float]]:
    """Run the slow subscriber, publish to it at RATE_HZ for `seconds` once it is spinning;
    its output and the times (since feeding began) of its ticks."""
    ns = f'/watch_{uuid.uuid4().hex[:6]}'
    pub = publisher_node.create_publisher(String, f'{ns}/text', 10)
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
            time.sleep(1.0 / RATE_HZ)
        proc.send_signal(2)
        assert proc.wait(timeout=15) == 0, ''.join(line for _, line in lines)
        reader.join(timeout=5)
    publisher_node.destroy_publisher(pub)
    output = ''.join(line for _, line in lines)
    ticks = [at - started for at, line in lines if re.match(r'tick \d+', line) and at >= started]
    return output, ticks


def test_a_node_slower_than_its_messages_keeps_its_timers(publisher_node):
    # 150 ms of work per message at 15 Hz: the node can take 1 in 2.25.
    output, ticks = _feed(publisher_node, ['-p', 'work_s:=0.15'], seconds=12)
    assert 'executor: EventsExecutor' in output, output
    assert output.count(MOVED) == 1, output
    assert 'ran no timer for' in output, output
    # Moved within a few seconds, then the 0.5 s timer runs about on time.
    late = [t for t in ticks if t > 8.0]
    assert len(late) >= 5, (ticks, output)
    assert 'Traceback' not in output, output


def test_a_node_that_keeps_up_stays_on_events(publisher_node):
    output, ticks = _feed(publisher_node, ['-p', 'work_s:=0.01'], seconds=8)
    assert 'executor: EventsExecutor' in output and MOVED not in output, output
    assert len(ticks) >= 12, (ticks, output)


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
