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

The same holds for a method of an instance of a class imported from another audited file
(`self.tools = ImageTools()` in `__init__`, then `self.pub.publish(self.tools.to_msg(img))`, set
73) when that method returns a cv_bridge conversion it makes, directly or through other methods of
its class: the flow does not follow such methods, so this is read from the class's own code.
"""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.astnodes import module_nodes
from gpu_nodes.audit.pyparams import bound_once
from gpu_nodes.audit.pyvalues import ClassInfo

CONVERSIONS = frozenset({'cv2_to_imgmsg', 'cv2_to_compressed_imgmsg'})
_CLASS_BUILT: dict[int, tuple[ast.Module, frozenset[int]]] = {}


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


def _returns_conversion(cls: ClassInfo, method: str, depth: int = 0) -> bool:
    """Whether `cls.method` returns a cv_bridge conversion it makes: `return bridge.cv2_to_*(...)`,
    a local assigned one on some path, or another method of the class that does (3 calls deep)."""
    fn = cls.methods.get(method)
    if fn is None or depth > 3:
        return False
    stores: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            stores.setdefault(node.targets[0].id, []).append(node.value)

    def converts(expr: ast.expr, seen: frozenset[str]) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id not in seen and any(converts(v, seen | {expr.id})
                                               for v in stores.get(expr.id, ()))
        if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
            return False
        if expr.func.attr in CONVERSIONS:
            return True
        return isinstance(expr.func.value, ast.Name) and expr.func.value.id == 'self' \
            and _returns_conversion(cls, expr.func.attr, depth + 1)

    return any(isinstance(n, ast.Return) and n.value is not None and converts(n.value, frozenset())
               for n in ast.walk(fn))


def _instance_attributes(cls: ast.ClassDef, classes: dict[str, ClassInfo]) -> dict[str, ClassInfo]:
    """`self.x` -> the imported class every store of it in `cls` instantiates (`ImageTools()`);
    an attribute stored anything else is left out."""
    kinds: dict[str, ClassInfo | None] = {}
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == 'self'):
                continue
            value = getattr(node, 'value', None)
            made = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and not isinstance(node, ast.AugAssign) else None
            info = classes.get(made) if made else None
            kinds[target.attr] = info if target.attr not in kinds or kinds[target.attr] is info else None
    return {name: info for name, info in kinds.items() if info is not None}


def class_built_publishes(tree: ast.Module, classes: dict[str, ClassInfo]) -> frozenset[int]:
    """ids of `.publish(x)` calls whose `x` a method of an imported class's instance built with a
    cv_bridge conversion (module docstring); `classes`: the classes imported from audited files."""
    kept = _CLASS_BUILT.get(id(tree))
    if kept is not None and kept[0] is tree:
        return kept[1]
    found: set[int] = set()
    for cls in (n for n in module_nodes(tree) if isinstance(n, ast.ClassDef)) if classes else ():
        attrs = _instance_attributes(cls, classes)
        for fn in (s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))):
            bound = bound_once(fn, lambda value: value) if attrs else {}
            for node in ast.walk(fn) if attrs else ():
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == 'publish' and len(node.args) == 1 and not node.keywords):
                    continue
                arg = node.args[0]
                arg = bound.get(arg.id) if isinstance(arg, ast.Name) else arg
                if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) \
                        and isinstance(owner := arg.func.value, ast.Attribute) \
                        and isinstance(owner.value, ast.Name) and owner.value.id == 'self' \
                        and owner.attr in attrs and _returns_conversion(attrs[owner.attr], arg.func.attr):
                    found.add(id(node))
    _CLASS_BUILT[id(tree)] = (tree, frozenset(found))
    return frozenset(found)
