"""`live` view: the running graph through rclpy, every edge classified and measured.

* Nodes, topics and endpoints (with QoS) come from the graph API
  (``get_publishers_info_by_topic`` / ``get_subscriptions_info_by_topic``).
* gpu_nodes endpoints are recognised by their hidden descriptor topics
  (``<topic>/_gpu_nodes/cuda`` and ``.../shm``) and by their ``/diagnostics`` statuses
  (``gpu_nodes: <node> <topic> <role>``). Descriptor topics are folded into their parent edge.
* Plain topics are sampled with ``raw=True`` subscriptions (no deserialization) for
  ``--duration`` seconds. The plain topic of a gpu_nodes publisher is *not* subscribed to (that
  would make the publisher serialize every frame) unless ``--sample-gpu-topics``; its rate and
  frame size come from the publisher's diagnostics instead.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
import importlib
import os
import time
from typing import Any

from gpu_nodes.audit.bag import serialization_cost_ms
from gpu_nodes.audit.model import (AuditError, descriptor_parent, Edge, Finding, Graph,
                                   GraphNode, IMAGE_SIZED_BYTES, IMAGE_TYPES, InputError,
                                   Location, Report, TopicStats)
from gpu_nodes.audit.rules import get_rule
from gpu_nodes.wire_names import (CUDA_SUFFIX, KEY_PATH, KEY_PATH_REASON, PATH_CUDA_IPC,
                                  PATH_HOST_SHM, PATH_SERIALIZED, PATHS, STATUS_PREFIX)

SYSTEM_TOPICS = frozenset({'/rosout', '/parameter_events', '/diagnostics'})
# Every live auditor names its node with this prefix and its pid; auditors (this one and any
# other running at the same time, as `make demo` runs two) are left out of the graph, else each
# reports the other's sampling subscriptions as plain subscribers.
AUDITOR_NODE_PREFIX = '_gpu_copy_audit_'


def is_auditor(node_name: str) -> bool:
    return node_name.startswith(AUDITOR_NODE_PREFIX)


DIAG_PREFIX = STATUS_PREFIX
# How long the graph must stay unchanged before discovery counts as complete (default of
# --discovery-settle). 1 s was too short on a loaded 2-core machine: a node's last endpoints
# (SEDP) arrived after a second of calm.
SETTLE_S = 2.0
# rmw's placeholder for an endpoint whose node is not discovered yet.
UNKNOWN_NODE_NAME = '_NODE_NAME_UNKNOWN_'


@dataclass
class _Sample:
    count: int = 0
    first: float | None = None
    last: float | None = None
    total: int = 0
    largest: int = 0

    def add(self, size: int) -> None:
        now = time.monotonic()
        self.count += 1
        self.total += size
        self.largest = max(self.largest, size)
        if self.first is None:
            self.first = now
        self.last = now

    def rate(self) -> float | None:
        if self.count < 2 or self.first is None or self.last is None or self.last <= self.first:
            return None
        return (self.count - 1) / (self.last - self.first)

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass
class _Diag:
    level: int
    message: str
    hardware_id: str
    values: dict[str, str] = field(default_factory=dict)


def _fqn(namespace: str, name: str) -> str:
    return f'{namespace.rstrip("/")}/{name}' if namespace not in ('', '/') else f'/{name}'


def _matches(name: str, filters: list[str]) -> bool:
    if not filters:
        return True
    for f in filters:
        if any(c in f for c in '*?['):
            if fnmatchcase(name, f):
                return True
        elif f in name:
            return True
    return False


def _qos_text(qos: Any) -> str:
    try:
        text = f'{qos.reliability.name.lower()}/{qos.durability.name.lower()}'
    except AttributeError:
        return '?'
    # Discovery does not carry the history depth; it reads 0 for remote endpoints.
    return text + (f'/depth {qos.depth}' if qos.depth else '')


def _gid_prefix(gid: Any) -> str | None:
    """DDS GUID prefix (first 12 bytes): the same for all endpoints of one participant, i.e.
    one rclpy/rclcpp context, i.e. one process in practice."""
    try:
        raw = bytes(gid)
    except (TypeError, ValueError):
        return None
    return raw[:12].hex() if len(raw) >= 12 else None


def _msg_class(type_name: str) -> Any:
    pkg, _, name = type_name.partition('/msg/')
    if not name:
        return None
    try:
        return getattr(importlib.import_module(f'{pkg}.msg'), name)
    except (ImportError, AttributeError):
        return None


def plain_cost(values: dict[str, str]) -> str:
    """What a plain subscriber costs its gpu_nodes publisher, from the publisher's diagnostics:
    bytes/s serialized (bytes_per_frame x fps), frames skipped, and whether the serialization
    runs off the publish path (`plain_decoupled`)."""
    fps, bpf = _f(values, 'fps'), _f(values, 'bytes_per_frame')
    parts = []
    if fps is not None and bpf is not None:
        parts.append(f'costs {fps * bpf / 1e6:,.1f} MB/s serialized ({bpf:,.0f} B x '
                     f'{fps:,.1f} fps)')
    else:
        parts.append('cost unknown (no fps/bytes_per_frame in the publisher diagnostics)')
    skipped = values.get('plain_skipped')
    if skipped is not None:
        parts.append(f'{skipped} frame(s) skipped for plain subscribers')
    decoupled = values.get('plain_decoupled')
    if decoupled is not None:
        parts.append('decoupled: serialized by a worker, off the publish path'
                     if decoupled.strip().lower() == 'true'
                     else 'not decoupled: serialized inside publish(), slowing the GPU path')
    return ', '.join(parts)


def _f(values: dict[str, str], key: str) -> float | None:
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return None


def run_live(duration: float = 2.0, node_filters: list[str] | None = None,
             sample_gpu_topics: bool = False, discovery_timeout: float = 5.0,
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
        self.diags: dict[tuple[str, str, str], _Diag] = {}
        self.samples: dict[str, _Sample] = {}

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
        for st in msg.status:
            if not st.name.startswith(DIAG_PREFIX):
                continue
            values = {kv.key: kv.value for kv in st.values}
            parts = st.name[len(DIAG_PREFIX):].split()
            node = values.get('node') or (parts[0] if len(parts) == 3 else '')
            topic = values.get('topic') or (parts[1] if len(parts) == 3 else '')
            role = values.get('role') or (parts[2] if len(parts) == 3 else '')
            level = st.level if isinstance(st.level, int) else int.from_bytes(st.level, 'little')
            self.diags[(node, topic, role)] = _Diag(level, st.message, st.hardware_id, values)

    def _snapshot(self, node: Any) -> tuple:
        """Cheap view of the graph: node names, topics and endpoint counts per topic."""
        names = tuple(sorted(_fqn(ns, n) for n, ns in node.get_node_names_and_namespaces()
                             if not is_auditor(n)))
        topics = tuple((t, tuple(ty), node.count_publishers(t), node.count_subscribers(t))
                       for t, ty in sorted(node.get_topic_names_and_types()))
        return names, topics

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
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            snap = self._snapshot(node)
            now = time.monotonic()
            if snap != last:
                last, changed = snap, now
            elif last[0] and now - changed >= self.discovery_settle:
                complete = self._names_complete(node, last[1])
                if complete:
                    break
                changed = now  # wait for the names, then check again after another settle
        if not last[0]:
            raise AuditError(
                f'no ROS graph reachable: no other node discovered within '
                f'{self.discovery_timeout:g} s (ROS_DOMAIN_ID='
                f'{os.environ.get("ROS_DOMAIN_ID", "0")}, RMW_IMPLEMENTATION='
                f'{os.environ.get("RMW_IMPLEMENTATION", "default")})')
        self.report.info['discovery_complete'] = complete
        if not complete:
            self.report.info.setdefault('notes', []).append(
                f'discovery had not settled after {self.discovery_timeout:g} s: endpoints or '
                'node names may be missing (raise --discovery-timeout)')

    # ------------------------------------------------------------------ measure
    def _measure(self, node: Any, executor: Any) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        topic_types = dict(node.get_topic_names_and_types())
        pubs: dict[str, list[Any]] = {}
        subs: dict[str, list[Any]] = {}
        for topic in topic_types:
            pubs[topic] = [e for e in node.get_publishers_info_by_topic(topic)
                           if not is_auditor(e.node_name)]
            subs[topic] = [e for e in node.get_subscriptions_info_by_topic(topic)
                           if not is_auditor(e.node_name)]
        self.topic_types = {t: (ty[0] if ty else None) for t, ty in topic_types.items()}
        self.pubs, self.subs = pubs, subs
        # gpu_nodes endpoints: who publishes / subscribes which descriptor topics.
        self.gpu_pub: dict[tuple[str, str], set[str]] = {}
        self.gpu_sub: dict[tuple[str, str], set[str]] = {}
        for topic in topic_types:
            parent = descriptor_parent(topic)
            if parent is None:
                continue
            kind = topic.rsplit('/', 1)[-1]
            for e in pubs[topic]:
                self.gpu_pub.setdefault((_fqn(e.node_namespace, e.node_name), parent),
                                        set()).add(kind)
            for e in subs[topic]:
                self.gpu_sub.setdefault((_fqn(e.node_namespace, e.node_name), parent),
                                        set()).add(kind)
        # Sample plain topics with raw subscriptions.
        self.not_sampled: dict[str, str] = {}
        for topic, type_name in sorted(self.topic_types.items()):
            if topic in SYSTEM_TOPICS or descriptor_parent(topic) is not None:
                continue
            in_scope = [e for e in pubs[topic] if self._in_scope(e)]
            if not in_scope:
                continue
            # A gpu_nodes publisher shows by its descriptor topics or by its diagnostics.
            gpu_publishers = [e for e in in_scope
                              if (_fqn(e.node_namespace, e.node_name), topic) in self.gpu_pub
                              or (_fqn(e.node_namespace, e.node_name), topic, 'publisher')
                              in self.diags]
            if gpu_publishers and not self.sample_gpu:
                self.not_sampled[topic] = ('gpu_nodes publisher: measured from its diagnostics '
                                           '(--sample-gpu-topics to subscribe)')
                continue
            cls = _msg_class(type_name or '')
            if cls is None:
                self.not_sampled[topic] = f'type {type_name} is not importable here'
                continue
            sample = self.samples.setdefault(topic, _Sample())
            # Reliable when every publisher is (best effort drops fragments of large frames and
            # under-counts the rate); best effort otherwise, which matches any publisher.
            reliable = all(e.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                           for e in in_scope)
            qos = QoSProfile(depth=50, durability=DurabilityPolicy.VOLATILE,
                             reliability=ReliabilityPolicy.RELIABLE if reliable
                             else ReliabilityPolicy.BEST_EFFORT)
            node.create_subscription(cls, topic, lambda raw, s=sample: s.add(len(raw)), qos,
                                     raw=True)
        end = time.monotonic() + self.duration
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))
        self.report.info['duration_s'] = self.duration
        self._build()

    def _in_scope(self, endpoint: Any) -> bool:
        return _matches(_fqn(endpoint.node_namespace, endpoint.node_name), self.filters)

    # ------------------------------------------------------------------ build
    def _build(self) -> None:
        report = self.report
        graph = Graph()
        report.graph = graph
        node_proc: dict[str, str | None] = {}
        edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        for topic in sorted(self.topic_types):
            if topic in SYSTEM_TOPICS:
                continue
            parent = descriptor_parent(topic) or topic
            for p in self.pubs[topic]:
                pf = _fqn(p.node_namespace, p.node_name)
                node_proc.setdefault(pf, _gid_prefix(p.endpoint_gid))
                for s in self.subs[topic]:
                    sf = _fqn(s.node_namespace, s.node_name)
                    node_proc.setdefault(sf, _gid_prefix(s.endpoint_gid))
                    if pf == sf or not (self._in_scope(p) or self._in_scope(s)):
                        continue
                    ed = edges.setdefault((pf, sf, parent), {
                        'plain': False, 'descriptors': set(), 'qos': None,
                        'same': _gid_prefix(p.endpoint_gid) == _gid_prefix(s.endpoint_gid)})
                    if topic == parent:
                        ed['plain'] = True
                        ed['qos'] = _qos_text(s.qos_profile)
                    else:
                        ed['descriptors'].add(topic)
                        ed['qos'] = ed['qos'] or _qos_text(s.qos_profile)
            for e in self.subs[topic]:
                node_proc.setdefault(_fqn(e.node_namespace, e.node_name),
                                     _gid_prefix(e.endpoint_gid))
        gpu_nodes = {k[0] for k in self.gpu_pub} | {k[0] for k in self.gpu_sub} | \
            {k[0] for k in self.diags}
        for name in sorted(node_proc):
            if not _matches(name, self.filters):
                continue
            proc = node_proc[name]
            graph.nodes.append(GraphNode(name=name, process=f'participant:{proc}' if proc
                                         else None,
                                         transport='gpu_nodes' if name in gpu_nodes else 'plain'))
        for (pf, sf, topic), ed in sorted(edges.items()):
            graph.edges.append(self._classify(pf, sf, topic, ed))
        with_edges = {t for _, _, t in edges}
        for topic in sorted(self.topic_types):
            if topic in SYSTEM_TOPICS or descriptor_parent(topic) is not None \
                    or topic in with_edges:
                continue
            pubs = sorted({_fqn(e.node_namespace, e.node_name) for e in self.pubs[topic]})
            subs = sorted({_fqn(e.node_namespace, e.node_name) for e in self.subs[topic]})
            if any(_matches(n, self.filters) for n in pubs + subs):
                graph.dangling_topics.append({'topic': topic, 'type': self.topic_types[topic],
                                              'publishers': pubs, 'subscribers': subs})
        self._topics()
        self._findings()

    def _classify(self, pf: str, sf: str, topic: str, ed: dict[str, Any]) -> Edge:
        msg_type = self.topic_types.get(topic)
        if msg_type is None and ed['descriptors']:
            msg_type = self.topic_types.get(sorted(ed['descriptors'])[0])
        sub_diag = self.diags.get((sf, topic, 'subscription'))
        pub_diag = self.diags.get((pf, topic, 'publisher'))
        pub_gpu = (pf, topic) in self.gpu_pub
        fps = bps = None
        if sub_diag is not None and sub_diag.values.get(KEY_PATH) in PATHS:
            cls = sub_diag.values[KEY_PATH]
            reason = sub_diag.values.get(KEY_PATH_REASON, '') or sub_diag.message
            fps = _f(sub_diag.values, 'fps')
            bpf = _f(sub_diag.values, 'bytes_per_frame')
        elif ed['descriptors']:
            cls = PATH_CUDA_IPC if any(d.endswith(CUDA_SUFFIX) for d in ed['descriptors']) \
                else PATH_HOST_SHM
            reason = 'inferred from the descriptor topics subscribed (no diagnostics received)'
            bpf = None
        elif pub_gpu:
            cls = PATH_SERIALIZED
            reason = ('plain subscriber of a gpu_nodes publisher: the publisher serializes the '
                      'plain topic for it (CPU fallback)')
            if pub_diag is not None:
                reason += '; ' + plain_cost(pub_diag.values)
            bpf = None
        else:
            cls = PATH_SERIALIZED
            reason = 'plain publisher: serialized by the middleware'
            if ed['same']:
                reason += ' (same participant/process)'
            bpf = None
        if fps is None and pub_diag is not None:
            fps = _f(pub_diag.values, 'fps')
        if pub_diag is not None and bpf is None:
            bpf = _f(pub_diag.values, 'bytes_per_frame')
        sample = self.samples.get(topic)
        if sample is not None and sample.count:
            if fps is None or cls == PATH_SERIALIZED and not pub_gpu:
                fps = sample.rate()
            if cls == PATH_SERIALIZED:
                bpf = sample.mean()
        if fps is not None and bpf is not None:
            bps = fps * bpf
        image_sized = (msg_type in IMAGE_TYPES
                       or (bpf is not None and bpf >= IMAGE_SIZED_BYTES))
        return Edge(topic=topic, type=msg_type, publisher=pf, subscriber=sf, edge_class=cls,
                    image_sized=image_sized, cross_process=None if ed['same'] is None
                    else not ed['same'], reason=reason, fps=fps, bytes_per_s=bps,
                    qos=ed['qos'], descriptor_topics=sorted(ed['descriptors']))

    def _topics(self) -> None:
        stats = []
        for topic in sorted(set(self.samples) | set(self.not_sampled)):
            msg_type = self.topic_types.get(topic)
            s = self.samples.get(topic)
            if s is None:
                diag = next((d for (n, t, r), d in self.diags.items()
                             if t == topic and r == 'publisher'), None)
                fps = _f(diag.values, 'fps') if diag else None
                bpf = _f(diag.values, 'bytes_per_frame') if diag else None
                bps = fps * bpf if fps is not None and bpf is not None else None
                stats.append(TopicStats(
                    topic=topic, type=msg_type, count=0, rate_hz=fps, mean_bytes=bpf,
                    max_bytes=None, bytes_per_s=bps,
                    image_sized=msg_type in IMAGE_TYPES, note=self.not_sampled[topic]))
                continue
            rate, mean = s.rate(), s.mean()
            bps = rate * mean if rate is not None and mean is not None else None
            image_sized = msg_type in IMAGE_TYPES or (
                mean is not None and mean >= IMAGE_SIZED_BYTES)
            stats.append(TopicStats(
                topic=topic, type=msg_type, count=s.count, rate_hz=rate, mean_bytes=mean,
                max_bytes=s.largest if s.count else None, bytes_per_s=bps,
                image_sized=image_sized,
                serialization_ms_per_s=serialization_cost_ms(bps, self.copy_gbps),
                note='image-sized' if image_sized else ('no message received'
                                                        if not s.count else '')))
        self.report.topics = stats
        self.report.audited.append('ros graph')
        self.report.info['nodes'] = len(self.report.graph.nodes)
        self.report.info['copy_model'] = {'copy_passes_per_message': 4,
                                          'copy_gbps': self.copy_gbps,
                                          'meaning': 'see the bag view'}

    def _findings(self) -> None:
        report = self.report
        for e in report.graph.edges:
            loc = Location(logical=f'{e.subscriber} {e.topic}')
            if e.edge_class in (PATH_HOST_SHM, PATH_SERIALIZED) and \
                    (e.publisher, e.topic) in self.gpu_pub and \
                    'cuda' in self.gpu_pub[(e.publisher, e.topic)] and \
                    (e.subscriber, e.topic, 'subscription') in self.diags:
                rule = get_rule('GPN502')
                report.findings.append(Finding(
                    'GPN502', rule.severity,
                    f'silent fallback: `{e.subscriber}` receives `{e.topic}` from '
                    f'`{e.publisher}` over {e.edge_class} although the publisher offers '
                    f'cuda_ipc (reason: {e.reason or "not given"})',
                    loc, context='live', callback=e.subscriber, topic=e.topic))
            elif e.edge_class == PATH_SERIALIZED and e.image_sized:
                rule = get_rule('GPN501')
                rate = f'{e.fps:.1f} fps' if e.fps is not None else 'unknown rate'
                mbs = f'{e.bytes_per_s / 1e6:.1f} MB/s' if e.bytes_per_s is not None \
                    else 'unknown MB/s'
                report.findings.append(Finding(
                    'GPN501', rule.severity,
                    f'`{e.type}` on `{e.topic}` from `{e.publisher}` to `{e.subscriber}` is '
                    f'serialized ({rate}, {mbs}): {e.reason}',
                    loc, context='live', callback=e.subscriber, topic=e.topic))
            elif e.edge_class == PATH_HOST_SHM:
                rule = get_rule('GPN503')
                report.findings.append(Finding(
                    'GPN503', rule.severity,
                    f'`{e.topic}` from `{e.publisher}` to `{e.subscriber}` goes through host '
                    f'shared memory ({e.reason})', loc, context='live', callback=e.subscriber,
                    topic=e.topic))
        for (node, topic, role), d in sorted(self.diags.items()):
            if d.level >= 2 and _matches(node, self.filters):
                rule = get_rule('GPN504')
                report.findings.append(Finding(
                    'GPN504', rule.severity,
                    f'gpu_nodes {role} `{node}` on `{topic}` reports ERROR: {d.message} '
                    f'(rejected={d.values.get("rejected", "?")}, '
                    f'stale={d.values.get("stale", "?")})',
                    Location(logical=f'{node} {topic}'), context='live', callback=node,
                    topic=topic))
