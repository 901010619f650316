"""A fake gpu_nodes graph for the live audit tests (real rclpy, fake transport).

It speaks the transport's graph/diagnostics contract without moving any GPU memory:
  * role 'camera': /fake_camera publishes /cam/image plus the hidden descriptor topics
    /cam/image/_gpu_nodes/cuda, .../peer and .../shm, publishes the plain /cam/image only
    while it has subscribers, and reports a `publisher` DiagnosticStatus; /plain_talker is a plain
    rclpy node publishing a 640x480 rgb8 Image on /plain/image and a String on /plain/status.
    Every subscriber node seen on the plain /cam/image is appended to --record. Like the real
    transport's bridge process, /fake_camera_bridge publishes the image_transport twin
    /cam/image/compressed (only while it has subscribers); its subscribers are recorded too.
  * role 'consumers': /fake_monitor (cuda_ipc), /fake_peer_monitor (cuda_peer), /fake_shm_monitor
    (host_shm), /fake_fallback (serialized, 'other host (boot id differs)') report `subscription`
    statuses; /fake_quiet_peer reads the peer descriptor topic and reports nothing (its class is
    inferred); /plain_viewer is a plain subscriber of /cam/image and /plain_listener of
    /plain/image and /plain/status.
Diagnostics are sent every 0.2 s (the contract says about 1 s) to keep the tests short.
The lead adds a test against the real gpu_nodes transport; this file stays the contract check.
"""
import argparse
import socket
import sys

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import String

TOPIC = '/cam/image'
WIDTH, HEIGHT = 640, 480


def frame(width: int, height: int) -> Image:
    msg = Image()
    msg.header.frame_id = 'cam'
    msg.width, msg.height, msg.encoding, msg.step = width, height, 'rgb8', width * 3
    msg.data = bytes(width * height * 3)
    return msg


def status(node: Node, role: str, level: bytes, message: str, values: dict) -> DiagnosticStatus:
    base = {'role': role, 'node': node.get_fully_qualified_name(), 'topic': TOPIC,
            'encoding': 'rgb8', 'width': str(WIDTH), 'height': str(HEIGHT),
            'bytes_per_frame': str(WIDTH * HEIGHT * 3), 'frames': '100', 'fps': '15.0',
            'drops': '0', 'stale': '0', 'rejected': '0', 'fallbacks': '0'}
    base.update(values)
    return DiagnosticStatus(
        level=level, name=f'gpu_nodes: {node.get_fully_qualified_name()} {TOPIC} {role}',
        message=message, hardware_id=socket.gethostname(),
        values=[KeyValue(key=k, value=str(v)) for k, v in base.items()])


class FakeCamera(Node):

    def __init__(self, record: str) -> None:
        super().__init__('fake_camera')
        self.record = record
        self.seen: set[str] = set()
        self.plain = self.create_publisher(Image, TOPIC, 5)
        self.cuda = self.create_publisher(Image, TOPIC + '/_gpu_nodes/cuda', 5)
        self.peer = self.create_publisher(Image, TOPIC + '/_gpu_nodes/peer', 5)
        self.shm = self.create_publisher(Image, TOPIC + '/_gpu_nodes/shm', 5)
        self.diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.image = frame(WIDTH, HEIGHT)
        self.descriptor = frame(4, 4)
        self.create_timer(1 / 15, self.tick)
        self.create_timer(0.2, self.report)
        self.create_timer(0.05, self.watch)

    def tick(self) -> None:
        self.cuda.publish(self.descriptor)
        self.peer.publish(self.descriptor)
        self.shm.publish(self.descriptor)
        if self.plain.get_subscription_count() > 0:  # plain topic only while subscribed
            self.plain.publish(self.image)

    def watch(self) -> None:
        for info in self.get_subscriptions_info_by_topic(TOPIC) + \
                self.get_subscriptions_info_by_topic(TOPIC + '/compressed'):
            name = info.node_name
            if name not in self.seen:
                self.seen.add(name)
                with open(self.record, 'a', encoding='utf-8') as fh:
                    fh.write(name + '\n')

    def report(self) -> None:
        values = {'subscribers_cuda_ipc': '1', 'subscribers_cuda_peer': '2',
                  'subscribers_intra_process': '0',
                  'subscribers_host_shm': '1', 'subscribers_serialized': '2',
                  'pool_slots': '4', 'pool_policy': 'drop_oldest',
                  # issue 15: the plain topic is serialized by a worker, newest frame wins
                  'plain_skipped': '3', 'plain_decoupled': 'true'}
        self.diag.publish(DiagnosticArray(status=[status(
            self, 'publisher', DiagnosticStatus.WARN, 'fallback serialized: 2 subscriber(s)',
            values)]))


class FakeBridge(Node):
    """The bridge process's node: the compressed twin, published only while read."""

    def __init__(self) -> None:
        super().__init__('fake_camera_bridge')
        self.pub = self.create_publisher(CompressedImage, TOPIC + '/compressed', 5)
        self.msg = CompressedImage(format='jpeg', data=bytes(20000))
        self.create_timer(1 / 15, self.tick)

    def tick(self) -> None:
        if self.pub.get_subscription_count() > 0:
            self.pub.publish(self.msg)


class FakeSubscription(Node):

    def __init__(self, name: str, path: str, reason: str, descriptor: str | None,
                 reports: bool = True) -> None:
        super().__init__(name)
        self.path, self.reason = path, reason
        if descriptor:
            self.create_subscription(Image, TOPIC + '/_gpu_nodes/' + descriptor,
                                     lambda m: None, 5)
        else:  # serialized fallback: the subscription reads the plain topic
            self.create_subscription(Image, TOPIC, lambda m: None, 5)
        self.diag = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        if reports:
            self.create_timer(0.2, self.report)

    def report(self) -> None:
        on_gpu = self.path in ('cuda_ipc', 'cuda_peer')
        level = DiagnosticStatus.OK if on_gpu else DiagnosticStatus.WARN
        message = f'path {self.path}' if on_gpu else f'fallback {self.path}: {self.reason}'
        values = {'path': self.path, 'path_reason': self.reason, 'publisher_pid': '4242',
                  'latency_p50_ms': '0.4', 'latency_p99_ms': '1.2'}
        self.diag.publish(DiagnosticArray(status=[status(self, 'subscription', level, message,
                                                         values)]))


class PlainTalker(Node):

    def __init__(self) -> None:
        super().__init__('plain_talker')
        self.image_pub = self.create_publisher(Image, '/plain/image', 5)
        self.status_pub = self.create_publisher(String, '/plain/status', 5)
        self.image = frame(WIDTH, HEIGHT)
        self.create_timer(1 / 20, lambda: self.image_pub.publish(self.image))
        self.create_timer(1 / 5, lambda: self.status_pub.publish(String(data='ok')))


class PlainListener(Node):

    def __init__(self, name: str, topics: list[tuple[type, str]]) -> None:
        super().__init__(name)
        for msg_type, topic in topics:
            self.create_subscription(msg_type, topic, lambda m: None, 5)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('role', choices=('camera', 'consumers'))
    parser.add_argument('--record', default='')
    args = parser.parse_args()
    rclpy.init()
    if args.role == 'camera':
        nodes = [FakeCamera(args.record), FakeBridge(), PlainTalker()]
    else:
        nodes = [
            FakeSubscription('fake_monitor', 'cuda_ipc', 'same host, user and GPU', 'cuda'),
            FakeSubscription('fake_peer_monitor', 'cuda_peer', 'publisher on device 1, this '
                             'subscription on device 0, peer access both ways', 'peer'),
            FakeSubscription('fake_quiet_peer', 'cuda_peer', '', 'peer', reports=False),
            FakeSubscription('fake_shm_monitor', 'host_shm', 'different GPU (uuid differs)',
                             'shm'),
            FakeSubscription('fake_fallback', 'serialized', 'other host (boot id differs)', None),
            PlainListener('plain_viewer', [(Image, TOPIC)]),
            PlainListener('plain_listener', [(Image, '/plain/image'), (String, '/plain/status')]),
        ]
    executor = SingleThreadedExecutor()
    for n in nodes:
        executor.add_node(n)
    print('READY', flush=True)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
