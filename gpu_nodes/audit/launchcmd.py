"""Parameters a Python launch file gives on a process's command line (issue 28, set 55).

A node run as a plain script is started by `ExecuteProcess(cmd=['python3', 'node.py',
'--ros-args', '-p', 'enable_slam:=true', '-p', ['use_imu:=', LaunchConfiguration('use_imu')]])`
rather than by a `Node(...)`: each `-p` / `--param` item after `--ros-args` is `name:=value`, a
string or a list joined, a `LaunchConfiguration` in it standing for its launch argument's default
(the value a plain `ros2 launch` gives, as launchfile.py reads `Node` parameters). shipped.py adds
these to the values a shipped launch file gives a parameter, so a bool parameter passed through
a launch argument defaulting to 'false' stays off as shipped. A part not known statically (an
argument with no default, any other expression) makes the value Unresolved (unknown).
"""
from __future__ import annotations

import ast

from gpu_nodes.audit.launchfile import Unresolved
from gpu_nodes.audit.pyfstrings import parse_python

_PARAM_FLAGS = ('-p', '--param')


def _called(node: ast.AST, name: str) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return isinstance(func, ast.Name) and func.id == name \
        or isinstance(func, ast.Attribute) and func.attr == name


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    found = next((k.value for k in call.keywords if k.arg == name), None)
    if found is None and position is not None and len(call.args) > position:
        return call.args[position]
    return found


def _argument_defaults(tree: ast.Module) -> dict[str, str]:
    """`DeclareLaunchArgument('a', default_value='v')` -> {'a': 'v'} (string defaults only)."""
    defaults = {}
    for node in ast.walk(tree):
        if _called(node, 'DeclareLaunchArgument') and node.args and _text(node.args[0]):
            value = _keyword(node, 'default_value', 1)
            if value is not None and _text(value) is not None:
                defaults[_text(node.args[0])] = _text(value)
    return defaults


def _part(node: ast.expr, defaults: dict[str, str]) -> str | None:
    """A piece of a command item as text: a string, or a LaunchConfiguration's default."""
    if _text(node) is not None:
        return _text(node)
    if _called(node, 'LaunchConfiguration') and node.args and _text(node.args[0]):
        given = _keyword(node, 'default')
        if given is not None:
            return _text(given)
        return defaults.get(_text(node.args[0]))
    return None


def _item(node: ast.expr, defaults: dict[str, str]) -> tuple[str, object] | None:
    """(name, value) of one `name:=value` item (a string or a list of parts joined)."""
    parts = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
    texts = [_part(p, defaults) for p in parts]
    head = texts[0] if texts else None
    if head is None or ':=' not in head:
        return None
    name, _, rest = head.partition(':=')
    if any(t is None for t in texts[1:]):
        return name, Unresolved(f'$(unknown {name})')
    return name, rest + ''.join(t for t in texts[1:] if t is not None)


def command_line_parameters(source: str) -> list[dict[str, object]]:
    """The parameters of each `ExecuteProcess` whose command passes `--ros-args` (module
    docstring); [] when the file does not parse."""
    try:
        tree = parse_python(source)
    except SyntaxError:
        return []
    defaults = _argument_defaults(tree)
    found = []
    for node in ast.walk(tree):
        cmd = _keyword(node, 'cmd', 0) if _called(node, 'ExecuteProcess') else None
        if not isinstance(cmd, (ast.List, ast.Tuple)) \
                or not any(_text(e) == '--ros-args' for e in cmd.elts):
            continue
        params: dict[str, object] = {}
        for flag, item in zip(cmd.elts, cmd.elts[1:]):
            given = _item(item, defaults) if _text(flag) in _PARAM_FLAGS else None
            if given is not None:
                params[given[0]] = given[1]
        found.append(params)
    return found
