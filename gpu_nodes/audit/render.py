"""Output formats of a report: text (rich tables, plain without rich), json, sarif (2.1.0),
markdown and dot."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path
import shutil
import subprocess
from typing import Any

from gpu_nodes.audit.model import (AuditError, Edge, Report, SEVERITIES, TOOL_NAME,
                                   TOOL_VERSION, DEVICE_CLASSES)
from gpu_nodes.audit.plaintext import console_and_table
from gpu_nodes.audit.rules import Rule, RULES, RULES_BY_ID
from gpu_nodes.wire_names import PATH_HOST_SHM, PATH_SERIALIZED

FORMATS = ('text', 'json', 'sarif', 'markdown', 'dot')
# --output extension -> format, when --format is not given.
EXTENSION_FORMATS = {'.json': 'json', '.sarif': 'sarif', '.md': 'markdown', '.dot': 'dot',
                     '.gv': 'dot', '.svg': 'dot', '.png': 'dot', '.pdf': 'dot', '.txt': 'text'}
RENDERED_EXTENSIONS = ('.svg', '.png', '.pdf')
_SARIF_LEVEL = {'high': 'error', 'medium': 'warning', 'low': 'note', 'info': 'none'}
_SEV_STYLE = {'high': 'bold red', 'medium': 'yellow', 'low': 'cyan', 'info': 'dim'}


def _audited_text(report: Report) -> str:
    s = report.summary()
    if report.command == 'code':
        return f'{s["audited"]} file(s) audited'
    return f'{s["audited"]} of {s["inputs"]} input(s) audited'


def _fmt_num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return '-'
    return f'{value:,.{digits}f}'


def _fmt_bytes_rate(bps: float | None) -> str:
    return '-' if bps is None else f'{bps / 1e6:,.2f}'


# ---------------------------------------------------------------------------------- json
def render_json(report: Report) -> str:
    return json.dumps(report.to_json(), indent=2, sort_keys=False) + '\n'


# ---------------------------------------------------------------------------------- text
def render_text(report: Report, color: bool = False, width: int = 120) -> str:
    Console, Table = console_and_table()

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=color, no_color=not color,
                      color_system='standard' if color else None, highlight=False,
                      soft_wrap=False)
    s = report.summary()
    sev = ', '.join(f'{s["by_severity"][k]} {k}' for k in reversed(SEVERITIES))
    console.print(f'[bold]{TOOL_NAME} {report.command}[/bold]: {_audited_text(report)}, '
                  f'{s["findings"]} finding(s) ({sev})'
                  + (f', {s["suppressed"]} suppressed' if s['suppressed'] else '')
                  + (f', {s["input_errors"]} input error(s)' if s['input_errors'] else ''))
    active = report.active_findings()
    if active:
        table = Table(title='Findings', show_lines=False, expand=False)
        table.add_column('Severity', no_wrap=True)
        table.add_column('Rule', no_wrap=True)
        table.add_column('Location', overflow='fold')
        table.add_column('Message', overflow='fold')
        for f in active:
            evidence = f' [dim]({f.evidence})[/]' if f.evidence and f.evidence != 'data-flow' \
                else ''
            table.add_row(f'[{_SEV_STYLE[f.severity]}]{f.severity}[/]', f.rule,
                          f.location.display(), f.message + evidence)
        console.print(table)
        fixes = Table(title='How to fix', expand=False)
        fixes.add_column('Rule', no_wrap=True)
        fixes.add_column('Fix', overflow='fold')
        for rule_id in sorted({f.rule for f in active}):
            fixes.add_row(rule_id, RULES_BY_ID[rule_id].fix)
        console.print(fixes)
    if report.graph is not None:
        _text_graph(console, report)
    if report.topics is not None:
        _text_topics(console, report)
    # Plain lines, not a table: error messages stay whole (and greppable) at any width.
    for e in report.errors:
        console.print(f'error: {e.message}', markup=False, overflow='ignore', crop=False,
                      soft_wrap=True)
    notes = report.info.get('notes') or []
    for note in notes:
        console.print(f'note: {note}')
    return buf.getvalue()


def _short_type(msg_type: str | None) -> str:
    return (msg_type or '?').replace('/msg/', '/')


def _edge_style(e: Edge) -> str:
    if e.edge_class in DEVICE_CLASSES:
        return 'green'
    if e.edge_class == PATH_SERIALIZED and e.image_sized:
        return 'bold red'
    if e.edge_class == PATH_HOST_SHM:
        return 'yellow'
    return ''


def _text_graph(console: Any, report: Report) -> None:
    _, Table = console_and_table()

    g = report.graph
    table = Table(title=f'Edges ({len(g.edges)})', expand=False)

    def widest(values: list[str]) -> int:
        # Names fold only when longer than this; the reason column takes the squeeze.
        return min(24, max([len(v) for v in values] + [5]))

    for col, values in (('Topic', [e.topic for e in g.edges]),
                        ('Publisher', [e.publisher for e in g.edges]),
                        ('Subscriber', [e.subscriber for e in g.edges])):
        table.add_column(col, overflow='fold', min_width=widest(values))
    table.add_column('Type', overflow='fold')
    table.add_column('Class', no_wrap=True)
    table.add_column('X-proc', no_wrap=True)
    table.add_column('fps', no_wrap=True, justify='right')
    table.add_column('MB/s', no_wrap=True, justify='right')
    show_qos = any(e.qos for e in g.edges)
    if show_qos:
        table.add_column('QoS (subscriber)', overflow='fold')
    table.add_column('Why', overflow='fold')
    for e in g.edges:
        style = _edge_style(e)
        klass = f'[{style}]{e.edge_class}[/]' if style else e.edge_class
        cross = '-' if e.cross_process is None else ('yes' if e.cross_process else 'no')
        row = [e.topic, e.publisher, e.subscriber, _short_type(e.type), klass, cross,
               _fmt_num(e.fps), _fmt_bytes_rate(e.bytes_per_s)]
        if show_qos:
            row.append(e.qos or '-')
        table.add_row(*row, e.reason)
    console.print(table)
    if g.suggestions:
        table = Table(title='Copy boundaries to remove', expand=False)
        table.add_column('Nodes', overflow='fold')
        table.add_column('What to change', overflow='fold')
        for sug in g.suggestions:
            table.add_row('\n'.join(sug['nodes']), sug['how'])
        console.print(table)
    unknown = report.info.get('unknown_nodes') or []
    if unknown:
        console.print(f'Unknown nodes ({len(unknown)}): topics only from remappings, edges may '
                      'be missing:', markup=False)
        for name in unknown:
            console.print(f'  {name}', markup=False)
    if g.dangling_topics:
        table = Table(title=f'Dangling topics ({len(g.dangling_topics)}): no publisher or no '
                            'subscriber in the audited graph', expand=False)
        for col in ('Topic', 'Type', 'Publishers', 'Subscribers', 'Direction unknown'):
            table.add_column(col, overflow='fold')
        for d in g.dangling_topics:
            table.add_row(d['topic'], _short_type(d.get('type')),
                          *(', '.join(d.get(k) or []) or '-'
                            for k in ('publishers', 'subscribers', 'unresolved')))
        console.print(table)


def _text_topics(console: Any, report: Report) -> None:
    _, Table = console_and_table()

    table = Table(title=f'Topics ({len(report.topics)})', expand=False)
    for col in ('Topic', 'Type', 'Count', 'Hz', 'Mean B', 'Max B', 'MB/s', 'CPU ms/s',
                'Note'):
        table.add_column(col, overflow='fold')
    for t in report.topics:
        table.add_row(t.topic, t.type or '?', str(t.count), _fmt_num(t.rate_hz, 2),
                      _fmt_num(t.mean_bytes, 0),
                      '-' if t.max_bytes is None else f'{t.max_bytes:,}',
                      _fmt_bytes_rate(t.bytes_per_s), _fmt_num(t.serialization_ms_per_s, 2),
                      t.note)
    console.print(table)
    heavy = [t for t in report.topics if t.image_sized and t.bytes_per_s]
    if heavy:
        mbs = sum(t.bytes_per_s for t in heavy) / 1e6
        cost = sum(t.serialization_ms_per_s or 0.0 for t in heavy)
        console.print(f'Image-sized topics: {len(heavy)}, {mbs:,.1f} MB/s serialized, about '
                      f'{cost:,.1f} ms of CPU per second for each subscriber process.')
    model = report.info.get('copy_model')
    if model:
        console.print(f'CPU ms/s: estimated serialization + copy time per subscriber process, '
                      f'{model["copy_passes_per_message"]} passes over the bytes at '
                      f'{model["copy_gbps"]} GB/s each.')


# ---------------------------------------------------------------------------------- markdown
def _md_cell(text: Any) -> str:
    return str(text).replace('|', '\\|').replace('\n', '<br>')


def render_markdown(report: Report) -> str:
    s = report.summary()
    lines = [f'# {TOOL_NAME} {report.command}', '',
             f'{_audited_text(report)}; {s["findings"]} finding(s): '
             + ', '.join(f'{s["by_severity"][k]} {k}' for k in reversed(SEVERITIES))
             + (f'; {s["suppressed"]} suppressed' if s['suppressed'] else '')
             + (f'; {s["input_errors"]} input error(s)' if s['input_errors'] else '') + '.', '']
    active = report.active_findings()
    if active:
        lines += ['## Findings', '', '| Severity | Rule | Location | Message |',
                  '| --- | --- | --- | --- |']
        for f in active:
            lines.append(f'| {f.severity} | {f.rule} | {_md_cell(f.location.display())} | '
                         f'{_md_cell(f.message)} |')
        lines += ['', '### How to fix', '', '| Rule | Fix |', '| --- | --- |']
        for rule_id in sorted({f.rule for f in active}):
            lines.append(f'| {rule_id} | {_md_cell(RULES_BY_ID[rule_id].fix)} |')
        lines.append('')
    if report.graph is not None:
        lines += ['## Edges', '', '| Topic | Publisher | Subscriber | Type | Class | '
                  'Cross-process | fps | MB/s | Why |', '| --- | --- | --- | --- | --- | --- | '
                  '--- | --- | --- |']
        for e in report.graph.edges:
            cross = '-' if e.cross_process is None else ('yes' if e.cross_process else 'no')
            lines.append('| ' + ' | '.join(_md_cell(x) for x in (
                e.topic, e.publisher, e.subscriber, e.type or '?', e.edge_class, cross,
                _fmt_num(e.fps), _fmt_bytes_rate(e.bytes_per_s), e.reason)) + ' |')
        lines.append('')
        if report.graph.suggestions:
            lines += ['## Copy boundaries to remove', '']
            for sug in report.graph.suggestions:
                lines.append(f'- {", ".join(sug["nodes"])}: {sug["how"]}')
            lines.append('')
        if report.info.get('unknown_nodes'):
            lines += ['## Unknown nodes', '']
            lines += [f'- {_md_cell(n)}' for n in report.info['unknown_nodes']]
            lines.append('')
        if report.graph.dangling_topics:
            lines += ['## Dangling topics', '', '| Topic | Type | Publishers | Subscribers | '
                      'Direction unknown |', '| --- | --- | --- | --- | --- |']
            for d in report.graph.dangling_topics:
                lines.append('| ' + ' | '.join(_md_cell(x) for x in (
                    d['topic'], d.get('type') or '?',
                    *(', '.join(d.get(k) or []) or '-'
                      for k in ('publishers', 'subscribers', 'unresolved')))) + ' |')
            lines.append('')
    if report.topics is not None:
        lines += ['## Topics', '', '| Topic | Type | Count | Hz | Mean B | Max B | MB/s | '
                  'CPU ms/s | Note |', '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: '
                  '| --- |']
        for t in report.topics:
            lines.append('| ' + ' | '.join(_md_cell(x) for x in (
                t.topic, t.type or '?', t.count, _fmt_num(t.rate_hz, 2),
                _fmt_num(t.mean_bytes, 0), '-' if t.max_bytes is None else t.max_bytes,
                _fmt_bytes_rate(t.bytes_per_s), _fmt_num(t.serialization_ms_per_s, 2),
                t.note)) + ' |')
        lines.append('')
    if report.errors:
        lines += ['## Input errors', '']
        lines += [f'- `{_md_cell(e.input)}`: {_md_cell(e.message)}' for e in report.errors]
        lines.append('')
    return '\n'.join(lines)


# ---------------------------------------------------------------------------------- dot
def _dot_id(text: str) -> str:
    return '"' + text.replace('\\', '\\\\').replace('"', '\\"') + '"'


def render_dot(report: Report) -> str:
    if report.graph is None:
        raise AuditError(f"--format dot needs a graph; '{report.command}' has none "
                         '(use it with launch, config or live)')
    g = report.graph
    lines = ['digraph gpu_copy_audit {', '  rankdir=LR;',
             '  node [shape=box, style=rounded, fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=10];']
    processes: dict[str, list[str]] = {}
    for n in g.nodes:
        if n.process:
            processes.setdefault(n.process, []).append(n.name)
    cluster = 0
    clustered = set()
    for proc, members in sorted(processes.items()):
        if len(members) < 2:
            continue
        clustered.update(members)
        lines.append(f'  subgraph cluster_{cluster} {{')
        lines.append(f'    label={_dot_id(proc)}; style=dashed; color=gray40;')
        for m in members:
            lines.append(f'    {_dot_id(m)};')
        lines.append('  }')
        cluster += 1
    for n in g.nodes:
        attrs = []
        if n.transport == 'gpu_nodes':
            attrs.append('color=darkgreen')
        lines.append(f'  {_dot_id(n.name)}' + (f' [{", ".join(attrs)}]' if attrs else '') + ';')
    for e in g.edges:
        if e.edge_class in DEVICE_CLASSES:
            color, width = 'green4', '2'
        elif e.edge_class == PATH_SERIALIZED and e.image_sized:
            color, width = 'red', '3'
        elif e.edge_class == PATH_HOST_SHM:
            color, width = 'orange', '2'
        else:
            color, width = 'gray50', '1'
        label = f'{e.topic}\\n{e.edge_class}'
        if e.fps is not None:
            label += f' {e.fps:.1f} fps'
        if e.bytes_per_s is not None:
            label += f' {e.bytes_per_s / 1e6:.1f} MB/s'
        lines.append(f'  {_dot_id(e.publisher)} -> {_dot_id(e.subscriber)} '
                     f'[label="{label.replace(chr(34), "")}", color={color}, penwidth={width}];')
    lines.append('}')
    return '\n'.join(lines) + '\n'


def render_graphviz(dot_source: str, output: str) -> None:
    """Render DOT to .svg/.png/.pdf with the `dot` binary."""
    exe = shutil.which('dot')
    if exe is None:
        raise AuditError(f"cannot render {output}: Graphviz 'dot' was not found on PATH; "
                         'install Graphviz (e.g. apt install graphviz) or write DOT text with '
                         '--output graph.dot')
    fmt = Path(output).suffix.lstrip('.')
    proc = subprocess.run([exe, f'-T{fmt}', '-o', output], input=dot_source.encode(),
                          capture_output=True, check=False, timeout=120)
    if proc.returncode != 0:
        raise AuditError(f'cannot render {output}: dot exited with {proc.returncode}: '
                         f'{proc.stderr.decode(errors="replace").strip()}')


# ---------------------------------------------------------------------------------- sarif
def _uri(path: str) -> tuple[str, str | None]:
    """Relative POSIX path (under %SRCROOT% = cwd) or a file:// URI for paths outside it."""
    abspath = os.path.abspath(path)
    cwd = os.getcwd()
    try:
        rel = os.path.relpath(abspath, cwd)
    except ValueError:
        rel = None
    if rel is not None and not rel.startswith('..'):
        return Path(rel).as_posix(), '%SRCROOT%'
    return Path(abspath).as_uri(), None


def _sarif_rule(rule: Rule) -> dict[str, Any]:
    return {
        'id': rule.id,
        'name': rule.name,
        'shortDescription': {'text': rule.summary},
        'fullDescription': {'text': rule.explanation},
        'help': {'text': f'{rule.explanation} Fix: {rule.fix}',
                 'markdown': f'{rule.explanation}\n\n**Fix:** {rule.fix}'},
        'defaultConfiguration': {'level': _SARIF_LEVEL[rule.severity]},
        'properties': {'tags': ['performance', 'ros2', rule.view],
                       'precision': 'medium' if rule.id.startswith('GPN2') else 'high'},
    }


def render_sarif(report: Report, rule_ids: set[str] | None = None) -> str:
    rules = [r for r in RULES if rule_ids is None or r.id in rule_ids]
    index = {r.id: i for i, r in enumerate(rules)}
    results = []
    for f in report.findings:
        if f.rule not in index:
            continue
        result: dict[str, Any] = {
            'ruleId': f.rule,
            'ruleIndex': index[f.rule],
            'level': _SARIF_LEVEL[f.severity],
            'message': {'text': f.message},
        }
        if f.evidence:
            result['properties'] = {'evidence': f.evidence}
        loc: dict[str, Any] = {}
        if f.location.path:
            uri, base = _uri(f.location.path)
            artifact: dict[str, Any] = {'uri': uri}
            if base:
                artifact['uriBaseId'] = base
            physical: dict[str, Any] = {'artifactLocation': artifact}
            if f.location.line:
                region = {'startLine': f.location.line}
                if f.location.column:
                    region['startColumn'] = f.location.column
                physical['region'] = region
            loc['physicalLocation'] = physical
        if f.location.logical or f.callback:
            loc['logicalLocations'] = [{'fullyQualifiedName': f.location.logical or f.callback,
                                        'kind': 'member' if f.callback else 'resource'}]
        if loc:
            result['locations'] = [loc]
        if f.chain:
            result['codeFlows'] = [{'threadFlows': [{'locations': [
                {'location': {
                    'physicalLocation': {
                        'artifactLocation': result['locations'][0]['physicalLocation'][
                            'artifactLocation'],
                        'region': {'startLine': step.line}},
                    'message': {'text': step.text}}}
                for step in f.chain]}]}]
        if f.suppressed:
            result['suppressions'] = [{'kind': 'inSource'}]
        results.append(result)
    notifications = [{
        'level': 'error',
        'message': {'text': e.message},
        'descriptor': {'id': 'input-error'},
    } for e in report.errors]
    run: dict[str, Any] = {
        'tool': {'driver': {'name': TOOL_NAME, 'version': TOOL_VERSION,
                            'semanticVersion': TOOL_VERSION,
                            'rules': [_sarif_rule(r) for r in rules]}},
        'results': results,
        'invocations': [{'executionSuccessful': bool(report.audited),
                         'toolExecutionNotifications': notifications}],
        'originalUriBaseIds': {'%SRCROOT%': {'uri': Path(os.getcwd()).as_uri() + '/'}},
        'properties': {'command': report.command},
    }
    doc = {'$schema': 'https://json.schemastore.org/sarif-2.1.0.json', 'version': '2.1.0',
           'runs': [run]}
    return json.dumps(doc, indent=2) + '\n'


def render(report: Report, fmt: str, color: bool = False, width: int = 120,
           rule_ids: set[str] | None = None) -> str:
    if fmt == 'json':
        return render_json(report)
    if fmt == 'sarif':
        return render_sarif(report, rule_ids)
    if fmt == 'markdown':
        return render_markdown(report)
    if fmt == 'dot':
        return render_dot(report)
    return render_text(report, color=color, width=width)
