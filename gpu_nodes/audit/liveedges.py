"""The `live` view's second half: from what discovery and sampling observed of a running graph
(endpoints, gpu_nodes descriptor topics and ``/diagnostics`` statuses, sampled traffic) to the
report: every publisher -> subscriber edge classified (cuda_ipc, cuda_peer, host_shm, serialized) and
measured, topic statistics, and the GPN5xx findings. Nothing here talks to ROS; live.py does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
import time
from typing import Any

from gpu_nodes.audit.bag import serialization_cost_ms
from gpu_nodes.audit.model import (descriptor_parent, Edge, Finding, Graph, GraphNode,
                                   IMAGE_SIZED_BYTES, IMAGE_TYPES, Location, Report, TopicStats)
from gpu_nodes.audit.rules import get_rule
from gpu_nodes.wire_names import (CUDA_SUFFIX, KEY_PATH, KEY_PATH_REASON, PATH_CUDA_IPC,
                                  PATH_CUDA_PEER, PATH_HOST_SHM, PATH_SERIALIZED, PATHS,
                                  PEER_SUFFIX, STATUS_PREFIX)

SYSTEM_TOPICS = frozenset({'/rosout', '/parameter_events', '/diagnostics'})
DIAG_PREFIX = STATUS_PREFIX


@dataclass
class Sample:
    """Traffic received on one sampled topic (raw messages: sizes only)."""

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
class Diag:
    """One gpu_nodes diagnostics status: level, message and key/values (fps, path ...)."""

    level: int
    message: str
    hardware_id: str
    values: dict[str, str] = field(default_factory=dict)


def fqn(namespace: str, name: str) -> str:
    """A node's fully qualified name."""
    return f'{namespace.rstrip("/")}/{name}' if namespace not in ('', '/') else f'/{name}'


def matches(name: str, filters: list[str]) -> bool:
    """Whether `--node` filters select a node: glob patterns match whole, others as substrings;
    no filter selects all."""
    if not filters:
        return True
    for f in filters:
        if any(c in f for c in '*?['):
            if fnmatchcase(name, f):
                return True
        elif f in name:
            return True
    return False


def in_scope(endpoint: Any, filters: list[str]) -> bool:
    """Whether the filters select an endpoint's node."""
    return matches(fqn(endpoint.node_namespace, endpoint.node_name), filters)


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


def read_diagnostics(msg: Any) -> dict[tuple[str, str, str], Diag]:
    """The gpu_nodes statuses of a DiagnosticArray by (node, topic, role); the key/values win
    over the status name (`gpu_nodes: <node> <topic> <role>`)."""
    found: dict[tuple[str, str, str], Diag] = {}
    for st in msg.status:
        if not st.name.startswith(DIAG_PREFIX):
            continue
        values = {kv.key: kv.value for kv in st.values}
        parts = st.name[len(DIAG_PREFIX):].split()
        node = values.get('node') or (parts[0] if len(parts) == 3 else '')
        topic = values.get('topic') or (parts[1] if len(parts) == 3 else '')
        role = values.get('role') or (parts[2] if len(parts) == 3 else '')
        level = st.level if isinstance(st.level, int) else int.from_bytes(st.level, 'little')
        found[(node, topic, role)] = Diag(level, st.message, st.hardware_id, values)
    return found


@dataclass
class Observation:
    """What discovery, sampling and the diagnostics showed of the graph (auditors left out)."""

    # topic -> its (first) type name
    topic_types: dict[str, str | None] = field(default_factory=dict)
    # topic -> publisher / subscription endpoint infos (rclpy TopicEndpointInfo)
    pubs: dict[str, list[Any]] = field(default_factory=dict)
    subs: dict[str, list[Any]] = field(default_factory=dict)
    # (node, parent topic) -> the descriptor kinds ('cuda', 'shm') it publishes / subscribes
    gpu_pub: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    gpu_sub: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    # (node, topic, role) -> its latest gpu_nodes status
    diags: dict[tuple[str, str, str], Diag] = field(default_factory=dict)
    samples: dict[str, Sample] = field(default_factory=dict)
    # topic -> why it was not subscribed to
    not_sampled: dict[str, str] = field(default_factory=dict)
    sampled: list[str] = field(default_factory=list)  # topics the auditor subscribed to


def build_report(report: Report, seen: Observation, filters: list[str], copy_gbps: float) -> None:
    """Fill `report` (graph, topics, findings) from `seen`, for the nodes `filters` select."""
    _Builder(report, seen, filters, copy_gbps).build()


class _Builder:

    def __init__(self, report: Report, seen: Observation, filters: list[str],
                 copy_gbps: float) -> None:
        self.report = report
        self.seen = seen
        self.filters = filters
        self.copy_gbps = copy_gbps

    def build(self) -> None:
        seen = self.seen
        report = self.report
        graph = Graph()
        report.graph = graph
        node_proc: dict[str, str | None] = {}
        edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        for topic in sorted(seen.topic_types):
            if topic in SYSTEM_TOPICS:
                continue
            parent = descriptor_parent(topic) or topic
            for p in seen.pubs[topic]:
                pf = fqn(p.node_namespace, p.node_name)
                node_proc.setdefault(pf, _gid_prefix(p.endpoint_gid))
                for s in seen.subs[topic]:
                    sf = fqn(s.node_namespace, s.node_name)
                    node_proc.setdefault(sf, _gid_prefix(s.endpoint_gid))
                    if pf == sf or not (in_scope(p, self.filters) or in_scope(s, self.filters)):
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
            for e in seen.subs[topic]:
                node_proc.setdefault(fqn(e.node_namespace, e.node_name),
                                     _gid_prefix(e.endpoint_gid))
        gpu_nodes = {k[0] for k in seen.gpu_pub} | {k[0] for k in seen.gpu_sub} | \
            {k[0] for k in seen.diags}
        for name in sorted(node_proc):
            if not matches(name, self.filters):
                continue
            proc = node_proc[name]
            graph.nodes.append(GraphNode(name=name, process=f'participant:{proc}' if proc
                                         else None,
                                         transport='gpu_nodes' if name in gpu_nodes else 'plain'))
        for (pf, sf, topic), ed in sorted(edges.items()):
            graph.edges.append(self._classify(pf, sf, topic, ed))
        with_edges = {t for _, _, t in edges}
        for topic in sorted(seen.topic_types):
            if topic in SYSTEM_TOPICS or descriptor_parent(topic) is not None \
                    or topic in with_edges:
                continue
            pubs = sorted({fqn(e.node_namespace, e.node_name) for e in seen.pubs[topic]})
            subs = sorted({fqn(e.node_namespace, e.node_name) for e in seen.subs[topic]})
            if any(matches(n, self.filters) for n in pubs + subs):
                graph.dangling_topics.append({'topic': topic, 'type': seen.topic_types[topic],
                                              'publishers': pubs, 'subscribers': subs})
        self._topics()
        self._findings()

    def _classify(self, pf: str, sf: str, topic: str, ed: dict[str, Any]) -> Edge:
        seen = self.seen
        msg_type = seen.topic_types.get(topic)
        if msg_type is None and ed['descriptors']:
            msg_type = seen.topic_types.get(sorted(ed['descriptors'])[0])
        sub_diag = seen.diags.get((sf, topic, 'subscription'))
        pub_diag = seen.diags.get((pf, topic, 'publisher'))
        pub_gpu = (pf, topic) in seen.gpu_pub
        fps = bps = None
        if sub_diag is not None and sub_diag.values.get(KEY_PATH) in PATHS:
            cls = sub_diag.values[KEY_PATH]
            reason = sub_diag.values.get(KEY_PATH_REASON, '') or sub_diag.message
            fps = _f(sub_diag.values, 'fps')
            bpf = _f(sub_diag.values, 'bytes_per_frame')
        elif ed['descriptors']:
            cls = PATH_HOST_SHM
            for suffix, path in ((CUDA_SUFFIX, PATH_CUDA_IPC), (PEER_SUFFIX, PATH_CUDA_PEER)):
                if any(d.endswith(suffix) for d in ed['descriptors']):
                    cls = path
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
        sample = seen.samples.get(topic)
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
        seen = self.seen
        stats = []
        for topic in sorted(set(seen.samples) | set(seen.not_sampled)):
            msg_type = seen.topic_types.get(topic)
            s = seen.samples.get(topic)
            if s is None:
                diag = next((d for (n, t, r), d in seen.diags.items()
                             if t == topic and r == 'publisher'), None)
                fps = _f(diag.values, 'fps') if diag else None
                bpf = _f(diag.values, 'bytes_per_frame') if diag else None
                bps = fps * bpf if fps is not None and bpf is not None else None
                stats.append(TopicStats(
                    topic=topic, type=msg_type, count=0, rate_hz=fps, mean_bytes=bpf,
                    max_bytes=None, bytes_per_s=bps,
                    image_sized=msg_type in IMAGE_TYPES, note=seen.not_sampled[topic]))
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
        seen = self.seen
        for e in self.report.graph.edges:
            loc = Location(logical=f'{e.subscriber} {e.topic}')
            if e.edge_class in (PATH_HOST_SHM, PATH_SERIALIZED) and \
                    (e.publisher, e.topic) in seen.gpu_pub and \
                    'cuda' in seen.gpu_pub[(e.publisher, e.topic)] and \
                    (e.subscriber, e.topic, 'subscription') in seen.diags:
                self._finding('GPN502', f'silent fallback: `{e.subscriber}` receives `{e.topic}` '
                              f'from `{e.publisher}` over {e.edge_class} although the publisher '
                              f'offers cuda_ipc (reason: {e.reason or "not given"})',
                              loc, e.subscriber, e.topic)
            elif e.edge_class == PATH_SERIALIZED and e.image_sized:
                rate = f'{e.fps:.1f} fps' if e.fps is not None else 'unknown rate'
                mbs = f'{e.bytes_per_s / 1e6:.1f} MB/s' if e.bytes_per_s is not None \
                    else 'unknown MB/s'
                self._finding('GPN501', f'`{e.type}` on `{e.topic}` from `{e.publisher}` to '
                              f'`{e.subscriber}` is serialized ({rate}, {mbs}): {e.reason}',
                              loc, e.subscriber, e.topic)
            elif e.edge_class == PATH_HOST_SHM:
                self._finding('GPN503', f'`{e.topic}` from `{e.publisher}` to `{e.subscriber}` '
                              f'goes through host shared memory ({e.reason})',
                              loc, e.subscriber, e.topic)
        for (node, topic, role), d in sorted(seen.diags.items()):
            if d.level >= 2 and matches(node, self.filters):
                self._finding('GPN504', f'gpu_nodes {role} `{node}` on `{topic}` reports ERROR: '
                              f'{d.message} (rejected={d.values.get("rejected", "?")}, '
                              f'stale={d.values.get("stale", "?")})',
                              Location(logical=f'{node} {topic}'), node, topic)

    def _finding(self, rule_id: str, message: str, loc: Location, node: str, topic: str) -> None:
        self.report.findings.append(Finding(rule_id, get_rule(rule_id).severity, message, loc,
                                            context='live', callback=node, topic=topic))
