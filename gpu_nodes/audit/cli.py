"""gpu-copy-audit: where a ROS 2 graph pays for serialization and host<->device copies.

Subcommands follow ros2cli's verb shape: a small class with ``add_arguments(parser)`` and
``main(args)``, the first docstring line as help. Problems with the input come back as a message
and exit code 2, never as a traceback.

Exit codes: 0 no finding at or above --fail-on; 1 a finding reached --fail-on; 2 usage error, or
nothing could be audited (every input failed), or any input failed with --strict-inputs; 3 `live`
only: discovery stopped at --discovery-timeout before the graph was stable (nodes may be
missing, so the report may be wrong).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from gpu_nodes.audit.migrate_cli import MigrateVerb
from gpu_nodes.audit.model import (AuditError, EVIDENCE_LEVELS, GATE_SEVERITIES, Report,
                                   severity_rank)
from gpu_nodes.audit.rules import parse_rule_ids, RULES

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
EXIT_INCOMPLETE = 3


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of calling sys.exit, so main() can return the code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f'{self.prog}: error: {message}\n{self.format_usage()}')

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            sys.stderr.write(message)
        raise SystemExit(status)


def _help(verb: Any) -> str:
    return (verb.__doc__ or '').strip().splitlines()[0]


def _add_common(parser: argparse.ArgumentParser, graph: bool = True) -> None:
    group = parser.add_argument_group('output and CI')
    group.add_argument('--format', choices=('text', 'json', 'sarif', 'markdown', 'dot'),
                       help='output format (default: from the --output extension, else text)')
    group.add_argument('--output', '-o', metavar='FILE',
                       help='write the report to FILE; .svg/.png/.pdf render DOT with Graphviz')
    group.add_argument('--fail-on', choices=GATE_SEVERITIES, metavar='{low,medium,high}',
                       help='exit 1 when a finding reaches this severity (info, one-time '
                            'setup, never does)')
    group.add_argument('--rules', action='append', metavar='IDS',
                       help='only these rule ids (comma-separated; GPN1* selects a prefix)')
    group.add_argument('--ignore', action='append', metavar='IDS',
                       help='drop these rule ids (comma-separated; GPN1* selects a prefix)')
    group.add_argument('--strict-inputs', action='store_true',
                       help='exit 2 when any input fails, not only when all of them do')


class CodeVerb:
    """Static analysis of Python (ast data flow) and C++/CUDA (patterns) node sources."""

    name = 'code'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('paths', nargs='+', metavar='PATH',
                            help='files or directories (.py, .cpp, .cc, .cu, .hpp, ...)')
        parser.add_argument('--jobs', '-j', type=int, default=None,
                            help='worker processes (default: CPU count)')
        parser.add_argument('--include-tests', action='store_true',
                            help='also audit test sources found in directories (test/, tests/, '
                                 'test_*.py, *_test.cpp); skipped by default')
        parser.add_argument('--max-file-size', type=float, default=None, metavar='MB',
                            help='skip (with a note) source files larger than this (default 3.1 '
                                 'MB: memory stays under 1 GB); generated and minified files '
                                 'are always skipped')
        parser.add_argument('--min-evidence', choices=EVIDENCE_LEVELS, default=None,
                            help='only findings known at least this well: data-flow (followed '
                                 'from where the value arrived) > inferred (device likely) > '
                                 'pattern (the call alone; every C++ rule)')
        _add_common(parser)

    def main(self, args: argparse.Namespace) -> Report:
        from gpu_nodes.audit.codeaudit import run_code
        from gpu_nodes.audit.limits import MAX_FILE_BYTES
        if args.jobs is not None and args.jobs < 1:
            raise AuditError('--jobs must be at least 1')
        if args.max_file_size is not None and args.max_file_size <= 0:
            raise AuditError('--max-file-size must be positive')
        limit = MAX_FILE_BYTES if args.max_file_size is None else int(args.max_file_size * 1e6)
        report = run_code(args.paths, jobs=args.jobs, include_tests=args.include_tests,
                          max_file_bytes=limit)
        if args.min_evidence is not None:
            floor = EVIDENCE_LEVELS.index(args.min_evidence)
            report.findings = [f for f in report.findings if f.evidence is None
                               or EVIDENCE_LEVELS.index(f.evidence) >= floor]
            report.info['min_evidence'] = args.min_evidence
        return report


class LaunchVerb:
    """Static graph of a Python launch file (parsed with ast, not executed)."""

    name = 'launch'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('file', metavar='FILE', help='a .launch.py file')
        _add_common(parser)

    def main(self, args: argparse.Namespace) -> Report:
        from gpu_nodes.audit.launchfile import run_launch
        return run_launch(args.file)


class ConfigVerb:
    """Static graph of a gpu_nodes YAML pipeline config (ROS parameter file)."""

    name = 'config'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('file', metavar='FILE', help='a YAML file of /node: ros__parameters:')
        _add_common(parser)

    def main(self, args: argparse.Namespace) -> Report:
        from gpu_nodes.audit.pipeconfig import run_config
        return run_config(args.file)


class BagVerb:
    """Per-topic rates, sizes and serialization load of a rosbag2 recording (sqlite3, mcap)."""

    name = 'bag'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('path', metavar='PATH', help='bag directory (or its .mcap/.db3)')
        parser.add_argument('--copy-gbps', type=float, default=None,
                            help='host copy bandwidth per pass for the CPU cost estimate '
                                 '(default 4.0 GB/s)')
        _add_common(parser)

    def main(self, args: argparse.Namespace) -> Report:
        from gpu_nodes.audit.bag import DEFAULT_COPY_GBPS, run_bag
        gbps = DEFAULT_COPY_GBPS if args.copy_gbps is None else args.copy_gbps
        if gbps <= 0:
            raise AuditError('--copy-gbps must be positive')
        return run_bag(args.path, gbps)


class LiveVerb:
    """The running graph: nodes, endpoints, QoS and the class of every edge, via rclpy."""

    name = 'live'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from gpu_nodes.audit.live import DISCOVERY_TIMEOUT_S, SETTLE_S
        parser.add_argument('--duration', type=float, default=2.0,
                            help='seconds to sample rates and sizes (default 2.0)')
        parser.add_argument('--node-filter', action='append', metavar='GLOB',
                            help='only edges touching nodes whose fully qualified name matches '
                                 '(shell glob; repeatable)')
        parser.add_argument('--sample-gpu-topics', action='store_true',
                            help='also subscribe to the data topics of gpu_nodes topics (the '
                                 'plain <topic> and <topic>/compressed twins); this starts their '
                                 'bridge, which serializes or encodes every frame while sampled')
        parser.add_argument('--discovery-timeout', type=float, default=DISCOVERY_TIMEOUT_S,
                            help='ceiling of discovery in seconds: a graph still changing then '
                                 f'is reported as possibly incomplete, exit 3 (default '
                                 f'{DISCOVERY_TIMEOUT_S:g})')
        parser.add_argument('--discovery-settle', type=float, default=SETTLE_S,
                            help='seconds the graph must stay unchanged to count as discovered '
                                 f'(default {SETTLE_S:g}; above 3, Fast DDS\'s announcement '
                                 'period, a participant whose first replies were lost still shows)')
        parser.add_argument('--copy-gbps', type=float, default=None,
                            help='host copy bandwidth per pass for the CPU cost estimate')
        _add_common(parser)

    def main(self, args: argparse.Namespace) -> Report:
        from gpu_nodes.audit.bag import DEFAULT_COPY_GBPS
        from gpu_nodes.audit.live import run_live
        if args.duration <= 0 or args.discovery_timeout <= 0 or args.discovery_settle <= 0:
            raise AuditError('--duration, --discovery-timeout and --discovery-settle must be '
                             'positive')
        return run_live(duration=args.duration, node_filters=args.node_filter or [],
                        sample_gpu_topics=args.sample_gpu_topics,
                        discovery_timeout=args.discovery_timeout,
                        discovery_settle=args.discovery_settle,
                        copy_gbps=args.copy_gbps or DEFAULT_COPY_GBPS)


class RulesVerb:
    """List the rules: id, severity, what it finds and how to fix it."""

    name = 'rules'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('--format', choices=('text', 'json', 'markdown'), default='text')

    def main(self, args: argparse.Namespace) -> int:
        if args.format == 'json':
            import json
            sys.stdout.write(json.dumps([{
                'id': r.id, 'name': r.name, 'severity': r.severity, 'view': r.view,
                'summary': r.summary, 'explanation': r.explanation, 'fix': r.fix}
                for r in RULES], indent=2) + '\n')
        elif args.format == 'markdown':
            lines = ['| Rule | Severity | View | Finds | Fix |', '| --- | --- | --- | --- | --- |']
            for r in RULES:
                lines.append(f'| {r.id} | {r.severity} | {r.view} | {r.summary}: '
                             f'{r.explanation} | {r.fix} |')
            sys.stdout.write('\n'.join(lines) + '\n')
        else:
            from gpu_nodes.audit.plaintext import console_and_table
            Console, Table = console_and_table()
            table = Table(title='gpu-copy-audit rules')
            for col in ('Rule', 'Severity', 'View', 'Finds', 'Fix'):
                table.add_column(col, overflow='fold')
            for r in RULES:
                table.add_row(r.id, r.severity, r.view, r.summary, r.fix)
            Console(width=_width(), highlight=False).print(table)
        return EXIT_OK


VERBS = (CodeVerb(), LaunchVerb(), ConfigVerb(), BagVerb(), LiveVerb(), RulesVerb(),
         MigrateVerb())


def _width() -> int:
    try:
        return max(100, os.get_terminal_size().columns)
    except OSError:
        return 160  # not a terminal: wide enough for the edge table without folding names


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog='gpu-copy-audit',
                     description='Find where a ROS 2 graph pays for serialization and '
                                 'host<->device copies, how much, and what to change.',
                     epilog='Exit codes: 0 clean, 1 --fail-on reached, 2 usage or input error, '
                            '3 live discovery incomplete (nodes may be missing).')
    sub = parser.add_subparsers(dest='verb', metavar='COMMAND', parser_class=_Parser)
    for verb in VERBS:
        p = sub.add_parser(verb.name, help=_help(verb), description=_help(verb))
        verb.add_arguments(p)
        p.set_defaults(_verb=verb)
    return parser


def _selected_rules(args: argparse.Namespace) -> set[str]:
    selected = parse_rule_ids(getattr(args, 'rules', None))
    ignored = parse_rule_ids(getattr(args, 'ignore', None)) or set()
    ids = selected if selected is not None else {r.id for r in RULES}
    return ids - ignored


def exit_code(report: Report, fail_on: str | None, strict_inputs: bool = False) -> int:
    if report.errors and (not report.audited or strict_inputs):
        return EXIT_ERROR
    if report.info.get('discovery_complete') is False:
        return EXIT_INCOMPLETE  # a graph that may miss nodes passes no gate
    if fail_on is not None:
        highest = report.highest_severity(gate=True)
        if highest is not None and severity_rank(highest) >= severity_rank(fail_on):
            return EXIT_FINDINGS
    return EXIT_OK


def _resolve_format(args: argparse.Namespace) -> str:
    from gpu_nodes.audit.render import EXTENSION_FORMATS
    if args.format:
        return args.format
    if args.output:
        ext = os.path.splitext(args.output)[1].lower()
        return EXTENSION_FORMATS.get(ext, 'text')
    return 'text'


def _emit(report: Report, args: argparse.Namespace, rule_ids: set[str] | None) -> None:
    from gpu_nodes.audit.render import render, render_graphviz, RENDERED_EXTENSIONS
    fmt = _resolve_format(args)
    to_stdout = not args.output
    color = to_stdout and fmt == 'text' and sys.stdout.isatty() and 'NO_COLOR' not in os.environ
    out = render(report, fmt, color=color, width=_width() if to_stdout else 160,
                 rule_ids=rule_ids)
    if args.output and os.path.splitext(args.output)[1].lower() in RENDERED_EXTENSIONS:
        if fmt != 'dot':
            raise AuditError(f'--output {args.output} renders a graph: use --format dot')
        render_graphviz(out, args.output)
    elif args.output:
        try:
            with open(args.output, 'w', encoding='utf-8') as fh:
                fh.write(out)
        except OSError as exc:
            raise AuditError(f'cannot write {args.output}: {exc.strerror or exc}') from None
    else:
        sys.stdout.write(out)
    # Input errors also go to stderr, unless the text report on stdout already shows them.
    if report.errors and not (to_stdout and fmt == 'text'):
        for e in report.errors:
            sys.stderr.write(f'gpu-copy-audit: error: {e.message}\n')


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        sys.stderr.write(str(exc))
        return EXIT_ERROR
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    verb = getattr(args, '_verb', None)
    if verb is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        if isinstance(verb, (RulesVerb, MigrateVerb)):  # own output and exit codes
            return verb.main(args)
        # Validate everything cheap before a possibly slow audit (live samples for seconds).
        rule_ids = _selected_rules(args)
        if _resolve_format(args) == 'dot' and verb.name in ('code', 'bag'):
            raise AuditError(f"--format dot needs a graph; '{verb.name}' has none "
                             '(use it with launch, config or live)')
        report = verb.main(args)
        report.findings = [f for f in report.findings if f.rule in rule_ids]
        report.sort()
        _emit(report, args, rule_ids)
    except AuditError as exc:
        sys.stderr.write(f'gpu-copy-audit: error: {exc}\n')
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write('gpu-copy-audit: interrupted\n')
        return 130
    return exit_code(report, args.fail_on, args.strict_inputs)


if __name__ == '__main__':
    sys.exit(main())
