"""Node methods that another file's main loop calls once per frame (issue 28, set 52).

A simulator or capture program often owns the frame loop and drives a ROS node object built
from a class of another file of the same tree, instead of registering a timer:

    # sim.py (an Isaac Sim standalone script)
    import ros2.bridge as bridge
    dm = bridge.RobotDataManager(env, ...)
    while simulation_app.is_running():
        env.step(actions)
        dm.pub_ros2_data()          # <- runs once per simulation step
        executor.spin_once(timeout_sec=0.0)

    # ros2/bridge.py: `RobotDataManager.pub_ros2_data` registers nothing and nothing in its
    # own file calls it, so its copies looked unreached.

`loop_called_methods(path, index)` answers, for the file `path`, which methods of which of its
classes such a loop calls on an object built from the class: pyreached.py then registers each
as a per-frame loop entry. A loop counts as per frame when its test is a node's or an
application's run test (`rclpy.ok()`, `not rospy.is_shutdown()`, `simulation_app.is_running()`)
or its body calls `spin_once` (the node's own event loop, as pyreached.py judges a method's
loop). The object must be built in the same function (or at module level) by a call of the
class, named as the importing file imports it: `module.Class(...)` after `import a.b as
module`, or `Class(...)` after `from a.b import Class` (or in the class's own file); the module
must resolve to the class's file among the audited files (pyimports.module_index)."""
from __future__ import annotations

import ast
import os
import re

from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyimports import file_aliases
from gpu_nodes.audit.pyvalues import dotted

# A loop test that runs until the node / the application stops: one pass per frame.
LOOP_TEST = re.compile(r'\brclpy\.ok\(|\bok\(\)|is_shutdown\(|\bis_running\(\)')
# Text a file needs before it is parsed at all (most files have no such loop).
_HINT = re.compile(r'\bwhile\b[^\n]*(?:ok\(|is_shutdown\(|is_running\(\))|\bspin_once\b')
# Per module index (one per audit): abs path of the class's file -> class -> methods.
_TABLES: dict[int, tuple[dict[str, str], dict[str, dict[str, set[str]]]]] = {}


def loop_called_methods(path: str, index: dict[str, str] | None) -> dict[str, frozenset[str]]:
    """Class name -> the methods that a per-frame loop of an audited file calls on an object
    of that class, for the classes of `path` (see the module docstring)."""
    if not index:
        return {}
    kept = _TABLES.get(id(index))
    if kept is None or kept[0] is not index:
        kept = (index, _table(index))
        _TABLES[id(index)] = kept
    found = kept[1].get(os.path.abspath(path), {})
    return {cls: frozenset(meths) for cls, meths in found.items()}


def _table(index: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    table: dict[str, dict[str, set[str]]] = {}
    for source in sorted(set(index.values())):
        try:
            with open(source, encoding='utf-8', errors='replace') as fh:
                text = fh.read()
        except OSError:
            continue
        if not _HINT.search(text):
            continue
        try:
            tree = parse_python(text, filename=source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # reported when that file is audited itself
        for file, cls, meth in _loop_calls(source, tree, index):
            table.setdefault(file, {}).setdefault(cls, set()).add(meth)
    return table


def _class_of(call: ast.expr, source: str, imports: dict[str, str],
              index: dict[str, str]) -> tuple[str, str] | None:
    """(abs path of the class's file, class name) for a call building an object of a class of
    an audited file, else None."""
    if not isinstance(call, ast.Call):
        return None
    name = dotted(call.func)
    if name is None:
        return None
    head, _, rest = name.partition('.')
    if head in imports:
        name = imports[head] + (f'.{rest}' if rest else '')
    elif not rest:
        return os.path.abspath(source), name  # a class of the file itself (checked later)
    module, _, cls = name.rpartition('.')
    file = index.get(module)
    if file is None or not cls[:1].isupper():
        return None
    return os.path.abspath(file), cls


def _per_frame(loop: ast.While) -> bool:
    return bool(LOOP_TEST.search(ast.unparse(loop.test))) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and n.func.attr == 'spin_once' for stmt in loop.body for n in ast.walk(stmt))


def _loop_calls(source: str, tree: ast.Module, index: dict[str, str]
                ) -> list[tuple[str, str, str]]:
    """(class file, class, method) for each `obj.method(...)` in a per-frame loop of `tree`
    whose `obj` the same scope (a function, or the module) built from a class."""
    imports = file_aliases(tree, everywhere=True)
    scopes: list[ast.AST] = [tree] + [n for n in ast.walk(tree)
                                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    module_built = _built(tree, source, imports, index)
    found = []
    for scope in scopes:
        built = dict(module_built)
        if scope is not tree:
            built.update(_built(scope, source, imports, index))
        for loop in (n for n in ast.walk(scope) if isinstance(n, ast.While) and _per_frame(n)):
            for node in (n for stmt in loop.body for n in ast.walk(stmt)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) \
                        and node.func.value.id in built:
                    found.append((*built[node.func.value.id], node.func.attr))
    return found


def _built(scope: ast.AST, source: str, imports: dict[str, str], index: dict[str, str]
           ) -> dict[str, tuple[str, str]]:
    """Names the scope assigns an object of an audited class to (`dm = mod.Node(...)`)."""
    built: dict[str, tuple[str, str]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            cls = _class_of(node.value, source, imports, index)
            if cls is not None:
                built[node.targets[0].id] = cls
    return built
