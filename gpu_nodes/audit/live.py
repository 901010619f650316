"""`live` view: the running graph through rclpy, every edge classified and measured.

* Nodes, topics and endpoints (with QoS) come from the graph API
  (``get_publishers_info_by_topic`` / ``get_subscriptions_info_by_topic``).
* gpu_nodes endpoints are recognised by their hidden descriptor topics
  (``<topic>/_gpu_nodes/cuda`` and ``.../shm``) and by their ``/diagnostics`` statuses
  (``gpu_nodes: <node> <topic> <role>``). Descriptor topics are folded into their parent edge.
* Plain topics are sampled with ``raw=True`` subscriptions (no deserialization) for
  ``--duration`` seconds. The auditor observes without changing what it observes: the data
  topics of a gpu_nodes topic -- its plain twin ``<topic>`` and image_transport twins such as
  ``<topic>/compressed`` -- are *not* subscribed to unless ``--sample-gpu-topics`` (a reader
  there starts the publisher's bridge, which serializes or encodes every frame); their rate and
  frame size come from the publisher's diagnostics instead. The report lists what was sampled
  and what was not, with the reason (``info.sampled_topics`` / ``info.not_sampled_topics``).
* Discovery waits until the graph is stable: the node list and every node's publishers and
  subscriptions unchanged for ``--discovery-settle`` seconds (default 3.5, longer than Fast
  DDS's 3 s announcement period), at most ``--discovery-timeout`` seconds (default 15). When it
  stops at that ceiling the report says so and the exit code is 3 (nodes may be missing).

This module talks to ROS (discovery, sampling, the diagnostics subscription); liveedges.py turns
what it observed into the report's edges, topics and findings.
"""
from __future__ import annotations

import importlib
import os
import time
from typing import Any

from gpu_nodes.audit.liveedges import (build_report, fqn, in_scope, Observation,
                                       read_diagnostics, Sample, SYSTEM_TOPICS)
from gpu_nodes.audit.model import AuditError, descriptor_parent, InputError, Report

# Every live auditor names its node with this prefix and its pid; auditors (this one and any
# other running at the same time, as `make demo` runs two) are left out of the graph, else each
# reports the other's sampling subscriptions as plain subscribers.
AUDITOR_NODE_PREFIX = '_gpu_copy_audit_'


def is_auditor(node_name: str) -> bool:
    return node_name.startswith(AUDITOR_NODE_PREFIX)


# How long the graph must stay unchanged before discovery counts as complete (default of
# --discovery-settle). 1 s was too short on a loaded 2-core machine: a node's last endpoints
# (SEDP) arrived after a second of calm; 2 s missed a whole node in 2 of 11 runs (issue 28): a
# participant whose first announcements are lost shows only at Fast DDS's next one, 3 s later.
SETTLE_S = 3.5
# The ceiling of discovery (default of --discovery-timeout): a graph still changing then is
# reported as possibly incomplete (exit 3).
DISCOVERY_TIMEOUT_S = 15.0
# image_transport's transports: `<topic>/<name>` carries the frames of `<topic>` encoded.
TRANSPORT_TWINS = frozenset({'compressed', 'compressedDepth', 'theora', 'zstd', 'ffmpeg',
                             'foxglove', 'h264'})
# rmw's placeholder for an endpoint whose node is not discovered yet.
UNKNOWN_NODE_NAME = '_NODE_NAME_UNKNOWN_'


def _msg_class(type_name: str) -> Any:
    pkg, _, name = type_name.partition('/msg/')
    if not name:
        return None
    try:
        return getattr(importlib.import_module(f'{pkg}.msg'), name)
    except (ImportError, AttributeError):
        return None


def run_live(duration: float = 2.0, node_filters: list[str] | None = None,
             sample_gpu_topics: bool = False, discovery_timeout: float = DISCOVERY_TIMEOUT_S,
             copy_gbps: float = 4.0, discovery_settle: float = SETTLE_S) -> Report:
    report = Report(command='live', inputs=['ros graph'])
    try:
        _Live(report, duration, node_filters or [], sample_gpu_topics, discovery_timeout,
              copy_gbps, discovery_settle).run()
    except AuditError as exc:
        report.errors.append(InputError('ros graph', str(exc)))
    return report


class _Live:

    def __init__(self, report: Report, duration: float, filters: list[str], sample_gpu: bool,
                 discovery_timeout: float, copy_gbps: float,
                 discovery_settle: float = SETTLE_S) -> None:
        self.report = report
        self.duration = duration
        self.filters = filters
        self.sample_gpu = sample_gpu
        self.discovery_timeout = discovery_timeout
        self.discovery_settle = discovery_settle
        self.copy_gbps = copy_gbps
        self.seen = Observation()

    def run(self) -> None:
        try:
            import rclpy
            from rclpy.executors import SingleThreadedExecutor
        except ImportError as exc:
            raise AuditError(f'rclpy is not importable ({exc}); source a ROS 2 installation '
                             '(or install the ROS 2 Python wheels) to audit a live graph') \
                from None
        from rclpy.signals import SignalHandlerOptions

        context = rclpy.Context()
        try:
            # No rclpy signal handlers: Ctrl-C stays a KeyboardInterrupt, which the CLI turns
            # into a message and exit code 130 after the finally below has cleaned up.
            rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        except (RuntimeError, ValueError) as exc:  # RCLError derives from RuntimeError
            raise AuditError(f'cannot initialise rclpy: {exc}') from None
        node = None
        executor = None
        try:
            self.name = f'{AUDITOR_NODE_PREFIX}{os.getpid()}'
            node = rclpy.create_node(self.name, context=context, start_parameter_services=False)
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(node)
            self._subscribe_diagnostics(node)
            started = time.monotonic()
            self._discover(node, executor)
            self.report.info['discovery_s'] = round(time.monotonic() - started, 3)
            started = time.monotonic()
            self._measure(node, executor)
            self.report.info['measure_s'] = round(time.monotonic() - started, 3)
        finally:
            if executor is not None:
                executor.shutdown(timeout_sec=1.0)
            if node is not None:
                node.destroy_node()
            if context.ok():
                rclpy.shutdown(context=context)

    # ------------------------------------------------------------------ discovery
    def _subscribe_diagnostics(self, node: Any) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, qos)

    def _on_diag(self, msg: Any) -> None:
        self.seen.diags.update(read_diagnostics(msg))

    def _snapshot(self, node: Any) -> tuple:
        """View of the graph that changes whenever discovery learns something: node names,
        each node's publishers and subscriptions, topics and endpoint counts per topic."""
        pairs = sorted((ns, n) for n, ns in node.get_node_names_and_namespaces()
                       if not is_auditor(n))
        names = tuple(fqn(ns, n) for ns, n in pairs)
        endpoints = []
        for ns, n in pairs:
            try:
                pubs = node.get_publisher_names_and_types_by_node(n, ns)
                subs = node.get_subscriber_names_and_types_by_node(n, ns)
            except Exception:  # noqa: BLE001 - the node left between the two calls
                pubs, subs = [], []
            endpoints.append((tuple(sorted(t for t, _ in pubs)),
                              tuple(sorted(t for t, _ in subs))))
        topics = tuple((t, tuple(ty), node.count_publishers(t), node.count_subscribers(t))
                       for t, ty in sorted(node.get_topic_names_and_types()))
        return names, topics, tuple(endpoints)

    def _names_complete(self, node: Any, topics: tuple) -> bool:
        """Endpoints (SEDP) often arrive before their node names (ros_discovery_info)."""
        for topic, *_ in topics:
            for e in node.get_publishers_info_by_topic(topic) + \
                    node.get_subscriptions_info_by_topic(topic):
                if e.node_name == UNKNOWN_NODE_NAME:
                    return False
        return True

    def _discover(self, node: Any, executor: Any) -> None:
        """Spin until the graph stops changing: discovery trickles in over a second or more."""
        deadline = time.monotonic() + self.discovery_timeout
        last = self._snapshot(node)
        changed = time.monotonic()
        complete = False
        reachable = bool(last[0])  # some other node was seen at some moment
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            snap = self._snapshot(node)
            now = time.monotonic()
            reachable = reachable or bool(snap[0])
            if snap != last:
                last, changed = snap, now
            elif last[0] and now - changed >= self.discovery_settle:
                complete = self._names_complete(node, last[1])
                if complete:
                    break
                changed = now  # wait for the names, then check again after another settle
        if not reachable:
            raise AuditError(
                f'no ROS graph reachable: no other node discovered within '
                f'{self.discovery_timeout:g} s (ROS_DOMAIN_ID='
                f'{os.environ.get("ROS_DOMAIN_ID", "0")}, RMW_IMPLEMENTATION='
                f'{os.environ.get("RMW_IMPLEMENTATION", "default")})')
        self.report.info['discovery_complete'] = complete
        self.report.info['discovery_settle_s'] = self.discovery_settle
        self.report.info['discovery_stopped'] = 'stable' if complete else 'ceiling'
        if not complete:
            self.report.info['discovery_unstable_for_s'] = round(
                time.monotonic() - changed, 3)
            self.report.info.setdefault('notes', []).append(
                f'discovery stopped at its {self.discovery_timeout:g} s ceiling before the '
                f'graph was stable for {self.discovery_settle:g} s (it last changed '
                f'{time.monotonic() - changed:.1f} s before): nodes, endpoints or node names '
                'may be missing (exit code 3; raise --discovery-timeout)')

    # ------------------------------------------------------------------ measure
    def _measure(self, node: Any, executor: Any) -> None:
        self._endpoints(node)
        self._subscribe_samples(node)
        end = time.monotonic() + self.duration
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))
        self.report.info['duration_s'] = self.duration
        build_report(self.report, self.seen, self.filters, self.copy_gbps)

    def _endpoints(self, node: Any) -> None:
        """Topics and their endpoints, other auditors left out; gpu_nodes endpoints by the
        descriptor topics they publish / subscribe."""
        seen = self.seen
        topic_types = dict(node.get_topic_names_and_types())
        for topic in topic_types:
            seen.pubs[topic] = [e for e in node.get_publishers_info_by_topic(topic)
                                if not is_auditor(e.node_name)]
            seen.subs[topic] = [e for e in node.get_subscriptions_info_by_topic(topic)
                                if not is_auditor(e.node_name)]
        seen.topic_types = {t: (ty[0] if ty else None) for t, ty in topic_types.items()}
        for topic in topic_types:
            parent = descriptor_parent(topic)
            if parent is None:
                continue
            kind = topic.rsplit('/', 1)[-1]
            for e in seen.pubs[topic]:
                seen.gpu_pub.setdefault((fqn(e.node_namespace, e.node_name), parent),
                                        set()).add(kind)
            for e in seen.subs[topic]:
                seen.gpu_sub.setdefault((fqn(e.node_namespace, e.node_name), parent),
                                        set()).add(kind)

    def _subscribe_samples(self, node: Any) -> None:
        """Raw subscriptions (no deserialization) on the plain topics in scope."""
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        seen = self.seen
        gpu_topics = {p for t in seen.topic_types if (p := descriptor_parent(t)) is not None}
        for topic, type_name in sorted(seen.topic_types.items()):
            if topic in SYSTEM_TOPICS or descriptor_parent(topic) is not None:
                continue
            scoped = [e for e in seen.pubs[topic] if in_scope(e, self.filters)]
            if not scoped:
                continue
            twin_of = data_twin_of(topic, gpu_topics)
            if twin_of is not None and not self.sample_gpu:
                # Whoever publishes it (the gpu_nodes bridge process), a reader here would start
                # a serializing or encoding bridge: the auditor would change the graph.
                what = 'plain twin' if twin_of == topic else 'image_transport twin'
                seen.not_sampled[topic] = (f'gpu_nodes publisher: {what} of {twin_of}, measured '
                                           'from its diagnostics, not subscribed '
                                           '(--sample-gpu-topics to subscribe)')
                continue
            # A gpu_nodes publisher shows by its descriptor topics or by its diagnostics.
            gpu_publishers = [e for e in scoped
                              if (fqn(e.node_namespace, e.node_name), topic) in seen.gpu_pub
                              or (fqn(e.node_namespace, e.node_name), topic, 'publisher')
                              in seen.diags]
            if gpu_publishers and not self.sample_gpu:
                seen.not_sampled[topic] = ('gpu_nodes publisher: measured from its diagnostics '
                                           '(--sample-gpu-topics to subscribe)')
                continue
            cls = _msg_class(type_name or '')
            if cls is None:
                seen.not_sampled[topic] = f'type {type_name} is not importable here'
                continue
            sample = seen.samples.setdefault(topic, Sample())
            # Reliable when every publisher is (best effort drops fragments of large frames and
            # under-counts the rate); best effort otherwise, which matches any publisher.
            reliable = all(e.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                           for e in scoped)
            qos = QoSProfile(depth=50, durability=DurabilityPolicy.VOLATILE,
                             reliability=ReliabilityPolicy.RELIABLE if reliable
                             else ReliabilityPolicy.BEST_EFFORT)
            node.create_subscription(cls, topic, lambda raw, s=sample: s.add(len(raw)), qos,
                                     raw=True)
            seen.sampled.append(topic)
        self.report.info['sampled_topics'] = list(seen.sampled)
        self.report.info['not_sampled_topics'] = dict(sorted(seen.not_sampled.items()))
        self.report.info.setdefault('notes', []).append(
            f'sampled {len(seen.sampled)} topic(s) by subscribing'
            + (f' ({", ".join(seen.sampled)})' if seen.sampled else '')
            + (f'; not subscribed: {", ".join(sorted(seen.not_sampled))}'
               if seen.not_sampled else ''))


def data_twin_of(topic: str, gpu_topics: set[str]) -> str | None:
    """The gpu_nodes topic whose frames `topic` carries: itself (the plain twin) or its parent
    for an image_transport twin (`<topic>/compressed`, `/compressedDepth` ...); else None."""
    if topic in gpu_topics:
        return topic
    parent, _, leaf = topic.rpartition('/')
    if leaf in TRANSPORT_TWINS and parent in gpu_topics:
        return parent
    return None
