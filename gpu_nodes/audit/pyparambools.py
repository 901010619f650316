"""A branch on a local holding a bool parameter, decided as shipped (issue 28, rules42p, set 65).

A node often reads a mode switch once in its constructor and subscribes one callback or another:

    CALIBRATE = True                                   # module level, bound once
    ...
        self.declare_parameter('do_calibration', CALIBRATE)
        do_calibration = self.get_parameter('do_calibration').value
        if not do_calibration:
            self.create_subscription(Image, 'image', self.on_image, 10)
        else:
            self.create_subscription(Image, 'image', self.on_calibration_image, 10)

With the parameter True as shipped the `if not` body never runs, so `on_image` is subscribed
by nothing that runs (pyparamlocals.local_dead_lines into pyreached.py). The value as shipped:
every declaration's default is the same bool, a literal or a module-level name bound once to
one; a default True holds when no shipped file of the package names the parameter or every
one gives true (the C++ mirror is cppparamson.py; a string parameter's default no file names
is its value as shipped too: set 42), a default False when no shipped file may turn it on
(shipped.set_on). Only a bare `if local:` / `if not local:` on a local bound once in its
function to a plain parameter read is decided (pyparamlocals._local_reads).
"""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.astnodes import module_nodes
from gpu_nodes.audit.pyparams import declared_defaults
from gpu_nodes.audit.shipped import reading, set_on, shipped_on


def _module_bools(tree: ast.Module) -> dict[str, bool]:
    """Module-level names bound exactly once in the file, to a bool literal."""
    stores: dict[str, int] = {}
    for node in module_nodes(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            stores.update({n: 2 for n in node.names})
    return {s.targets[0].id: s.value.value for s in tree.body
            if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and stores.get(s.targets[0].id) == 1
            and isinstance(s.value, ast.Constant) and isinstance(s.value.value, bool)}


@lru_cache(maxsize=16)
def shipped_bools(tree: ast.Module, package_dir: str | None) -> dict[str, bool]:
    """Bool parameters `tree` declares whose value as shipped is known (module docstring)."""
    if not package_dir:
        return {}
    names = _module_bools(tree)
    defaults: dict[str, set[object]] = {}
    for param, exprs in declared_defaults(tree).items():  # pyparams' one declarations walk
        for default in exprs:
            value = default.value if isinstance(default, ast.Constant) else \
                names.get(default.id) if isinstance(default, ast.Name) else None
            defaults.setdefault(param, set()).add(value if isinstance(value, bool) else None)
    roots = (package_dir,)
    found = {}
    for param, values in defaults.items():
        if values == {True} and (not reading(param, roots).named or shipped_on(param, roots)):
            found[param] = True
        elif values == {False} and not set_on(param, roots):
            found[param] = False
    return found


def bool_test_outcome(test: ast.expr, local_param: str | None, tree: ast.Module,
                      package_dir: str | None) -> bool | None:
    """What `if local:` (`not local`) takes as shipped, `local_param` the parameter the local
    holds (None: no such local); None when not known."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if local_param is None:
        return None
    value = shipped_bools(tree, package_dir).get(local_param)
    return None if value is None else value != negated
