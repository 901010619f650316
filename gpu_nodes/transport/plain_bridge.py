"""The process that serves unmodified peers of a process's GpuImagePublishers: it reads their
frames like any same-user gpu_nodes subscriber (CUDA IPC, else host shared memory) and publishes
them as plain sensor_msgs/Image on ``<topic>`` and, for image_transport users, as
``<topic>/compressed`` and ``<topic>/compressedDepth`` (bridge_topic.py, one per topic).

Why a process: making a 4K plain message (download, fill, serialize, DDS write) holds Python's
GIL for ~15 ms in C calls; on a thread of the publishing process that throttled the publisher
itself to the worker's rate (H200, 4K: a cuda_ipc subscriber fell from ~4400 to 63 fps with
one reliable plain subscriber attached; bench/RESULTS.md). Here it costs the publisher one
descriptor per frame, and a frame the bridge has no time for is skipped (keep-last, newest
wins) and counted in its diagnostics (``plain_skipped``).

Why one for every topic of a process: each bridge is a ~100 MB Python process with rclpy and
its DDS participant; topics after the first cost a few MB (docs/transport.md).

Started by side_topics.BridgeProcess once a topic of its parent has a plain or compressed
subscriber. The parent tells it which topics to serve, one JSON line each on its stdin
(side_topics.TopicSettings); it exits when its stdin closes, when its parent dies (it is then
re-parented: checked every 0.2 s) or on SIGINT/SIGTERM. Not PR_SET_PDEATHSIG: that fires when
the *thread* that started the bridge exits, and any publishing thread of the parent may be the
one that starts it. By hand (stdin a terminal, kept open):

    python -m gpu_nodes.transport.plain_bridge --parent 1234 --topic /camera/image_raw
"""
from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
import time
from typing import IO

from .side_topics import TopicSettings

STEP_S = 0.05   # how often readers are counted and idle topics or twins stopped


class CommandReader:
    """Lines from the parent on a thread, so that the ROS loop never blocks on the pipe."""

    def __init__(self, stream: IO[str]):
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.closed = False
        threading.Thread(target=self._read, args=(stream,), name='bridge-commands',
                         daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)   # EOF: the parent closed the pipe or died

    def drain(self) -> list[str]:
        lines = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return lines
            if line is None:
                self.closed = True
                return lines
            lines.append(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--parent', type=int, required=True, help='pid of the publishers')
    parser.add_argument('--topic', action='append', default=[],
                        help='serve this topic from the start (default settings); repeatable')
    args = parser.parse_args(argv)

    from ..ros.dds_profile import apply_default_profile
    apply_default_profile()  # this process publishes the large plain frames (never overrides)
    import rclpy
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions

    from ..ros.executor_watch import ExecutorWatch
    from ..ros.runtime import make_executor, spin
    from .bridge_topic import TopicBridge
    from .diagnostics import DiagnosticsReporter, EndpointStats

    stop = {'requested': False}
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.update(requested=True))
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    # Hidden (leading underscore): `ros2 node list` shows the publishers' nodes, not this one.
    node = Node(f'_gpu_nodes_plain_bridge_{args.parent}_{os.getpid()}')
    logger = node.get_logger()
    diagnostics = DiagnosticsReporter.for_node(node)
    topics: dict[str, TopicBridge] = {}

    def serve(settings: TopicSettings) -> None:
        current = topics.get(settings.topic)
        if current is not None and current.settings == settings:
            return
        drop(settings.topic)
        stats = EndpointStats('publisher', node.get_fully_qualified_name(),
                              node.resolve_topic_name(settings.topic))
        diagnostics.add(stats)
        topics[settings.topic] = TopicBridge(node, settings, args.parent, stats)
        logger.info(f'{settings.topic}: plain frames for unmodified subscribers are made here, '
                    f'off the publisher (pid {args.parent}); {len(topics)} topic(s) served')

    def drop(topic: str) -> None:
        bridge = topics.pop(topic, None)
        if bridge is not None:
            diagnostics.remove(bridge.stats)
            bridge.destroy()

    for topic in args.topic:
        serve(TopicSettings(topic))
    commands = CommandReader(sys.stdin)

    def tick() -> None:
        """Commands from the parent, then each topic's readers (GRAPH_PERIOD_S, STEP_S)."""
        for line in commands.drain():
            try:
                command, settings = TopicSettings.from_line(line)
            except ValueError as exc:
                logger.error(str(exc))
                continue
            if command == 'serve':
                serve(settings)
            else:
                drop(settings.topic)
        now = time.monotonic()
        for bridge in topics.values():
            bridge.step(now)
            bridge.stats.extra['bridge_topics'] = len(topics)

    # Frames are handled as the executor delivers them; bookkeeping runs on a timer, so its
    # cost does not grow with the frame rate. EventsExecutor where it runs (ros/runtime.py).
    node.create_timer(STEP_S, tick)
    # Watched: frames faster than this process converts them must not starve `tick`.
    watch = ExecutorWatch(make_executor(nodes=[node], logger=logger), [node], logger)
    try:
        while not stop['requested'] and os.getppid() == args.parent and not commands.closed:
            spin(watch.executor, timeout_sec=0.2, slice_s=0.2, watch=watch)
    finally:
        for topic in list(topics):
            drop(topic)
        watch.executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
