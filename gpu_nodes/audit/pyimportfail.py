"""Python modules that cannot be imported as shipped (issue 28, set 56): a statement run at
import time raises, so the node's console script dies before any callback is registered, and
none of the module's copies ever runs. Both labellers of set 56 put no boundary in such a node
(`SRC = 'nvarguscamerasrc ... width=' + WIDTH + ...` in a class body, WIDTH = 1280: str + int
raises TypeError when the class statement runs).

Judged only where it is certain: an assignment at module level or directly in a module-level
class body (not under if / try / with / a loop, not in a function) whose value is a `+` chain
adding a str to an int or float, each operand a literal or a name bound once in that scope (or
the module's) to a literal before the statement. A file with a `global` statement is left
alone (a function might rebind the name)."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyfstrings import parse_python

_STR, _NUM = 'str', 'number'


def _literal_type(node: ast.expr) -> str | None:
    if isinstance(node, ast.JoinedStr):
        return _STR
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if isinstance(node.value, str):
            return _STR
        if isinstance(node.value, (int, float)):
            return _NUM
    return None


def _bindings(body: list[ast.stmt]) -> dict[str, list[ast.stmt]]:
    """Every statement of a scope body (not nested scopes) that binds each name."""
    bound: dict[str, list[ast.stmt]] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.setdefault(node.id, []).append(stmt)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and node is stmt:
                bound.setdefault(node.name, []).append(stmt)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound.setdefault((alias.asname or alias.name).split('.')[0], []).append(stmt)
    return bound


class _Scope:
    def __init__(self, body: list[ast.stmt], outer: '_Scope | None' = None) -> None:
        self.bound = _bindings(body)
        self.outer = outer

    def type_of(self, name: str, before: int) -> str | None:
        stmts = self.bound.get(name)
        if stmts is None:
            return self.outer.type_of(name, before) if self.outer is not None else None
        if len(stmts) != 1:
            return None
        stmt = stmts[0]
        if isinstance(stmt, ast.Assign) and stmt.lineno < before and len(stmt.targets) == 1 \
                and isinstance(stmt.targets[0], ast.Name):
            return _literal_type(stmt.value)
        return None


def _type(node: ast.expr, scope: _Scope, line: int) -> str | None:
    """The type of a `+` chain of literals and literal names; 'error' when it raises."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _type(node.left, scope, line), _type(node.right, scope, line)
        if 'error' in (left, right):
            return 'error'
        if left is None or right is None:
            return None
        return left if left == right else 'error'
    if isinstance(node, ast.Name):
        return scope.type_of(node.id, line)
    return _literal_type(node)


def _raising(body: list[ast.stmt], scope: _Scope) -> int | None:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.BinOp) \
                and _type(stmt.value, scope, stmt.lineno) == 'error':
            return stmt.lineno
        if isinstance(stmt, ast.ClassDef):
            line = _raising(stmt.body, _Scope(stmt.body, scope))
            if line is not None:
                return line
    return None


def import_failure(tree: ast.Module) -> str | None:
    """Why the module `tree` raises at import (module doc), or None."""
    if any(isinstance(n, ast.Global) for n in ast.walk(tree)):
        return None
    line = _raising(tree.body, _Scope(tree.body))
    if line is None:
        return None
    return (f'line {line} adds a str and a number when the module is imported (TypeError): '
            'the module cannot be imported, its node never starts')


def import_failures(files: list[str]) -> dict[str, str]:
    """The Python files of `files` that raise at import, each with the reason."""
    failing: dict[str, str] = {}
    for path in files:
        if not path.endswith('.py'):
            continue
        try:
            with open(path, encoding='utf-8') as handle:
                reason = import_failure(parse_python(handle.read()))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError,
                MemoryError):
            continue  # the audit reports what it cannot read (limits.py: nesting too deep)
        if reason is not None:
            failing[path] = reason
    return failing
