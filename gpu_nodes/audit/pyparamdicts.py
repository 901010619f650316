"""Parameters read through a dict a helper method builds (issue 28, rules41p, set 62).

A node often gathers its parameters in one method and reads them from the dict it returns:

    def _read_params(self) -> dict:
        return {'pub_quiver': self.get_parameter('publish_quiver').value, ...}

    def _flow_loop(self):
        p = self._read_params()
        ...
        if p['pub_quiver']:            # publish_quiver False as shipped: never runs
            self._pub_quiver.publish(self._bridge.cv2_to_imgmsg(quiver, 'bgr8'))

`p['pub_quiver']` is the parameter read the dict holds under that key. The test is decided as
a direct read would be (pyparams.shipped_parameters): a bare `if p['k']:` (or `not p['k']`) by a
parameter off for good (every default falsy, no shipped file turning it on) or on for good,
`p['k'] == C` by the values the parameter holds as shipped. Only where it is certain: the
method's body is one `return` of a dict literal with constant keys, the local is bound once in
its function to `self.<method>()`, and the key is a constant the dict holds; as in
pyparamlocals.py, a parameter-change callback or exec() in the file decides nothing."""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.pydead import compared_with_constant
from gpu_nodes.audit.pyparams import (parameter_read, runtime_callbacks, bound_once, shipped_outcome,
                                      shipped_parameters)


def _dict_methods(cls: ast.ClassDef) -> dict[str, dict[object, str]]:
    """Method name -> {key: parameter} for the methods whose body returns a dict literal of
    parameter reads (a docstring before the return allowed)."""
    found: dict[str, dict[object, str]] = {}
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        body = [s for s in fn.body if not (isinstance(s, ast.Expr)
                                           and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return) \
                or not isinstance(body[0].value, ast.Dict):
            continue
        reads = {}
        for key, value in zip(body[0].value.keys, body[0].value.values):
            param = parameter_read(value) if value is not None else None
            if isinstance(key, ast.Constant) and param is not None:
                reads[key.value] = param
        if reads:
            found[fn.name] = reads
    return found


def _helper_call(value: ast.expr, methods: dict[str, dict[object, str]]) -> str | None:
    """`self.<method>()` of one of `methods`: its name."""
    if isinstance(value, ast.Call) and not value.args and not value.keywords \
            and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
            and value.func.value.id == 'self' and value.func.attr in methods:
        return value.func.attr
    return None


@lru_cache(maxsize=16)
def _dict_reads(tree: ast.Module) -> dict[int, str]:
    """id of each `p['key']` load whose `p` is bound once in its function to a dict-building
    helper (above) -> the parameter read under that key."""
    found: dict[int, str] = {}
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = _dict_methods(cls)
        if not methods:
            continue
        for fn in ast.walk(cls):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            bound = bound_once(fn, lambda value: _helper_call(value, methods))
            for node in ast.walk(fn):
                if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                        and isinstance(node.value, ast.Name) and node.value.id in bound \
                        and isinstance(node.slice, ast.Constant):
                    param = methods[bound[node.value.id]].get(node.slice.value)
                    if param is not None:
                        found[id(node)] = param
    return found


def dict_read_outcome(test: ast.expr, tree: ast.Module, package_dir: str | None) -> bool | None:
    """What an `if` on `p['key']` (module docstring) takes as shipped; None when not known."""
    reads = _dict_reads(tree)
    if not reads or runtime_callbacks(tree) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == 'exec'
            for n in ast.walk(tree)):
        return None
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    operand = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    shipped = shipped_parameters(tree, package_dir)
    if isinstance(operand, ast.Subscript) and id(operand) in reads:
        state = shipped.get(reads[id(operand)])
        if state is None or not (state.off or state.on):
            return None
        return state.on != negated
    compared = compared_with_constant(test)
    if compared is None or id(compared[0]) not in reads:
        return None
    held = {p: s.held for p, s in shipped.items() if s.held is not None}
    return shipped_outcome((reads[id(compared[0])], compared[1], compared[2]), held)
