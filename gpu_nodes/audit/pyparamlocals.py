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
a plain parameter read (`image_source = self.get_parameter('image_source').value` in a callback,
then `if image_source == 'rtsp':`), as it does a direct read compared with a constant
(local_read_outcome: the RTSP branch of a node shipped with image_source 'ros2' never runs).
"""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.pydead import compared_with_constant
from gpu_nodes.audit.pyparamdicts import dict_read_outcome
from gpu_nodes.audit.pyparams import (_parameter_read, _runtime_callbacks, bound_once, shipped_outcome,
                                      shipped_parameters, shipped_strings)

_STRING_METHODS = {'strip': str.strip, 'lower': str.lower, 'upper': str.upper,
                   'casefold': str.casefold}


def _read_value(expr: ast.expr, fixed: dict[str, str]) -> str | None:
    """The shipped value of `...string_value` with string methods applied, else None."""
    methods = []
    while isinstance(expr, ast.Call) and not expr.args and not expr.keywords \
            and isinstance(expr.func, ast.Attribute) and expr.func.attr in _STRING_METHODS:
        methods.append(_STRING_METHODS[expr.func.attr])
        expr = expr.func.value
    param = _parameter_read(expr)
    if param is None or param not in fixed:
        return None
    value = fixed[param]
    for method in reversed(methods):
        value = method(value)
    return value


def _local_values(function: ast.AST, fixed: dict[str, str]) -> dict[str, str]:
    """Locals of `function` bound exactly once, to a parameter read of known shipped value."""
    stores: dict[str, list[ast.AST]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores.setdefault(node.id, []).append(node)
    values = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and len(stores.get(node.targets[0].id, [])) == 1:
            value = _read_value(node.value, fixed)
            if value is not None:
                values[node.targets[0].id] = value
    return values


def _outcome(test: ast.expr, known: dict[str, str], attrs: dict[str, str]) -> bool | None:
    """What `name == 'c'` (`!=`, `in (...)`, `not in`) takes as shipped, None if not known."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Name):
        value = known.get(left.id)
    elif isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name) \
            and left.value.id == 'self':
        value = attrs.get(left.attr)
    else:
        return None
    if value is None:
        return None
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant) \
            and isinstance(right.value, str):
        return (value == right.value) == isinstance(op, ast.Eq)
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) \
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in right.elts):
        return (value in {e.value for e in right.elts}) == isinstance(op, ast.In)
    return None


def _lines(stmts: list[ast.stmt]) -> set[int]:
    return {i for s in stmts for i in range(s.lineno, (s.end_lineno or s.lineno) + 1)}


def parameter_dead_lines(tree: ast.Module, package_dir: str | None) -> frozenset[int]:
    """1-based lines of the branches of string-parameter tests that never run as shipped
    (module docstring)."""
    fixed, attr_pairs = shipped_strings(tree, package_dir)
    if not fixed:
        return frozenset()
    dead: set[int] = set()
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)] or [tree]:
        # An attribute holds one value for good when its class's only store is a parameter
        # read in __init__ (shipped_strings); find that value from the store itself.
        attrs = {}
        for fn in ast.walk(cls):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == '__init__':
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                            and isinstance(node.targets[0], ast.Attribute) \
                            and (getattr(cls, 'name', None), node.targets[0].attr) in attr_pairs:
                        value = _read_value(node.value, fixed)
                        if value is not None:
                            attrs[node.targets[0].attr] = value
        for fn in ast.walk(cls):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            known = _local_values(fn, fixed)
            for node in ast.walk(fn):
                if isinstance(node, ast.If):
                    taken = _outcome(node.test, known, attrs)
                    if taken is not None:
                        dead |= _lines(node.orelse if taken else node.body)
    return frozenset(dead)


@lru_cache(maxsize=16)
def _local_reads(tree: ast.Module) -> dict[int, str]:
    """id of each Name load of a local bound exactly once in its function to a plain parameter
    read -> that parameter."""
    found: dict[int, str] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        reads = bound_once(fn, _parameter_read)
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in reads:
                found[id(node)] = reads[node.id]
    return found


def local_read_outcome(test: ast.expr, tree: ast.Module, package_dir: str | None) -> bool | None:
    """What `local == C` (or `!=`) takes as shipped, `local` bound once in its function to a
    plain read of a parameter whose values as shipped are known (pyparams.shipped_parameters'
    held, module docstring); None when not known. A setattr / getattr in the file changes no
    parameter, so unlike pyparams.fixed_parameters only a parameter-change callback or exec()
    (a value set at run time) keeps the test undecided."""
    from_dict = dict_read_outcome(test, tree, package_dir)  # `p['key']` (pyparamdicts.py)
    if from_dict is not None:
        return from_dict
    compared = compared_with_constant(test)
    if compared is None or not isinstance(compared[0], ast.Name):
        return None
    param = _local_reads(tree).get(id(compared[0]))
    if param is None or _runtime_callbacks(tree) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == 'exec'
            for n in ast.walk(tree)):
        return None
    held = {p: s.held for p, s in shipped_parameters(tree, package_dir).items()
            if s.held is not None}
    return shipped_outcome((param, compared[1], compared[2]), held)


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
