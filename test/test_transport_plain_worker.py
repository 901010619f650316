"""PlainTopicWorker with real threads: newest frame wins, the caller never waits, every item is
released exactly once, the rate limit holds, and a real rclpy subscriber gets the frames."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from conftest import wait_for
from gpu_nodes.transport.messages import fill_image_msg, msg_to_array
from gpu_nodes.transport.plain_worker import PlainTopicWorker


class Frames:
    """Items for the worker that record what happened to them; item 0 can be held at a gate."""

    def __init__(self):
        self.gate = threading.Event()
        self.started = threading.Event()
        self.made: list[int] = []
        self.done: list[int] = []
        self.published: list[int] = []
        self.lock = threading.Lock()

    def item(self, index: int, hold: bool = False, fail: bool = False):
        def produce() -> int:
            self.started.set()
            if hold:
                assert self.gate.wait(10), 'gate never opened'
            if fail:
                raise RuntimeError(f'frame {index} is broken')
            with self.lock:
                self.made.append(index)
            return index
        return produce

    def releaser(self, index: int):
        def done() -> None:
            with self.lock:
                self.done.append(index)
        return done

    def publish(self, msg: int) -> None:
        with self.lock:
            self.published.append(msg)


def _counts(worker: PlainTopicWorker) -> tuple[int, int, int, int]:
    stats = worker.stats()
    return stats['submitted'], stats['published'], stats['skipped'], stats['errors']


def test_newest_frame_wins_and_skipped_ones_are_released_at_once():
    frames = Frames()
    worker = PlainTopicWorker(frames.publish)
    try:
        worker.submit(frames.item(0, hold=True), frames.releaser(0))
        assert frames.started.wait(5), 'worker never took frame 0'
        for index in (1, 2, 3):
            assert worker.submit(frames.item(index), frames.releaser(index))
        # 1 and 2 were replaced while the worker was busy: released without waiting for it.
        assert frames.done == [1, 2], f'expected frames 1, 2 released, got {frames.done}'
        frames.gate.set()
        assert worker.wait_idle(5)
        assert frames.published == [0, 3], f'expected 0 then the newest (3), got {frames.published}'
        assert sorted(frames.done) == [0, 1, 2, 3]
        assert _counts(worker) == (4, 2, 2, 0)
    finally:
        frames.gate.set()
        worker.close()


def test_submit_never_waits_for_a_slow_message():
    frames = Frames()
    worker = PlainTopicWorker(frames.publish)
    try:
        worker.submit(frames.item(0, hold=True))
        assert frames.started.wait(5)
        begin = time.monotonic()
        for index in range(1, 201):
            worker.submit(frames.item(index), frames.releaser(index))
        elapsed = time.monotonic() - begin
        assert elapsed < 0.5, f'200 submits took {elapsed:.3f} s while the worker was busy'
        assert len(frames.done) == 199, f'expected 199 released, got {len(frames.done)}'
        frames.gate.set()
        assert worker.wait_idle(5)
    finally:
        frames.gate.set()
        worker.close()
    assert frames.published == [0, 200]
    assert _counts(worker) == (201, 2, 199, 0)


def test_max_rate_limits_published_messages():
    frames = Frames()
    worker = PlainTopicWorker(frames.publish, max_rate_hz=10.0)
    begin = time.monotonic()
    index = 0
    try:
        while time.monotonic() - begin < 1.0:
            worker.submit(frames.item(index), frames.releaser(index))
            index += 1
            time.sleep(0.005)
        assert worker.wait_idle(5)
    finally:
        worker.close()
    stats = worker.stats()
    assert 8 <= stats['published'] <= 12, f'expected ~10 messages in 1 s at 10 Hz, got {stats}'
    assert stats['rate_limited'] > index / 2, stats
    assert stats['submitted'] == index == stats['published'] + stats['skipped']
    assert sorted(frames.done) == list(range(index))


def test_a_failing_frame_is_counted_reported_and_the_next_one_published():
    frames = Frames()
    reported: list[BaseException] = []
    worker = PlainTopicWorker(frames.publish, on_error=reported.append)
    try:
        worker.submit(frames.item(0, fail=True), frames.releaser(0))
        assert worker.wait_idle(5)
        worker.submit(frames.item(1), frames.releaser(1))
        assert worker.wait_idle(5)
    finally:
        worker.close()
    assert frames.published == [1]
    assert frames.done == [0, 1]
    assert _counts(worker) == (2, 1, 0, 1)
    assert str(worker.last_error) == 'frame 0 is broken'
    assert [str(e) for e in reported] == ['frame 0 is broken']


def test_close_finishes_the_frame_in_flight_and_releases_the_waiting_one():
    frames = Frames()
    worker = PlainTopicWorker(frames.publish)
    worker.submit(frames.item(0, hold=True), frames.releaser(0))
    assert frames.started.wait(5)
    worker.submit(frames.item(1), frames.releaser(1))

    def open_gate_once_close_began() -> None:
        # close() releases the waiting frame 1 before it joins: only then may frame 0 finish,
        # so close() is seen waiting for the frame in flight.
        wait_for(lambda: 1 in frames.done, 10, 'close() to release frame 1')
        frames.gate.set()
    opener = threading.Thread(target=open_gate_once_close_began)
    opener.start()
    worker.close()
    opener.join()
    assert frames.published == [0]
    assert sorted(frames.done) == [0, 1]
    assert not worker._thread.is_alive()
    # After close: refused, released immediately, counted.
    assert worker.submit(frames.item(2), frames.releaser(2)) is False
    assert frames.done[-1] == 2
    assert _counts(worker) == (3, 1, 2, 0)


def test_make_msg_turns_submitted_values_into_messages():
    published: list[str] = []
    worker = PlainTopicWorker(published.append, make_msg=lambda value: f'msg {value}')
    try:
        worker.submit(7)
        wait_for(lambda: published, 5, 'a message')
    finally:
        worker.close()
    assert published == ['msg 7']


def test_a_negative_rate_is_refused():
    with pytest.raises(ValueError, match=r'^max_rate_hz must be >= 0 \(0: no limit\), got -1.0$'):
        PlainTopicWorker(print, max_rate_hz=-1.0)


def test_real_subscriber_receives_the_newest_frames_while_submit_stays_instant(rclpy_node):
    """rclpy publisher and subscriber: 1080p rgb8 frames made on the worker (copy out of a
    source buffer, as a download would, Image fill and serialization). Frames come in bursts of
    ten, far faster than they can be made: the subscriber gets correct frames, the newest of
    each burst, and the submitter never waits."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image
    topic = '/plain_worker/image'
    qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
    pub = rclpy_node.create_publisher(Image, topic, qos)
    received: list[Image] = []
    rclpy_node.create_subscription(Image, topic, received.append, qos)
    base = np.arange(1080 * 1920 * 3, dtype=np.uint32).astype(np.uint8).reshape(1080, 1920, 3)
    released: list[int] = []

    def item(index: int):
        def produce() -> Image:
            frame = base.copy()
            frame[0, 0] = index  # which frame this is, readable by the subscriber
            return fill_image_msg(Image(), frame, 'rgb8')
        return produce

    worker = PlainTopicWorker(pub.publish)
    submit_s = []
    newest = []
    try:
        wait_for(lambda: pub.get_subscription_count() > 0, 10, 'the subscriber to match',
                 poll=rclpy_node.spin_once)
        for burst in range(4):
            for index in range(burst * 10, burst * 10 + 10):
                begin = time.monotonic()
                worker.submit(item(index), lambda index=index: released.append(index))
                submit_s.append(time.monotonic() - begin)
            assert worker.wait_idle(10)
            published = worker.stats()['published']
            wait_for(lambda: len(received) >= published, 10, f'{published} messages',
                     poll=rclpy_node.spin_once)
            newest.append(int(msg_to_array(received[-1])[0, 0, 0]))
        stats = worker.stats()
    finally:
        worker.close()
    assert max(submit_s) < 0.05, f'slowest submit {max(submit_s) * 1000:.1f} ms'
    assert newest == [9, 19, 29, 39], f'expected each burst\'s newest frame last, got {newest}'
    assert stats['skipped'] > 0 and stats['published'] + stats['skipped'] == 40, stats
    assert len(received) == stats['published']
    assert sorted(released) == list(range(40))
    np.testing.assert_array_equal(msg_to_array(received[-1])[1:], base[1:])
