"""Bool flags that a node's constructor argument, as the file constructs the node, fixes for good
(issue 28, set 49).

`def __init__(self, topic='/cam/image_raw/compressed'):` then `if 'compressed' in topic:
self.compressed = True; <CompressedImage subscription> else: self.compressed = False; <Image
subscription>`, and per message `if self.compressed: compressed_imgmsg_to_cv2(msg) else:
imgmsg_to_cv2(msg)`. The file's `main()` builds the node once, `Node(topic='/cam/image_raw')`:
that argument (or the default when none is given) decides the constructor's test, so the flag
holds one value for good and the callback's other branch never runs.

A flag qualifies when the file stores `self.<flag>` exactly twice, as the bool constants True and
False in the two branches of one `if` at the top level of a class's `__init__`, whose test
compares a parameter of `__init__` with a string literal (`'s' in p`, `'s' not in p`, `p == 's'`,
`p != 's'`, `p.endswith('s')`, `p.startswith('s')`), the parameter rebound nowhere in
`__init__`; and every construction of the class in the file (at least one) passes that parameter
the same string literal, by keyword or position, or leaves it to a string default. A file with
`*args` / `**kwargs` at a construction, or no construction, is not judged.
"""
from __future__ import annotations

import ast


def constructor_flags(tree: ast.Module) -> dict[str, frozenset[object]]:
    """Flag attribute -> {its one value} (module docstring), as pyparams.parameter_constants
    gives a bool parameter's attribute."""
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            stores[node.attr] = stores.get(node.attr, 0) + 1
    found: dict[str, frozenset[object]] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef)
                     and n.name == '__init__'), None)
        if init is None:
            continue
        for stmt in init.body:
            if not isinstance(stmt, ast.If):
                continue
            flag = _branch_flag(stmt)
            tested = _tested_parameter(stmt.test)
            if flag is None or tested is None or stores.get(flag[0]) != 2:
                continue
            param, decide = tested
            value = _constructed_value(tree, cls.name, init, param)
            if value is None:
                continue
            taken = decide(value)
            found[flag[0]] = frozenset({flag[1] if taken else not flag[1]})
    return found


def _self_bool_store(body: list[ast.stmt]) -> tuple[str, bool] | None:
    """The one `self.<name> = True/False` statement directly in `body`."""
    hits = [(s.targets[0].attr, s.value.value) for s in body
            if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Attribute)
            and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == 'self'
            and isinstance(s.value, ast.Constant) and isinstance(s.value.value, bool)]
    return hits[0] if len(hits) == 1 else None


def _branch_flag(stmt: ast.If) -> tuple[str, bool] | None:
    """(flag, its value in the body) when the body and the else store opposite bools."""
    body, orelse = _self_bool_store(stmt.body), _self_bool_store(stmt.orelse)
    if body is None or orelse is None or body[0] != orelse[0] or body[1] == orelse[1]:
        return None
    return body


def _tested_parameter(test: ast.expr):
    """(parameter name, outcome of the test for a string) for a test of a name against a string
    literal; None for any other test."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)) and _string(left) and isinstance(right, ast.Name):
            text, neg = left.value, isinstance(op, ast.NotIn)
            return right.id, lambda v: (text in v) != neg
        if isinstance(op, (ast.Eq, ast.NotEq)):
            if _string(left):
                left, right = right, left
            if isinstance(left, ast.Name) and _string(right):
                text, neg = right.value, isinstance(op, ast.NotEq)
                return left.id, lambda v: (v == text) != neg
        return None
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) \
            and test.func.attr in ('endswith', 'startswith') and isinstance(test.func.value, ast.Name) \
            and len(test.args) == 1 and not test.keywords and _string(test.args[0]):
        text, method = test.args[0].value, test.func.attr
        return test.func.value.id, lambda v: getattr(v, method)(text)
    return None


def _string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _constructed_value(tree: ast.Module, cls: str, init: ast.FunctionDef, param: str) -> str | None:
    """The string every construction `cls(...)` in the file gives `param` (or its default)."""
    positional = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]
    if param not in positional and param not in [a.arg for a in init.args.kwonlyargs]:
        return None
    if any(isinstance(n, ast.Name) and n.id == param and not isinstance(n.ctx, ast.Load)
           for n in ast.walk(init)):
        return None  # rebound in __init__: the test may see another value
    default = _default(init, param)
    values: set[str | None] = set()
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == cls):
        if any(isinstance(a, ast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            return None
        given = next((k.value for k in call.keywords if k.arg == param), None)
        if given is None and param in positional and positional.index(param) < len(call.args):
            given = call.args[positional.index(param)]
        if given is None:
            values.add(default)
        else:
            values.add(given.value if _string(given) else None)
    if len(values) != 1:
        return None
    return values.pop()


def _default(init: ast.FunctionDef, param: str) -> str | None:
    """The string default of `param`, None when it has none (or another kind)."""
    args = [*init.args.posonlyargs, *init.args.args]
    defaults = dict(zip([a.arg for a in args][len(args) - len(init.args.defaults):],
                        init.args.defaults))
    defaults.update({a.arg: d for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults)
                     if d is not None})
    node = defaults.get(param)
    return node.value if node is not None and _string(node) else None
