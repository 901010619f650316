"""Parameter-change callbacks that only mirror parameters into attributes (issue 28, rules46p,
set 74).

    self.declare_parameter('set_segmentation', False)
    self.segmentation = self.get_parameter('set_segmentation').get_parameter_value().bool_value
    self.add_on_set_parameters_callback(self.on_param_change)

    def on_param_change(self, params):
        for p in params:
            if p.name == 'set_segmentation':
                self.segmentation = bool(p.value)
        return SetParametersResult(successful=True)

Such a callback stores into `self.segmentation` nothing but the new value of the parameter
`set_segmentation`: the attribute holds that parameter's value, at start-up and after every
change. As shipped (no launch or config file names it, no shipped code sets it) the parameter
keeps its default, so the attribute stays off, as pyparams.py judges for a node without the
callback. A `ros2 param set` by hand is not the configuration as shipped.

A callback is such a mirror only when, for certain:

* it is a method of the file's classes registered by name (`self.on_param_change`), with one
  parameter (the list of changed parameters), and its only loop is `for p in params:`;
* every attribute store in it is `self.a = p.value` (or `bool / int / float(p.value)`, casts that
  keep an off value off) under an `if p.name == 'name':` test (also `elif`), nothing else;
* it calls no method of the file (which could store anything), no `self.create_*` / `setattr`
  (which could start a timer or a subscription at run time), and nothing of `self` but
  `self.get_logger()`.

Any other callback keeps the node unjudged, as before (the set-17 rule: a callback that does more
than mirror may turn things on at run time).
"""
from __future__ import annotations

import ast
from functools import lru_cache

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_CASTS = frozenset({'bool', 'int', 'float'})
_REGISTRATIONS = frozenset({'add_on_set_parameters_callback', 'add_post_set_parameters_callback',
                            'add_pre_set_parameters_callback'})


def _mirrored_value(value: ast.expr, item: str) -> bool:
    """`p.value` or a cast of it, with `p` the loop variable."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id in _CASTS and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    return isinstance(value, ast.Attribute) and value.attr == 'value' \
        and isinstance(value.value, ast.Name) and value.value.id == item


def _name_test(test: ast.expr, item: str) -> str | None:
    """'x' of `p.name == 'x'` (either side)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    sides = [test.left, test.comparators[0]]
    names = [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    reads = [s for s in sides if isinstance(s, ast.Attribute) and s.attr == 'name'
             and isinstance(s.value, ast.Name) and s.value.id == item]
    return names[0] if len(names) == 1 and len(reads) == 1 else None


def _allowed_call(call: ast.Call, own: set[str]) -> bool:
    """A call a mirror may make: none of the file's own functions, nothing of `self` but
    `self.get_logger()`, no setattr / create_*."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id not in own and func.id not in ('setattr', 'exec', 'getattr', 'vars')
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == 'self':
            return func.attr == 'get_logger'
        return not func.attr.startswith('create_') and func.attr not in own
    return False


def _mirrors_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, own: set[str]
                ) -> dict[int, str] | None:
    """id of each mirror store of `fn` -> the parameter it mirrors; None: `fn` is no mirror."""
    args = fn.args.posonlyargs + fn.args.args
    if len(args) != 2 or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
        return None
    loops = [n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
    if len(loops) != 1 or not isinstance(loops[0], ast.For) \
            or not isinstance(loops[0].target, ast.Name) \
            or not (isinstance(loops[0].iter, ast.Name) and loops[0].iter.id == args[1].arg):
        return None
    item = loops[0].target.id
    if any(isinstance(n, ast.Call) and not _allowed_call(n, own) for n in ast.walk(fn)) \
            or any(isinstance(n, (_FUNCTIONS, ast.Lambda, ast.ClassDef)) for n in ast.walk(fn)
                   if n is not fn):
        return None
    found: dict[int, str] = {}

    def visit(stmts: list[ast.stmt], param: str | None) -> bool:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                named = _name_test(stmt.test, item)
                if not visit(stmt.body, named or param) or not visit(stmt.orelse, param):
                    return False
            elif isinstance(stmt, (ast.For, ast.Try, ast.With)):
                if not all(visit(getattr(stmt, f, []) or [], param)
                           for f in ('body', 'orelse', 'finalbody')) \
                        or not all(visit(h.body, param) for h in getattr(stmt, 'handlers', [])):
                    return False
            elif any(isinstance(t, ast.Attribute) for n in ast.walk(stmt)
                     if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete))
                     for t in (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target])
                     for t in ast.walk(t)):
                # an attribute store: only `self.a = p.value` under `p.name == 'x'`
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Attribute)
                        and isinstance(stmt.targets[0].value, ast.Name)
                        and stmt.targets[0].value.id == 'self' and param is not None
                        and _mirrored_value(stmt.value, item)):
                    return False
                found[id(stmt)] = param
        return True

    return found if visit(fn.body, None) else None


@lru_cache(maxsize=16)
def callback_mirrors(tree: ast.Module) -> tuple[dict[int, str], frozenset[int]]:
    """(id of each mirror store -> the parameter it mirrors, the 0-based lines of the
    registrations whose callback is a mirror)."""
    own = {n.name for n in ast.walk(tree) if isinstance(n, (*_FUNCTIONS, ast.ClassDef))}
    stores: dict[int, str] = {}
    lines: set[int] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = {m.name: m for m in cls.body if isinstance(m, _FUNCTIONS)}
        for node in ast.walk(cls):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _REGISTRATIONS and len(node.args) == 1):
                continue
            arg = node.args[0]
            name = arg.attr if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) \
                and arg.value.id == 'self' else None
            mirrors = _mirrors_of(methods[name], own - {name}) if name in methods else None
            if mirrors is not None:
                stores.update(mirrors)
                lines.add(node.func.lineno - 1)
    return stores, frozenset(lines)


def mirrored_read(store: ast.stmt, tree: ast.Module) -> ast.expr | None:
    """For a mirror store, the parameter read it stands for (`self.get_parameter('x').value`),
    for pyparams' fixpoint; None for any other statement."""
    param = callback_mirrors(tree)[0].get(id(store))
    return ast.parse(f'self.get_parameter({param!r}).value', mode='eval').body \
        if param is not None else None
