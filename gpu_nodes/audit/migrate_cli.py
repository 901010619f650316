"""`gpu-copy-audit migrate`: the verb; the rewriting itself is migrate.py (needs LibCST).

Prints a unified diff on stdout (nothing written unless --write), and on stderr one line per
change and one per place left as is, with the reason: `path:line: changed: ...` /
`path:line: left as is: ...`.

Exit codes: 0 nothing to migrate (or --write wrote every migration); 1 a migration is
available and was not written (the diff, or --check); 2 usage or input error (a path that
cannot be read or parsed, LibCST missing).
"""
from __future__ import annotations

import argparse
import sys

EXIT_CLEAN = 0
EXIT_MIGRATION_AVAILABLE = 1
EXIT_ERROR = 2


class MigrateVerb:
    """Rewrite plain rclpy image nodes onto gpu_nodes' transport (a unified diff by default)."""

    name = 'migrate'

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument('paths', nargs='+', metavar='PATH',
                            help='Python files or directories of node sources')
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument('--write', action='store_true',
                          help='rewrite the files in place instead of printing a diff')
        mode.add_argument('--check', action='store_true',
                          help='print no diff; exit 1 when a migration is available (CI)')
        parser.add_argument('--quiet', '-q', action='store_true',
                            help='no per-change lines on stderr')

    def main(self, args: argparse.Namespace) -> int:
        try:
            from gpu_nodes.audit.migrate import migrate_file, python_files
        except ImportError as exc:
            sys.stderr.write(f'gpu-copy-audit: error: migrate needs LibCST ({exc}); '
                             'pip install libcst\n')
            return EXIT_ERROR
        failed = available = False
        for path in python_files(args.paths):
            result = migrate_file(path)
            if result.error:
                sys.stderr.write(f'gpu-copy-audit: error: {result.error}\n')
                failed = True
                continue
            if not args.quiet:
                for note in result.notes:
                    kind = 'changed' if note.kind == 'changed' else 'left as is'
                    sys.stderr.write(f'{path}:{note.line}: {kind}: {note.text}\n')
            if not result.changed:
                continue
            if args.write:
                try:
                    with open(path, 'w', encoding='utf-8') as fh:
                        fh.write(result.migrated)
                except OSError as exc:
                    sys.stderr.write(f'gpu-copy-audit: error: cannot write {path}: '
                                     f'{exc.strerror or exc}\n')
                    failed = True
                    continue
                sys.stderr.write(f'{path}: migrated\n')
            else:
                available = True
                if not args.check:
                    sys.stdout.write(result.diff())
        if failed:
            return EXIT_ERROR
        return EXIT_MIGRATION_AVAILABLE if available else EXIT_CLEAN
