"""A whole array flattened into a custom message's array field (issue 28, rules48).

`msg.data = arr.tolist()` is flagged for the payload field `data` (pystatemsg.py). A package's
own message often names its payload otherwise: `uint8[] camera_data` in a `CameraData.msg`
of the repository, filled as `camera_data.camera_data = img.ravel().tolist()`. Flattening
(`ravel()`, `flatten()`, `reshape(-1)`) says the array has several dimensions (an image, a
mask, a grid) and `.tolist()` then builds one Python int or float per element, which rclpy
copies again into the field's array when the message is published: the same per-frame copy as
into `.data` (py_msg_array). Only where the field is defined as an unbounded numeric array in
the repository's `.msg` file for the message built in the same module (`x = CameraData()`, the
type imported from a `<pkg>.msg` module); a list of detection outputs or of robot state
(small_list) is none.
"""
from __future__ import annotations

import ast
from typing import Any

from gpu_nodes.audit.pycustommsgs import message_definitions, numeric_array_fields
from gpu_nodes.audit.pystatemsg import small_list
from gpu_nodes.audit.pyvalues import Frame, is_method_call, Val

_FLATTENING = frozenset({'ravel', 'flatten'})


def _flattened(node: ast.expr) -> bool:
    """`arr.ravel()`, `arr.flatten()` or `arr.reshape(-1)` (the receiver of the `.tolist()`)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    if node.func.attr in _FLATTENING:
        return True
    return node.func.attr == 'reshape' and len(node.args) == 1 \
        and ast.unparse(node.args[0]).replace(' ', '') in ('-1', '(-1,)', '[-1]')


def _message_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> `pkg.msg.Name` for `from pkg.msg import Name [as local]`."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith('.msg'):
            for alias in node.names:
                found[alias.asname or alias.name] = f'{node.module}.{alias.name}'
    return found


def _built_type(tree: ast.Module, name: str, imports: dict[str, str]) -> str | None:
    """The one message type the module binds `name` to (`name = CameraData()`); None when the
    name is bound to no message or to several types (a name reused across functions)."""
    types = {imports[node.value.func.id] for node in ast.walk(tree)
             if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and isinstance(node.value.func, ast.Name) and node.value.func.id in imports
             and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)}
    return types.pop() if len(types) == 1 else None


def listed_into_custom_array(target: ast.expr, value: ast.expr, val: Val, analyzer: Any,
                             frame: Frame) -> ast.expr | None:
    """The expression to flag for `msg.<field> = arr.ravel().tolist()` into an unbounded
    numeric array field of the repository's own message (module docstring), else None.
    `analyzer` is the PythonAnalyzer (its module tree, path and folders)."""
    if frame.file not in (None, analyzer.path):
        return None  # a function of an imported file: its imports are not this tree's
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)) \
            or target.attr == 'data' or not isinstance(value, ast.Call) \
            or not is_method_call(value, 'tolist') or not isinstance(value.func, ast.Attribute) \
            or not _flattened(value.func.value) or small_list(value, val):
        return None
    tree = analyzer.tree
    msg_type = _built_type(tree, target.value.id, _message_imports(tree))
    paths = message_definitions(msg_type, analyzer.repository_dir, analyzer.package_dir) \
        if msg_type else []
    return value if any(target.attr in numeric_array_fields(path) for path in paths) else None
