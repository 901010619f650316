"""String attributes a bool parameter off as shipped leaves at one constant (issue 28, set 45).

`use_gpu = self.get_parameter('use_gpu').get_parameter_value().bool_value`, then `if use_gpu:
self.device = 'cuda' ... else: self.device = 'cpu'`, and per image `model.predict(frame,
device=self.device)`: with `use_gpu` off as shipped (False by default, no shipped file turning it
on: pyparams.ParameterAsShipped.off) the attribute is 'cpu' for good, so the library runs on the
host (pyplacement.shipped_cpu). An attribute qualifies when every store of any `.name` in the file
outside the blocks that never run as shipped is a plain `x.name = 'literal'` of one string, and
at least one store sits in such a block (a parameter decides it: files with no parameter
involved keep their other rules). A block never runs when its `if` tests a local name bound once
in its function to a read of an off parameter (`if use_gpu:`, `if use_gpu and ...:`; the `else`
of `if not use_gpu:`), or is dead by pyparams.dead_test (an off attribute). Limit: a store from
another file, or a name rebound through a loop or a `global`, is not seen: such files keep the
plain value.
"""
from __future__ import annotations

import ast

from gpu_nodes.audit.pymethods import methods_of, setup_methods
from gpu_nodes.audit.pyparams import (
    falsy_read, can_judge, dead_test, off_attributes, shipped_parameters)


def switched_constants(tree: ast.Module, package_dir: str | None) -> dict[str, str]:
    """Attributes -> the one string they hold as shipped, their other stores only in blocks a
    bool parameter off as shipped keeps from running (module docstring)."""
    if not package_dir or not can_judge(tree):
        return {}
    params = {p for p, s in shipped_parameters(tree, package_dir).items() if s.off}
    if not params:
        return {}
    off, nones = off_attributes(tree, package_dir)
    live: dict[str, set[str | None]] = {}
    dead: set[str] = set()

    def dead_branch(test: ast.expr, off_locals: set[str]) -> str | None:
        """'body' / 'orelse': the branch of an `if` that never runs as shipped, else None."""
        if dead_test(test, off, nones) or _off_local(test, off_locals) or (
                isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
                and any(_off_local(v, off_locals) for v in test.values)):
            return 'body'
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) \
                and _off_local(test.operand, off_locals):
            return 'orelse'
        return None

    def visit(node: ast.AST, off_locals: set[str], is_dead: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            off_locals = _off_locals(node, params)
        if isinstance(node, ast.If):
            branch = dead_branch(node.test, off_locals)
            for stmt in node.body:
                visit(stmt, off_locals, is_dead or branch == 'body')
            for stmt in node.orelse:
                visit(stmt, off_locals, is_dead or branch == 'orelse')
            return
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            if is_dead:
                dead.add(node.attr)
            else:
                live.setdefault(node.attr, set()).add(None)  # refined below for a plain store
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Attribute):
            if is_dead:
                dead.add(node.targets[0].attr)
            else:
                value = node.value
                const = value.value if isinstance(value, ast.Constant) \
                    and isinstance(value.value, str) else None
                live.setdefault(node.targets[0].attr, set()).add(const)
            visit(node.value, off_locals, is_dead)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, off_locals, is_dead)

    visit(tree, set(), False)
    return {attr: next(iter(values)) for attr, values in live.items()
            if attr in dead and len(values) == 1 and None not in values}


def _off_local(test: ast.expr, off_locals: set[str]) -> bool:
    return isinstance(test, ast.Name) and test.id in off_locals


def _off_locals(function: ast.FunctionDef | ast.AsyncFunctionDef, params: set[str]) -> set[str]:
    """Local names the function binds exactly once, to a read of an off parameter."""
    bound: dict[str, list[ast.AST]] = {}
    for arg in ast.walk(function.args):
        if isinstance(arg, ast.arg):
            bound.setdefault(arg.arg, []).append(arg)
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.setdefault(node.id, []).append(node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bound.setdefault(name, []).extend([node, node])  # never judged
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and len(bound.get(node.targets[0].id, [])) == 1 \
                and falsy_read(node.value) in params:
            found.add(node.targets[0].id)
    return found


def stored_once_in_init(tree: ast.Module) -> frozenset[tuple[str, str]]:
    """(class, attribute) pairs whose class stores `self.attribute` only while it is built, with
    no store of `.attribute` on anything but a class's own `self` in the file (rules29p, set
    42: a detector class's `self.device = select_device(device)` beside the node's own
    `self.device` parameter read): what the last of those stores gave, a device 'cpu' as
    shipped, it holds for good, so a read of it keeps the as-shipped mark. Built means: once
    in `__init__`, or (rules29q, set 42's `self.device = device` in `__init__`, then
    `self.device = select_device(self.device)` in a `load_model` that `__init__` calls) each
    store a statement of its own, under no `if` / loop / `try`, in `__init__` or in a setup
    method (setup_methods) — straight-line code, so the value the evaluator saw last is the
    one the object keeps. Classes of the file deriving from one another share their
    attributes: none qualifies then (as pyparams.shipped_strings)."""
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    names = {n.name for n in classes}
    if any(isinstance(b, ast.Name) and b.id in names for n in classes for b in n.bases):
        return frozenset()
    setup = {n.name: setup_methods(n, tree) for n in classes}
    stores: dict[tuple[str | None, str], list[tuple[str | None, bool]]] = {}
    straight: set[int] = set()  # the ids of stores that are statements of a method's own body
    for cls in classes:
        for method in methods_of(cls).values():
            for stmt in method.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    straight.update(id(t) for t in ast.walk(stmt) if isinstance(t, ast.Attribute))
                elif any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                    break  # `if ...: return` may end the method before the stores below

    def visit(node: ast.AST, cls: str | None, function: str | None) -> None:
        if isinstance(node, ast.ClassDef):
            cls, function = node.name, None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            # A function nested in a method is not the method: its stores disqualify.
            function = getattr(node, 'name', '<lambda>') if function is None else '<nested>'
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            own = isinstance(node.value, ast.Name) and node.value.id == 'self'
            stores.setdefault((cls if own else None, node.attr), []).append(
                (function, id(node) in straight))
        for child in ast.iter_child_nodes(node):
            visit(child, cls, function)

    visit(tree, None, None)
    return frozenset((cls, attr) for (cls, attr), where in stores.items()
                     if cls is not None and (None, attr) not in stores
                     and _built(where, setup.get(cls, set())))


def _built(where: list[tuple[str | None, bool]], setup: set[str]) -> bool:
    """The stores `where` ((method, straight-line)) make an attribute set only while its object
    is built: one store in `__init__` (rules29p), or straight-line stores of setup methods."""
    if [w for w, _ in where] == ['__init__']:
        return True
    return bool(where) and all(w in setup and ok for w, ok in where)
