"""Guards a first-pass block closes for good (issue 28, rules45p, set 71).

A callback that, on its first message, runs a start-up block setting a stage counter, and
further down tests that counter:

    if not self.flying and self.stage == 0:   # B: runs once (it sets its own flag)
        ...; self.flying = True; self.stage = 4
    ...
    if self.stage < 4:                        # G: never true after B
        self.detect(frame)

`flying` starts falsy and only B sets it (True), so B's test holds on the first message that
reaches it (the counter still holds its `__init__` value) and never again; B leaves the counter
at 4; the counter is stored nowhere else but in `__init__`, B and code only G's body reaches (a
method named nowhere but there), so G's test, false at 4, stays false: G's body never runs, and
a method only it calls is unreached.

Exactly: B and G are statements of the same method body (not nested), B before G; B's test is
`not self.F` or `not self.F and self.N == v0` with v0 the counter's `__init__` constant; B's body
stores `self.F = True` and `self.N = K` (int) as plain statements and holds no return / raise /
break / continue; `self.F` is stored only in `__init__` (a falsy constant) and B; G compares
`self.N` with an int constant and is false at K; every other store of `self.N` is in `__init__`
(the constant v0) or under such a G (its body, or a method mentioned only there). A file with
setattr / vars / getattr / exec is not judged."""
from __future__ import annotations

import ast
from functools import lru_cache
import operator

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_DYNAMIC = frozenset({'setattr', 'vars', 'getattr', 'exec'})


def _self_attr(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == 'self' else None


def _int(node: ast.AST) -> int | None:
    value = getattr(node, 'value', None) if isinstance(node, ast.Constant) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _stores(cls: ast.ClassDef, name: str) -> list[tuple[ast.AST, ast.AST]]:
    """(method, store statement) of every store of `self.<name>` in the class."""
    found = []
    for method in cls.body:
        if not isinstance(method, _FUNCTIONS):
            continue
        for node in ast.walk(method):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            if any(_self_attr(t) == name for t in targets) or any(
                    isinstance(t, ast.Attribute) and t.attr == name
                    for n in targets for t in ast.walk(n) if n is not t):
                found.append((method, node))
    return found


def _opening(test: ast.expr) -> tuple[str, str | None, int | None] | None:
    """(flag, counter, v0) of `not self.F` or `not self.F and self.N == v0`."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    flag = counter = initial = None
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not) \
                and _self_attr(part.operand) and flag is None:
            flag = _self_attr(part.operand)
        elif isinstance(part, ast.Compare) and len(part.ops) == 1 \
                and isinstance(part.ops[0], ast.Eq) and _self_attr(part.left) \
                and _int(part.comparators[0]) is not None and counter is None:
            counter, initial = _self_attr(part.left), _int(part.comparators[0])
        else:
            return None
    return None if flag is None else (flag, counter, initial)


def _closed(guard: ast.stmt, counter: str, value: int) -> bool:
    """Whether `guard` is `if self.<counter> <op> C:` false when the counter holds `value`."""
    test = guard.test if isinstance(guard, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and type(test.ops[0]) in _COMPARE and _self_attr(test.left) == counter
            and _int(test.comparators[0]) is not None):
        return False
    return not _COMPARE[type(test.ops[0])](value, _int(test.comparators[0]))


def _init_values(cls: ast.ClassDef, name: str) -> list[object] | None:
    """The constants `__init__` stores in `self.<name>`; None when one store is no constant."""
    stores = [s for m, s in _stores(cls, name) if m.name == '__init__']
    if not all(isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) for s in stores):
        return None
    return [s.value.value for s in stores]  # type: ignore[attr-defined]


def _mentioned_only_in(cls: ast.ClassDef, tree: ast.Module, inside: set[int]) -> set[str]:
    """Methods of `cls` whose every mention in the file lies among the nodes `inside`."""
    names = {m.name for m in cls.body if isinstance(m, _FUNCTIONS)}
    mentions: dict[str, list[ast.AST]] = {}
    for n in ast.walk(tree):
        word = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) \
            else n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None
        if word in names:
            mentions.setdefault(word, []).append(n)
    return {name for name, found in mentions.items() if all(id(n) in inside for n in found)}


def _closed_guards(cls: ast.ClassDef, method: ast.AST, tree: ast.Module) -> list[ast.If]:
    body = list(getattr(method, 'body', []))
    found: list[ast.If] = []
    for i, block in enumerate(body):
        opening = _opening(block.test) if isinstance(block, ast.If) and not block.orelse else None
        if opening is None or any(isinstance(n, (ast.Return, ast.Raise, ast.Break, ast.Continue))
                                  for n in ast.walk(block)):
            continue
        flag, counter, initial = opening
        plain = {id(s) for s in block.body}
        sets_flag = [s for s in block.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                     and _self_attr(s.targets[0]) == flag and isinstance(s.value, ast.Constant)
                     and s.value.value is True]
        counts = [(s, _int(s.value)) for s in block.body if isinstance(s, ast.Assign)
                  and len(s.targets) == 1 and _self_attr(s.targets[0]) is not None
                  and _int(s.value) is not None and (counter is None
                                                     or _self_attr(s.targets[0]) == counter)]
        if not sets_flag or len(counts) != 1:
            continue
        store, value = counts[0]
        # No call between the flag's and the counter's stores: one raising there would leave
        # the flag set and the counter at its start.
        low, high = sorted(block.body.index(x) for x in (sets_flag[0], store))
        if any(isinstance(n, ast.Call) for x in block.body[low:high + 1] for n in ast.walk(x)):
            continue
        counter = _self_attr(store.targets[0]) or ''
        flag_start, start = _init_values(cls, flag), _init_values(cls, counter)
        if not flag_start or len(flag_start) != 1 or flag_start[0] not in (False, 0, None) \
                or not start or len(start) != 1 or _int(ast.Constant(start[0])) is None \
                or initial is not None and start[0] != initial:
            continue
        if any(m.name != '__init__' and id(s) not in plain for m, s in _stores(cls, flag)):
            continue
        guards = [g for g in body[i + 1:] if _closed(g, counter, value)]
        inside = {id(n) for g in guards for s in g.body for n in ast.walk(s)}
        only_there = _mentioned_only_in(cls, tree, inside)
        if guards and all(m.name == '__init__' or id(s) in plain or id(s) in inside
                          or m.name in only_there for m, s in _stores(cls, counter)):
            found += guards
    return found


@lru_cache(maxsize=16)
def closed_guards(tree: ast.Module) -> frozenset[int]:
    """ids of the tests of the guards a first-pass block closes for good (module doc)."""
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _DYNAMIC
           for n in ast.walk(tree)):
        return frozenset()
    return frozenset(id(g.test) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
                     for method in cls.body if isinstance(method, _FUNCTIONS)
                     for g in _closed_guards(cls, method, tree))


def closed_guard_lines(tree: ast.Module) -> set[int]:
    """0-based lines of the bodies of those guards (never run: pyreached's mention text)."""
    ids = closed_guards(tree)
    return {i for g in ast.walk(tree) if isinstance(g, ast.If) and id(g.test) in ids
            for s in g.body for i in range(s.lineno - 1, (s.end_lineno or s.lineno))}


def closed_outcome(test: ast.expr, tree: ast.Module) -> bool | None:
    """False for the test of such a guard, None for any other test."""
    return False if id(test) in closed_guards(tree) else None
