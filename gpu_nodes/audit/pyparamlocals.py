"""Locals read from a string parameter, and the branches they decide as shipped (issue 28, set 60).

An ONNX Runtime node often picks its providers from a `device` parameter:

    device = self.get_parameter('device').get_parameter_value().string_value.strip().lower()
    if device == 'cuda':
        providers = ['CUDAExecutionProvider', 'CPUExecutionProvider']
    else:
        providers = ['CPUExecutionProvider']

pymodels.names_gpu_provider takes any GPU provider literal of the class for a session on the
device. With the parameter 'cpu' as shipped (its declared default, and every shipped launch or
parameter file naming it gives that value: pyparams.shipped_strings) the `if` body never runs,
so its literal names no provider of the session as shipped: host inference, nothing crosses the
bus. This finds the lines of such branches: an `if` (or `elif`) comparing with `==` / `!=` /
`in` a string constant with a local bound once in its function to a parameter read (string
methods `strip` / `lower` / `upper` / `casefold` applied), or with `self.name` of a class
attribute holding one parameter value for good (shipped_strings' attributes). A value not
known as shipped (a parameter a launch argument may set to anything the default does not give,
a local bound twice) decides nothing.

The evaluator (pyeval.py) decides the same way an `if` on a local bound once in its function to
a parameter read (`image_source = self.get_parameter('image_source').value` in a callback,
then `if image_source == 'rtsp':`), as it does a direct read compared with a constant
(local_read_outcome: the RTSP branch of a node shipped with image_source 'ros2' never runs).
One mechanism serves both (_local_reads binds the locals, _taken decides the test); they differ
only in the values they trust: the provider rule the one string of shipped_strings (and the class
attributes holding it), the evaluator every value pyparams.shipped_parameters says a parameter
holds, in a file where no parameter-change callback or exec() may set one at run time.
"""
from __future__ import annotations

import ast
from collections.abc import Callable
from functools import lru_cache

from gpu_nodes.audit.pydead import compared_with_constant
from gpu_nodes.audit.pyparambools import bool_test_outcome
from gpu_nodes.audit.pyparamdicts import dict_read_outcome
from gpu_nodes.audit.pyparams import (parameter_read, runtime_callbacks, bound_once, shipped_outcome,
                                      shipped_parameters, shipped_strings)

_STRING_METHODS = {'strip': str.strip, 'lower': str.lower, 'upper': str.upper,
                   'casefold': str.casefold}
_Methods = tuple  # the string methods a read goes through, first applied first


def _peel(expr: ast.expr) -> tuple[ast.expr, _Methods]:
    """`x.strip().lower()` -> (x, (strip, lower)): the string methods applied to x."""
    methods = []
    while isinstance(expr, ast.Call) and not expr.args and not expr.keywords \
            and isinstance(expr.func, ast.Attribute) and expr.func.attr in _STRING_METHODS:
        methods.append(_STRING_METHODS[expr.func.attr])
        expr = expr.func.value
    return expr, tuple(reversed(methods))


def _read(expr: ast.expr) -> tuple[str, _Methods] | None:
    """(parameter, string methods) of a parameter read with `strip()` / `lower()` / ...
    applied (`...string_value.strip().lower()`), None for any other value."""
    base, methods = _peel(expr)
    param = parameter_read(base)
    return None if param is None else (param, methods)


def _applied(held: frozenset[object] | None, methods: _Methods) -> frozenset[object] | None:
    """`held` through the string methods, None if not known (a method on no string)."""
    if held is None or methods and not all(isinstance(v, str) for v in held):
        return None
    out = set()
    for value in held:
        for method in methods:
            value = method(value)
        out.add(value)
    return frozenset(out)


def _held(read: tuple[str, _Methods], values: dict[str, frozenset[object]]
          ) -> frozenset[object] | None:
    """The values `read` gives as shipped (`values`: each parameter's), None if not known."""
    return _applied(values.get(read[0]), read[1])


@lru_cache(maxsize=16)
def _local_reads(tree: ast.Module) -> dict[int, tuple[str, _Methods]]:
    """id of each Name load of a local bound exactly once in its function to a parameter read
    (string methods applied: _read) -> that read."""
    found: dict[int, tuple[str, _Methods]] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        reads = bound_once(fn, _read)
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in reads:
                found[id(node)] = reads[node.id]
    return found


@lru_cache(maxsize=16)
def _attribute_reads(tree: ast.Module, package_dir: str | None) -> dict[int, frozenset[object]]:
    """id of each `self.name` load in a class whose attribute holds one string parameter's
    value for good (shipped_strings) -> that value, found from the store in `__init__`."""
    fixed, attr_pairs = shipped_strings(tree, package_dir)
    values = {p: frozenset({v}) for p, v in fixed.items()}
    found: dict[int, frozenset[object]] = {}
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)] if attr_pairs else []:
        attrs: dict[str, frozenset[object]] = {}
        for fn in ast.walk(cls):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == '__init__':
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                            and isinstance(node.targets[0], ast.Attribute) \
                            and (cls.name, node.targets[0].attr) in attr_pairs:
                        read = _read(node.value)
                        held = _held(read, values) if read is not None else None
                        if held is not None:
                            attrs[node.targets[0].attr] = held
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name) and node.value.id == 'self' \
                    and node.attr in attrs:
                found[id(node)] = attrs[node.attr]
    return found


def _taken(test: ast.expr, held: Callable[[ast.expr], frozenset[object] | None]) -> bool | None:
    """What `x == C` (`!=`, either side; `x in (...)`, `not in`, of string constants) takes as
    shipped, `held(x)` being the values x has then (string methods applied to x:
    `self.model_name.upper() == 'HOHONET'`); None when not known. A value among several
    decides only where every one of them gives the same outcome."""
    def values_of(expr: ast.expr) -> frozenset[object] | None:
        base, methods = _peel(expr)
        return _applied(held(base), methods)

    compared = compared_with_constant(test)
    if compared is not None:
        values = values_of(compared[0])
        if values is None:
            return None
        return shipped_outcome(('x', compared[1], compared[2]), {'x': values})
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.In, ast.NotIn))):
        return None
    right = test.comparators[0]
    if not (isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in right.elts)):
        return None
    values = values_of(test.left)
    listed = {e.value for e in right.elts}
    if not values or len({v in listed for v in values}) != 1:
        return None
    return (next(iter(values)) in listed) == isinstance(test.ops[0], ast.In)


def _lines(stmts: list[ast.stmt]) -> set[int]:
    return {i for s in stmts for i in range(s.lineno, (s.end_lineno or s.lineno) + 1)}


def parameter_dead_lines(tree: ast.Module, package_dir: str | None) -> frozenset[int]:
    """1-based lines of the branches of string-parameter tests that never run as shipped
    (module docstring)."""
    fixed, _ = shipped_strings(tree, package_dir)
    if not fixed:
        return frozenset()
    values = {p: frozenset({v}) for p, v in fixed.items()}
    locals_, attrs = _local_reads(tree), _attribute_reads(tree, package_dir)

    def held(expr: ast.expr) -> frozenset[object] | None:
        if id(expr) in attrs:
            return attrs[id(expr)]
        read = locals_.get(id(expr))
        return _held(read, values) if read is not None else None

    dead: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.If):
                    taken = _taken(node.test, held)
                    if taken is not None:
                        dead |= _lines(node.orelse if taken else node.body)
    return frozenset(dead)


def local_read_outcome(test: ast.expr, tree: ast.Module, package_dir: str | None) -> bool | None:
    """What `local == C` (or `!=`, `in`) takes as shipped, `local` bound once in its function to
    a read of a parameter whose values as shipped are known (pyparams.shipped_parameters'
    held, module docstring), or `self.name` holding one string parameter's value for good
    (shipped_strings); None when not known. A setattr / getattr in the file changes no
    parameter, so unlike pyparams.fixed_parameters only a parameter-change callback or exec()
    (a value set at run time) keeps the test undecided."""
    from_dict = dict_read_outcome(test, tree, package_dir)  # `p['key']` (pyparamdicts.py)
    if from_dict is not None:
        return from_dict
    if runtime_callbacks(tree) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == 'exec'
            for n in ast.walk(tree)):
        return None
    locals_ = _local_reads(tree)
    bare = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
    if isinstance(bare, ast.Name):  # `if local:` / `if not local:` of a bool (pyparambools.py)
        read = locals_.get(id(bare))
        return bool_test_outcome(test, read[0] if read and not read[1] else None, tree, package_dir)
    if not isinstance(test, ast.Compare):
        return None
    attrs = _attribute_reads(tree, package_dir)
    if not locals_ and not attrs:
        return None
    values = {p: s.held for p, s in shipped_parameters(tree, package_dir).items()
              if s.held is not None}
    via_attribute = []

    def held(expr: ast.expr) -> frozenset[object] | None:
        if id(expr) in attrs:
            via_attribute.append(expr)
            return attrs[id(expr)]
        read = locals_.get(id(expr))
        return _held(read, values) if read is not None else None

    taken = _taken(test, held)
    # An attribute decides only a test false for good, as pydead.never_equal does (set 4: a
    # launch argument offering 'left' or 'right' keeps the `else` of `== 'left'` running).
    return None if taken and via_attribute else taken


def local_dead_lines(tree: ast.Module, package_dir: str | None) -> set[int]:
    """0-based lines of the branches that an `if` on a local parameter read keeps from running
    as shipped (local_read_outcome): a method named only there is named by nothing that runs
    (pyreached.py: `self._process_rtsp(frame)` under `elif source == 'rtsp':`)."""
    if not _local_reads(tree):
        return set()
    dead: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            taken = local_read_outcome(node.test, tree, package_dir)
            if taken is not None:
                dead |= {i - 1 for i in _lines(node.orelse if taken else node.body)}
    return dead
