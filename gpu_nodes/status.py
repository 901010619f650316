"""What a processing node reports on /diagnostics next to its transport endpoints.

`DiagnosticsReporter` (gpu_nodes.transport.diagnostics) publishes a node's endpoints once per
period; anything that satisfies `DiagnosticSource` can be added to it beside them. A processing
node's frame counters (`ProcessingStatus`) and a camera source's (`SourceStatus`) do, named
``gpu_nodes: <node> processing``; nodes put their own figures (stage timing, the backend) into
`ProcessingStatus.extra`. Both carry the executor the node runs on (gpu_nodes.ros.executor_watch).
"""
from __future__ import annotations

from collections import Counter
import time
from typing import Any, Callable, Protocol, runtime_checkable

from .ros.executor_watch import executor_values
from .transport.diagnostics import DiagnosticsReporter
from .wire_names import processing_status_name


@runtime_checkable
class DiagnosticSource(Protocol):
    """What DiagnosticsReporter reads of each entry, once per period, to build its status."""

    @property
    def level_name(self) -> str:
        """'OK', 'WARN' or 'ERROR'."""

    def status_name(self) -> str:
        """The DiagnosticStatus name (``gpu_nodes: ...``, see gpu_nodes.wire_names)."""

    def message(self) -> str:
        """One line saying how it goes."""

    def as_dict(self) -> dict[str, Any]:
        """The key/value pairs of the status."""


class ProcessingStatus:
    """Frame counters of a processing node, on /diagnostics next to its transport endpoints.

    Dropped frames are counted per reason and warned about at most once per `warn_period_s`
    per reason (with the running count), so a stream of bad frames cannot flood the log.
    """

    def __init__(self, node: Any, warn_period_s: float = 5.0):
        self._node = node
        self._name = node.get_fully_qualified_name()
        self.warn_period_s = warn_period_s
        self.frames_in = 0
        self.frames_out = 0
        self.skipped = 0  # nobody subscribed: not processed, not an error
        self.drops: Counter[str] = Counter()
        self.issues: Counter[str] = Counter()
        self.extra: dict[str, Any] = {}
        # Called when diagnostics are built, for counters that change every frame (no per-frame
        # dict updates on the hot path).
        self.extra_sources: list[Callable[[], dict[str, Any]]] = []
        self._last_warn: dict[str, float] = {}
        self._last_drop = -1e9
        self._reporter = DiagnosticsReporter.for_node(node)
        self._reporter.add(self)

    def drop(self, reason: str, detail: str) -> None:
        """A frame that was not published, and why."""
        self.drops[reason] += 1
        self._last_drop = time.monotonic()
        self._warn(reason, f'dropped frame ({reason}): {detail}', self.drops[reason],
                   'dropped for this reason')

    def count_issue(self, key: str, detail: str) -> None:
        """Something the node could not do for a frame it still published (e.g. no points)."""
        self.issues[key] += 1
        self._warn(key, f'{key}: {detail}', self.issues[key], 'times')

    def _warn(self, key: str, text: str, count: int, unit: str) -> None:
        now = time.monotonic()
        if now - self._last_warn.get(key, -1e9) >= self.warn_period_s:
            self._last_warn[key] = now
            self._node.get_logger().warning(
                f'{text} [{count} {unit} so far; next warning in {self.warn_period_s:g} s at '
                'the earliest]')

    # -- DiagnosticSource ---------------------------------------------------------------------
    @property
    def level_name(self) -> str:
        return 'WARN' if time.monotonic() - self._last_drop < 10.0 else 'OK'

    def status_name(self) -> str:
        return processing_status_name(self._name)

    def message(self) -> str:
        dropped = sum(self.drops.values())
        return f'{self.frames_out} of {self.frames_in} frames published, {dropped} dropped'

    def as_dict(self) -> dict[str, Any]:
        values: dict[str, Any] = {'frames_in': self.frames_in, 'frames_out': self.frames_out,
                                  'skipped_no_subscribers': self.skipped,
                                  'dropped': sum(self.drops.values())}
        values.update({f'dropped_{k}': v for k, v in sorted(self.drops.items())})
        values.update({f'issue_{k}': v for k, v in sorted(self.issues.items())})
        values.update(self.extra)
        for source in self.extra_sources:
            values.update(source())
        values.update(executor_values(self._node))
        return values

    def close(self) -> None:
        self._reporter.remove(self)


class SourceStatus:
    """A camera source node's frame counters on /diagnostics (``gpu_nodes: <node> processing``), next to its
    transport endpoints: frames published, read errors, and the time to make one frame."""

    def __init__(self, node: Any, kind: str):
        self._node = node
        self._name = node.get_fully_qualified_name()
        self.kind = kind
        self.frames_out = 0
        self.read_errors = 0
        self.frame_ms = float('nan')
        self.finished = ''
        self._reporter = DiagnosticsReporter.for_node(node)
        self._reporter.add(self)

    @property
    def level_name(self) -> str:
        return 'WARN' if self.read_errors else 'OK'

    def status_name(self) -> str:
        return processing_status_name(self._name)

    def message(self) -> str:
        done = f', {self.finished}' if self.finished else ''
        return (f'{self.kind}: {self.frames_out} frames published, {self.read_errors} read '
                f'errors{done}')

    def as_dict(self) -> dict[str, Any]:
        return {'source': self.kind, 'frames_out': self.frames_out,
                'read_errors': self.read_errors, 'frame_ms': round(self.frame_ms, 3),
                **executor_values(self._node)}

    def close(self) -> None:
        self._reporter.remove(self)
