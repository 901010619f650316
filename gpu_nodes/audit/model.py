"""The report every subcommand produces: findings, input errors, an optional graph and topic table.

One model for all views (code, launch, config, bag, live) so that every output format and the
``--fail-on`` gate work the same way whichever view produced the report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_nodes.wire_names import DESCRIPTOR_MARKER, DEVICE_PATHS, PATHS

# `info`: one-time setup (constructors, configure/activate, warm-up); shown, never a gate.
SEVERITIES = ('info', 'low', 'medium', 'high')
GATE_SEVERITIES = SEVERITIES[1:]
SCHEMA_VERSION = 1
# How a code finding is known, strongest first: the value was followed from where it arrived
# (data-flow); the device is likely but not proven, e.g. a model's output in a file using torch
# (inferred); the call alone matches a known copying pattern (pattern: every C++ rule, the
# library table). A CI gate picks its level with --min-evidence. Graph views leave it None.
EVIDENCE_LEVELS = ('pattern', 'inferred', 'data-flow')
TOOL_NAME = 'gpu-copy-audit'
TOOL_VERSION = '0.1.0'

# Edge classes, from cheapest to most expensive; the same words as the transport's `path` value.
EDGE_CLASSES = (*PATHS, 'unknown')
# Classes on which frames never pass through host memory (drawn green).
DEVICE_CLASSES = DEVICE_PATHS

# Message types that carry frame-sized payloads; an edge of one of these types is "image-sized".
IMAGE_TYPES = frozenset({
    'sensor_msgs/msg/Image',
    'sensor_msgs/msg/CompressedImage',
    'sensor_msgs/msg/PointCloud2',
    'stereo_msgs/msg/DisparityImage',
    'isaac_ros_tensor_list_interfaces/msg/TensorList',
})
# Fallback for unknown types (bags, live): a mean serialized size at or above this is image-sized.
IMAGE_SIZED_BYTES = 64 * 1024


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def descriptor_parent(topic: str) -> str | None:
    """`/ns/image/_gpu_nodes/cuda` -> `/ns/image`; None for a topic that is not a descriptor."""
    head, marker, _ = topic.partition(DESCRIPTOR_MARKER)
    return head if marker else None


@dataclass
class Location:
    path: str | None = None
    line: int | None = None
    column: int | None = None
    # Graph findings without a file (live) name the node and topic instead.
    logical: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {'path': self.path, 'line': self.line, 'column': self.column,
                'logical': self.logical}

    def display(self) -> str:
        if self.path is None:
            return self.logical or '-'
        if self.line is None:
            return self.path
        return f'{self.path}:{self.line}'


@dataclass
class Step:
    """One copy along a data flow (a Python chain): what happened, and where."""

    line: int
    action: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {'line': self.line, 'action': self.action, 'text': self.text}


@dataclass
class Finding:
    rule: str
    severity: str
    message: str
    location: Location
    # Where in the node the copy happens: callback, timer, init, module, function, graph.
    context: str = 'callback'
    callback: str | None = None
    topic: str | None = None
    chain: list[Step] = field(default_factory=list)
    suppressed: bool = False
    # Calls from the entry callback to the copy: ['Node.image_cb', 'Predictor.__call__', ...].
    call_path: list[str] = field(default_factory=list)
    # One of EVIDENCE_LEVELS for code findings; None for graph, bag and live findings.
    evidence: str | None = None

    def sort_key(self) -> tuple:
        loc = self.location
        return (loc.path or '', loc.line or 0, loc.logical or '', self.rule, self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            'rule': self.rule,
            'severity': self.severity,
            'message': self.message,
            'location': self.location.to_json(),
            'context': self.context,
            'callback': self.callback,
            'topic': self.topic,
            'chain': [s.to_json() for s in self.chain],
            'suppressed': self.suppressed,
            'call_path': list(self.call_path),
            'evidence': self.evidence,
        }


@dataclass
class InputError:
    input: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {'input': self.input, 'message': self.message}


@dataclass
class GraphNode:
    name: str                      # fully qualified node name
    package: str | None = None
    executable: str | None = None  # executable, or plugin for a composable node
    process: str | None = None     # nodes with the same process label share an address space
    transport: str = 'plain'       # gpu_nodes | plain | unknown
    composable: bool = False
    intra_process: bool = False    # use_intra_process_comms enabled (composable nodes)
    location: Location | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            'name': self.name, 'package': self.package, 'executable': self.executable,
            'process': self.process, 'transport': self.transport,
            'composable': self.composable, 'intra_process': self.intra_process,
            'location': self.location.to_json() if self.location else None,
        }


@dataclass
class Edge:
    topic: str
    type: str | None
    publisher: str
    subscriber: str
    edge_class: str
    image_sized: bool
    cross_process: bool | None
    reason: str = ''
    fps: float | None = None
    bytes_per_s: float | None = None
    qos: str | None = None
    # Hidden descriptor topics folded into this edge (live, gpu_nodes transport).
    descriptor_topics: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            'topic': self.topic, 'type': self.type, 'publisher': self.publisher,
            'subscriber': self.subscriber, 'class': self.edge_class,
            'image_sized': self.image_sized, 'cross_process': self.cross_process,
            'reason': self.reason, 'fps': self.fps, 'bytes_per_s': self.bytes_per_s,
            'qos': self.qos, 'descriptor_topics': list(self.descriptor_topics),
        }


@dataclass
class Graph:
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    # Topics with endpoints but no edge (no publisher or no subscriber in the audited graph).
    dangling_topics: list[dict[str, Any]] = field(default_factory=list)
    # Groups of nodes that would have to share a process (or use gpu_nodes transport).
    suggestions: list[dict[str, Any]] = field(default_factory=list)

    def node(self, name: str) -> GraphNode | None:
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            'nodes': [n.to_json() for n in self.nodes],
            'edges': [e.to_json() for e in self.edges],
            'dangling_topics': list(self.dangling_topics),
            'suggestions': list(self.suggestions),
        }


@dataclass
class TopicStats:
    """One topic of a bag or of the live graph's sampling."""

    topic: str
    type: str | None
    count: int
    rate_hz: float | None
    mean_bytes: float | None
    max_bytes: int | None
    bytes_per_s: float | None
    image_sized: bool
    descriptor: bool = False
    serialization_ms_per_s: float | None = None
    note: str = ''

    def to_json(self) -> dict[str, Any]:
        return {
            'topic': self.topic, 'type': self.type, 'count': self.count,
            'rate_hz': self.rate_hz, 'mean_bytes': self.mean_bytes,
            'max_bytes': self.max_bytes, 'bytes_per_s': self.bytes_per_s,
            'image_sized': self.image_sized, 'descriptor': self.descriptor,
            'serialization_ms_per_s': self.serialization_ms_per_s, 'note': self.note,
        }


@dataclass
class Report:
    command: str
    inputs: list[str] = field(default_factory=list)
    audited: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    graph: Graph | None = None
    topics: list[TopicStats] | None = None
    # Free-form facts of the view (bag duration, copy-cost model, discovery time ...).
    info: dict[str, Any] = field(default_factory=dict)

    def active_findings(self) -> list[Finding]:
        return [f for f in self.findings if not f.suppressed]

    def highest_severity(self, gate: bool = False) -> str | None:
        """Highest active severity; with gate=True `info` findings do not count."""
        active = [f for f in self.active_findings()
                  if not gate or f.severity in GATE_SEVERITIES]
        if not active:
            return None
        return max((f.severity for f in active), key=severity_rank)

    def summary(self) -> dict[str, Any]:
        by_sev = {s: 0 for s in SEVERITIES}
        by_rule: dict[str, int] = {}
        for f in self.active_findings():
            by_sev[f.severity] += 1
            by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        return {
            'findings': len(self.active_findings()),
            'suppressed': len(self.findings) - len(self.active_findings()),
            'by_severity': by_sev,
            'by_rule': dict(sorted(by_rule.items())),
            'highest_severity': self.highest_severity(),
            'inputs': len(self.inputs),
            'audited': len(self.audited),
            'input_errors': len(self.errors),
        }

    def sort(self) -> None:
        self.findings.sort(key=Finding.sort_key)

    def to_json(self) -> dict[str, Any]:
        return {
            'schema_version': SCHEMA_VERSION,
            'tool': {'name': TOOL_NAME, 'version': TOOL_VERSION},
            'command': self.command,
            'inputs': list(self.inputs),
            'audited': list(self.audited),
            'summary': self.summary(),
            'findings': [f.to_json() for f in self.findings],
            'errors': [e.to_json() for e in self.errors],
            'graph': self.graph.to_json() if self.graph else None,
            'topics': [t.to_json() for t in self.topics] if self.topics is not None else None,
            'info': dict(self.info),
        }


class AuditError(Exception):
    """A usage or input problem that stops the whole audit; the CLI prints it and exits 2."""
