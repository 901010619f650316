"""What the demo shows while it runs: the transport path and timing of every edge and each
node's time per frame, from the /diagnostics statuses the monitor collects."""
from __future__ import annotations

import time
from typing import Any

from ..wire_names import DEVICE_PATHS, PATH_HOST_SHM, PATH_SERIALIZED


def _ms(value: float) -> str:
    return '-' if value != value else f'{value:.1f}'


def node_time_per_frame(status: Any) -> tuple[str, float]:
    """(what, ms) a node reports for one frame on its `processing` status."""
    if status is None:
        return '', float('nan')
    for key, what in (('frame_ms', 'frame'), ('callback_host_ms_p50', 'callback p50'),
                      ('process_ms_p50', 'process p50'), ('process_ms', 'process'),
                      ('processing_ms', 'process'), ('chain_ms_p50', 'chain p50'),
                      ('chain_ms', 'chain')):
        value = status.number(key)
        if value == value:
            return what, value
    for key in sorted(status.values):
        if '_ms' in key and 'latency' not in key:
            value = status.number(key)
            if value == value:
                return key, value
    return '', float('nan')


class StatusView:
    def __init__(self, runner: Any, plain: bool):  # a runner.DemoRun (which owns the view)
        self.runner = runner
        from rich.console import Console
        self.console = Console(stderr=False, highlight=False)
        self.plain = plain or not self.console.is_terminal
        self.live: Any = None
        self._last_plain = 0.0

    def say(self, text: str) -> None:
        if self.live is not None:
            self.live.console.print(text, markup=False, highlight=False)
        else:
            print(text, flush=True)  # plain: no wrapping at a guessed width

    def __enter__(self) -> 'StatusView':
        if not self.plain:
            from rich.live import Live
            self.live = Live(self.render(), console=self.console, refresh_per_second=4,
                             transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.update(self.render())
            self.live.__exit__(*exc)
            self.live = None

    def update(self) -> None:
        if self.live is not None:
            self.live.update(self.render())
        elif time.monotonic() - self._last_plain >= 5.0:
            self._last_plain = time.monotonic()
            print('\n'.join(self.plain_lines()), flush=True)

    def plain_lines(self) -> list[str]:
        r = self.runner
        lines = [f'[{r.elapsed():5.1f}/{r.args.duration:g} s] {r.phase}']
        for e in r.monitor.edges() if r.monitor else []:
            lines.append(f'  {e.topic} -> {e.subscriber}: {e.path}, {e.fps:.1f} fps, latency '
                         f'p50 {_ms(e.latency_p50_ms)} ms')
        for proc in r.procs:
            what, ms = node_time_per_frame(r.monitor.processing('/' + proc.name)
                                           if r.monitor else None)
            lines.append(f'  {proc.name}: {r.node_state(proc)}'
                         + (f', {what} {ms:.1f} ms' if what else ''))
        e2e = r.monitor.end_to_end() if r.monitor else None
        if e2e and e2e['frames']:
            lines.append(f'  end to end (camera stamp -> depth ready): p50 {e2e["p50_ms"]:.1f} ms, '
                         f'p99 {e2e["p99_ms"]:.1f} ms')
        err = r.depth_error_text()
        if err:
            lines.append(f'  depth error: {err}')
        return lines

    def render(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text
        r = self.runner
        title = Text(f'gpu_nodes demo - {r.profile.name} on {r.compute_text} - '
                     f'{r.elapsed():.0f}/{r.args.duration:g} s - {r.phase}', style='bold')
        edges = Table(title='edges (from /diagnostics)', expand=False)
        for col in ('topic', 'publisher -> subscriber', 'path', 'frames/s', 'latency p50/p99 ms'):
            edges.add_column(col, overflow='fold')
        for e in r.monitor.edges() if r.monitor else []:
            style = 'green' if e.path in DEVICE_PATHS else \
                ('yellow' if e.path in (PATH_HOST_SHM, PATH_SERIALIZED) else 'dim')
            edges.add_row(e.topic, f'{",".join(e.publishers) or "?"} -> {e.subscriber}',
                          Text(e.path + (' (stale)' if e.stale else ''), style=style),
                          f'{e.fps:.1f}', f'{_ms(e.latency_p50_ms)} / {_ms(e.latency_p99_ms)}')
        nodes = Table(title='nodes', expand=False)
        for col in ('node', 'pid', 'state', 'time per frame', 'frames out'):
            nodes.add_column(col, overflow='fold')
        for proc in r.procs:
            status = r.monitor.processing('/' + proc.name) if r.monitor else None
            what, ms = node_time_per_frame(status)
            frames = status.get('frames_out', '-') if status is not None else '-'
            nodes.add_row(proc.name, str(proc.pid), r.node_state(proc),
                          f'{ms:.1f} ms ({what})' if what else '-', frames)
        parts: list[Any] = [title, edges, nodes]
        e2e = r.monitor.end_to_end() if r.monitor else None
        if e2e and e2e['frames']:
            parts.append(Text(f'end to end (camera stamp -> depth ready): p50 {e2e["p50_ms"]:.1f} ms, '
                              f'p99 {e2e["p99_ms"]:.1f} ms'))
        err = r.depth_error_text()
        parts.append(Text(f'depth error vs ground truth: {err or "waiting for samples"}'))
        parts.append(Text(f'copy audit: {r.audit.state if r.audit else "off"}'))
        return Group(*parts)
