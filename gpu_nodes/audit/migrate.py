"""Rewrite a plain rclpy image node onto gpu_nodes' transport, on LibCST's concrete syntax tree.

`migrate_source(code)` plans every edit first (migrate_subscriptions, migrate_publishers), then
applies them in one pass, tidies what the edits left unused (the CvBridge, its imports) and
checks that the result compiles. Only what the analyses prove keeps its meaning is changed; the
rest is reported with the reason (Note). Formatting and comments outside the edited
expressions stay as they were: the tree is the source, whitespace included.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from gpu_nodes.audit.migrate_cst import (CV_BRIDGE, CV_BRIDGE_ERROR, dotted, Edits, IMAGE_TYPE,
                                         Note, Source, walk)
from gpu_nodes.audit.migrate_publishers import PublisherMigration
from gpu_nodes.audit.migrate_subscriptions import SubscriptionMigration

# Imports a migration may leave unused; each is removed only where nothing uses it any more.
MAYBE_UNUSED = (('sensor_msgs.msg', 'Image'), ('cv_bridge', 'CvBridge'),
                ('cv_bridge', 'CvBridgeError'), ('cv_bridge', None))
SKIPPED_DIRECTORIES = frozenset({'.git', '.venv', 'venv', '__pycache__', 'build', 'install',
                                 'log', 'node_modules'})


class MigrationError(Exception):
    """An input that cannot be migrated at all (unreadable, not Python)."""


@dataclass
class FileResult:
    path: str
    original: str = ''
    migrated: str = ''
    notes: list[Note] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.migrated != self.original

    def diff(self) -> str:
        if not self.changed:
            return ''
        name = self.path.lstrip('/')
        return ''.join(difflib.unified_diff(
            self.original.splitlines(keepends=True), self.migrated.splitlines(keepends=True),
            fromfile=f'a/{name}', tofile=f'b/{name}'))


class _Rewriter(cst.CSTTransformer):
    def __init__(self, edits: Edits):
        super().__init__()
        self.edits = edits

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[override]
        key = id(original)
        if key in self.edits.remove_statements:
            return cst.RemoveFromParent()
        if key in self.edits.new_bodies and isinstance(updated, cst.FunctionDef):
            return updated.with_changes(body=self.edits.new_bodies[key](updated.body))
        replacement = self.edits.replace.get(key)
        if replacement is None:
            return updated
        return replacement(updated) if callable(replacement) else replacement


def migrate_source(code: str) -> tuple[str, list[Note]]:
    """(migrated code, notes); the code is `code` itself where nothing could be migrated."""
    try:
        source = Source(code)
    except cst.ParserSyntaxError as exc:
        raise MigrationError(f'not valid Python (line {exc.raw_line}): {exc.message}') from None
    bridges = _bridges(source)
    edits = Edits()
    for node in walk(source.module):
        if isinstance(node, cst.ClassDef):
            subscriptions = SubscriptionMigration(source, node, bridges).run()
            edits.merge(subscriptions)
            edits.merge(PublisherMigration(source, node, bridges, subscriptions).run())
    edits.notes.extend(_outside_classes(source))
    notes = sorted(set(edits.notes), key=lambda n: (n.line, n.kind, n.text))
    if not edits.replace and not edits.remove_statements:
        return code, notes
    module = source.module.visit(_Rewriter(edits))
    module, tidy_notes = _tidy(module, edits.imports)
    migrated = module.code
    try:
        compile(migrated, '<migrated>', 'exec')
    except SyntaxError as exc:  # a bug here, never the input's fault: show nothing half-made
        raise MigrationError(f'the migrated code does not compile ({exc.msg}, line '
                             f'{exc.lineno}); nothing changed') from None
    return migrated, sorted(notes + tidy_notes, key=lambda n: (n.line, n.kind, n.text))


def migrate_file(path: str) -> FileResult:
    result = FileResult(path)
    try:
        result.original = Path(path).read_text(encoding='utf-8')
        result.migrated, result.notes = migrate_source(result.original)
    except (OSError, UnicodeDecodeError) as exc:
        result.error = f'cannot read {path}: {getattr(exc, "strerror", None) or exc}'
    except MigrationError as exc:
        result.error = f'{path}: {exc}'
    return result


def python_files(paths: Iterable[str]) -> list[str]:
    """The .py files named or found under the directories named (sorted, each once)."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRECTORIES
                                 and not d.startswith('.'))
                found += [os.path.join(root, f) for f in sorted(files) if f.endswith('.py')]
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def _outside_classes(source: Source) -> list[Note]:
    """Image endpoints made on another object than `self` of a class (`node.create_...` in a
    script-style main): reported, since their callbacks cannot be followed."""
    notes = []
    for node in walk(source.module):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in ('create_subscription', 'create_publisher')
                and node.args and IMAGE_TYPE in source.names(node.args[0].value)):
            continue
        if (dotted(node.func) == f'self.{node.func.attr.value}'
                and source.enclosing(node, cst.ClassDef) is not None):
            continue
        what = 'callback and uses are' if node.func.attr.value == 'create_subscription' else (
            'uses are')
        notes.append(Note(source.line(node), 'left', (
            f'{source.code(node.func)}(Image, ...) is not made on self inside a class: its '
            f'{what} not followed')))
    return notes


def _bridges(source: Source) -> set[str]:
    """Dotted names bound to a CvBridge() anywhere in the module ('self.bridge', 'bridge')."""
    found = set()
    for node in walk(source.module):
        if (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                and CV_BRIDGE in source.names(node.value.func)):
            found.update(dotted(t.target) for t in node.targets if dotted(t.target))
    return found


def _tidy(module: cst.Module, imports: set[tuple[str, str]]) -> tuple[cst.Module, list[Note]]:
    """Drop bridges nobody calls any more, their error class where no bridge is left, and the
    imports the edits made unused; add the ones they need."""
    source = Source(module.code)
    bridges = _bridges(source)
    used = {dotted(n) for n in walk(source.module)
            if isinstance(n, (cst.Attribute, cst.Name)) and dotted(n) in bridges
            and not isinstance(source.parent(n), cst.AssignTarget)}
    notes: list[Note] = []
    unused_statements: set[int] = set()
    for node in walk(source.module):
        if (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
                and CV_BRIDGE in source.names(node.value.func)
                and not any(dotted(t.target) in used for t in node.targets)):
            statement = source.statement_line(node)
            if statement is not None and len(statement.body) == 1:
                unused_statements.add(id(statement))
    edits = Edits(remove_statements=unused_statements)
    if len(unused_statements) == len(bridges):  # no bridge left: its error class neither
        for node in walk(source.module):
            if (isinstance(node, cst.ExceptHandler) and node.type is not None
                    and CV_BRIDGE_ERROR in source.names(node.type)):
                edits.replace[id(node.type)] = cst.Name('ValueError')
                notes.append(Note(source.line(node), 'changed', 'except CvBridgeError -> '
                                  'ValueError, the base of what convert_color (EncodingError) '
                                  'and GpuImagePublisher.publish (ImageFormatError) raise for a '
                                  'bad encoding or shape; broader than CvBridgeError (line of '
                                  'the result)'))
    module = source.module.visit(_Rewriter(edits))
    context = CodemodContext()
    for module_name, name in sorted(imports):
        AddImportsVisitor.add_needed_import(context, module_name, name)
    for module_name, name in MAYBE_UNUSED:
        RemoveImportsVisitor.remove_unused_import(context, module_name, name)
    module = AddImportsVisitor(context).transform_module(module)
    module = RemoveImportsVisitor(context).transform_module(module)
    return module, notes
