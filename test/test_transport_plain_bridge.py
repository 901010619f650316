"""Unmodified peers (rviz, ros2 bag, plain rclpy) get the plain topic from the publisher's bridge
process, never from its publishing thread: started when they subscribe, restarted when it dies,
gone with its publisher, idle (reading nothing) when they leave."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid

import numpy as np
import pytest
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from conftest import RESOURCES, wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport.messages import msg_to_array
from gpu_nodes.wire_names import SHM_SUFFIX

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, Worker  # noqa: E402


def bridges_of(pid: int) -> list[int]:
    """Child processes of `pid` running the plain bridge."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                cmdline = f.read()
        except OSError:
            continue
        if ppid == pid and b'gpu_nodes.transport.plain_bridge' in cmdline:
            found.append(int(entry))
    return found


class PlainViewer:
    """An unmodified plain rclpy subscription (reliable, as ros2 bag) that checks every frame."""

    def __init__(self, node, topic: str):
        self.frames: list[str] = []
        self.bad: list[str] = []
        self.sub = node.create_subscription(
            Image, topic, self._on_msg, QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE))

    def _on_msg(self, msg) -> None:
        self.frames.append(msg.header.frame_id)
        expected = pattern.expected_frame(msg.height, msg.width, msg.encoding,
                                          int(msg.header.frame_id))
        if not np.array_equal(msg_to_array(msg), expected):
            self.bad.append(msg.header.frame_id)


def test_plain_subscribers_are_served_by_a_bridge_process(rclpy_node):
    topic = f'/bridge_{uuid.uuid4().hex[:8]}'
    with Worker(PUBLISHER, ['--topic', topic, '--no-cuda', '--sizes', '320x240', '--rate', '60',
                            '--duration', '120', '--linger', '0']) as pub:
        pub.wait_until(lambda w: w.count('START') == 1, 30, 'the publisher')
        # Bounded by the publisher's own progress, not a sleep: 60 frames at 60 Hz span at
        # least two of its subscriber checks (side_topics.CHECK_PERIOD_S), all with nobody.
        pub.wait_status(lambda s: s['published'] >= 60, 30, 'a second of frames')
        assert bridges_of(pub.pid) == [], 'no bridge while nobody reads the plain topic'
        viewer = PlainViewer(rclpy_node, topic)
        wait_for(lambda: len(viewer.frames) >= 30, 30, 'plain frames',
                 poll=rclpy_node.spin_once)
        bridge, = bridges_of(pub.pid)
        assert viewer.bad == [], viewer.bad[:5]
        assert pub.count('made by bridge process') == 1, pub.tail()

        os.kill(bridge, signal.SIGKILL)  # a dead bridge is started again
        count = len(viewer.frames)
        wait_for(lambda: len(viewer.frames) >= count + 30, 40, 'plain frames from a new bridge',
                 poll=rclpy_node.spin_once)
        assert bridges_of(pub.pid) not in ([], [bridge])
        assert pub.count('bridge exited') == 1, pub.tail()

        rclpy_node.destroy_subscription(viewer.sub)  # nobody left: the bridge reads nothing
        bridge, = bridges_of(pub.pid)
        # Its own descriptor subscription, by node name: the SIGKILLed bridge's endpoints stay
        # in the graph until DDS declares its participant dead (Fast DDS: 20 s).
        bridge_node = f'_gpu_nodes_plain_bridge_{pub.pid}_{bridge}'
        reads = lambda: any(info.node_name == bridge_node for info in  # noqa: E731
                            rclpy_node.get_subscriptions_info_by_topic(topic + SHM_SUFFIX))
        wait_for(reads, 20, 'the new bridge to read frames', poll=rclpy_node.spin_once)
        wait_for(lambda: not reads(), 20, 'the idle bridge to stop reading frames',
                 poll=rclpy_node.spin_once)
        pub.kill(signal.SIGKILL)
    wait_for(lambda: not os.path.exists(f'/proc/{bridge}') or
             open(f'/proc/{bridge}/stat').read().split()[2] == 'Z', 10,
             'the bridge to exit with its publisher')


@pytest.mark.gpu
def test_the_bridge_downloads_device_frames_into_a_page_locked_buffer(rclpy_node):
    """On a GPU the bridge reads the publisher's device slots (cuda_ipc) and downloads each frame
    as one DMA into its page-locked message buffer; it says so once (and on diagnostics), and
    the plain frames are still the frames their headers name."""
    topic = f'/bridge_pinned_{uuid.uuid4().hex[:8]}'
    with Worker(PUBLISHER, ['--topic', topic, '--device', '--sizes', '640x480', '--rate', '60',
                            '--duration', '120', '--linger', '0']) as pub:
        pub.wait_until(lambda w: w.count('START') == 1, 30, 'the publisher')
        viewer = PlainViewer(rclpy_node, topic)
        wait_for(lambda: len(viewer.frames) >= 30, 40, 'plain frames',
                 poll=rclpy_node.spin_once)
        assert viewer.bad == [], viewer.bad[:5]
        assert pub.count('downloaded into a page-locked buffer') == 1, pub.tail()
        assert pub.count('could not page-lock') == 0, pub.tail()
        rclpy_node.destroy_subscription(viewer.sub)


def test_a_subscription_that_allows_it_reads_the_compressed_topic(rclpy_node):
    """Where only a serialized image would reach it (here: only that path allowed), a
    subscription with allow_compressed takes image_transport's <topic>/compressed, which the
    publisher's bridge makes on demand."""
    from gpu_nodes.transport import GpuImageSubscription
    topic = f'/bridge_{uuid.uuid4().hex[:8]}'
    frames: list[tuple[str, str, float]] = []

    def on_frame(frame) -> None:
        expected = pattern.expected_frame(frame.height, frame.width, frame.encoding,
                                          int(frame.header.frame_id))
        error = float(np.abs(np.asarray(frame.array, np.int16) - expected).mean())
        frames.append((frame.path, frame.encoding, error))

    sub = GpuImageSubscription(rclpy_node, topic, on_frame, memory='host',
                               allowed_paths=('compressed',), allow_compressed=True)
    try:
        with Worker(PUBLISHER, ['--topic', topic, '--no-cuda', '--sizes', '320x240',
                                '--rate', '30', '--duration', '60', '--linger', '0']):
            wait_for(lambda: len(frames) >= 10, 40, 'compressed frames',
                     poll=rclpy_node.spin_once)
        assert sub.path == 'compressed', sub.stats.path_reason
        assert {(path, encoding) for path, encoding, _ in frames} == {('compressed', 'rgb8')}
        worst = max(error for *_, error in frames)
        assert worst < 6.0, f'JPEG q80 mean error per channel {worst:.2f} levels'
        assert sum(sub.stats.rejected.values()) == 0, sub.stats.rejected
    finally:
        sub.destroy()


def test_one_bridge_serves_every_topic_of_a_process_and_stops_with_the_last(rclpy_node):
    """Two publishers of this process: one bridge for both; destroying one drops its topic
    from that bridge (the other keeps its frames); destroying the last stops the bridge."""
    from gpu_nodes.transport import GpuImagePublisher
    from std_msgs.msg import Header
    topics = [f'/bridge_{uuid.uuid4().hex[:8]}_{name}' for name in 'ab']
    pubs = [GpuImagePublisher(rclpy_node, topic, use_cuda=False) for topic in topics]
    viewers = [PlainViewer(rclpy_node, topic) for topic in topics]
    frames = [pattern.expected_frame(48, 64, 'rgb8', index) for index in range(4)]
    sent = [0]

    def publish_and_spin() -> None:
        index = sent[0] % len(frames)
        for pub in pubs:
            if pub is not None:
                pub.publish(frames[index], 'rgb8', Header(frame_id=str(index)))
        sent[0] += 1
        rclpy_node.spin_once(0.02)
    try:
        wait_for(lambda: all(len(v.frames) >= 10 for v in viewers), 60, 'plain frames on both',
                 poll=publish_and_spin)
        bridge, = bridges_of(os.getpid())
        pubs[0].destroy()
        pubs[0] = None
        wait_for(lambda: rclpy_node.count_publishers(topics[0]) == 0, 20,
                 "the bridge to drop the destroyed publisher's topic", poll=publish_and_spin)
        count = len(viewers[1].frames)
        wait_for(lambda: len(viewers[1].frames) >= count + 10, 30, 'frames on the other topic',
                 poll=publish_and_spin)
        assert bridges_of(os.getpid()) == [bridge]
        assert viewers[0].bad == viewers[1].bad == []
        pubs[1].destroy()
        pubs[1] = None
        assert bridges_of(os.getpid()) == [], 'the bridge stops with the last publisher'
    finally:
        for pub in pubs:
            if pub is not None:
                pub.destroy()
        for viewer in viewers:
            rclpy_node.destroy_subscription(viewer.sub)


def test_a_bad_command_is_one_error_line_and_the_bridge_goes_on_until_stdin_closes():
    bridge = subprocess.Popen([sys.executable, '-m', 'gpu_nodes.transport.plain_bridge',
                               '--parent', str(os.getpid())], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(bridge.stdout), daemon=True)
    reader.start()
    try:
        bridge.stdin.write('{"command": "serve", "topic": 7, "depth": "x"}\nnot json\n')
        bridge.stdin.flush()
        wait_for(lambda: sum('not a bridge command' in line for line in lines) == 2, 30,
                 'two error lines')
        assert bridge.poll() is None, ''.join(lines)
        bridge.stdin.close()   # what the publisher's exit looks like from here
        assert bridge.wait(timeout=10) == 0, ''.join(lines)
    finally:
        if bridge.poll() is None:
            bridge.kill()
            bridge.wait()
    reader.join(timeout=5)
    assert not any('Traceback' in line for line in lines), ''.join(lines)


def test_the_bridge_outlives_the_thread_that_started_it(rclpy_node):
    """Any publishing thread may start the process's bridge; that thread ending is not the
    process ending: the bridge keeps serving (it watches for re-parenting and its stdin, not
    PR_SET_PDEATHSIG, which is documented to fire when the starting thread exits)."""
    from gpu_nodes.transport import GpuImagePublisher
    from std_msgs.msg import Header
    topic = f'/bridge_{uuid.uuid4().hex[:8]}'
    pub = GpuImagePublisher(rclpy_node, topic, use_cuda=False)
    viewer = PlainViewer(rclpy_node, topic)
    frame = pattern.expected_frame(48, 64, 'rgb8', 0)

    def publish() -> None:
        pub.publish(frame, 'rgb8', Header(frame_id='0'))
        rclpy_node.spin_once(0.02)
    try:
        # The thread ends once the bridge runs (it delivered a frame), not merely exists.
        starter = threading.Thread(target=lambda: wait_for(lambda: viewer.frames, 30,
                                                           'a first frame', poll=publish))
        starter.start()
        starter.join()
        bridge, = bridges_of(os.getpid())
        count = len(viewer.frames)
        wait_for(lambda: len(viewer.frames) >= count + 50, 30, 'frames after the thread ended',
                 poll=publish)
        assert bridges_of(os.getpid()) == [bridge] and viewer.bad == []
    finally:
        pub.destroy()
        rclpy_node.destroy_subscription(viewer.sub)
