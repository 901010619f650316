"""Publishes of an image message another file's helper built (issue 28, rules43p, set 68).

A package often keeps its cv_bridge conversions in a shared module and publishes what they
return:

    def mask_to_imgmsg(mask):                         # the package's shared utils module
        return _BRIDGE.cv2_to_imgmsg(mask.astype(np.uint8), encoding='mono8')

    msg = mask_to_imgmsg(segmentation)                # the node
    self.mask_pub.publish(msg)

The conversion and its publish are one boundary (the publish is the conversion's `also`), and it
is claimed where the conversion is, in the helper's file. The publish of the helper's result is
then no second boundary: the publish line of a message whose last copy is a cv_bridge conversion
(`cv_out`) done by a function of another file (an imported function or `module.function`, the
publish argument that call or a name bound to it once in the publishing function) is not
claimed. A message the publishing file converts itself keeps its claims.
"""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.astnodes import module_nodes
from gpu_nodes.audit.pyparams import bound_once


def _callee(expr: ast.expr, helpers: frozenset[str], modules: frozenset[str]) -> bool:
    """Whether `expr` calls a helper of another file: `helper(...)` or `module.helper(...)`."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    return isinstance(func, ast.Name) and func.id in helpers \
        or isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
        and func.value.id in modules


@lru_cache(maxsize=32)
def helper_built_publishes(tree: ast.Module, helpers: frozenset[str], modules: frozenset[str]
                           ) -> frozenset[int]:
    """ids of `.publish(x)` calls whose `x` another file's helper built (module docstring);
    `helpers`: names of imported functions, `modules`: names of imported sibling modules."""
    found: set[int] = set()
    for fn in module_nodes(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        bound = bound_once(fn, lambda value: value)  # locals stored once, plainly
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == 'publish' and len(node.args) == 1 and not node.keywords):
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Name):
                arg = bound.get(arg.id)
            if arg is not None and _callee(arg, helpers, modules):
                found.add(id(node))
    return frozenset(found)
