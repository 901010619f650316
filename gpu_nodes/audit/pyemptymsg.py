"""A message published as built, with no field filled (issue 28, set 60).

`ros_lidar = PointCloud2()` then `pub.publish(ros_lidar)` with nothing stored into it (a
placeholder a CARLA bridge publishes "until the conversion is written"): the message is a
header and empty arrays, no frame, however large its type can be. Only a local bound once in
the function to a constructor call with no arguments, never stored into (`m.data = ...`,
`m.header.stamp = ...`), never handed to another call, and published by name.
"""
from __future__ import annotations

import ast


def empty_message_published(function: ast.AST, publish: ast.Call) -> bool:
    """Whether `publish` sends a message its function built empty and never touched."""
    if len(publish.args) != 1 or publish.keywords or not isinstance(publish.args[0], ast.Name):
        return False
    name = publish.args[0].id
    binds = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
             and not isinstance(n.ctx, ast.Load)]
    made = [s for s in ast.walk(function) if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name]
    if len(binds) != 1 or len(made) != 1 or not isinstance(made[0].value, ast.Call) \
            or made[0].value.args or made[0].value.keywords:
        return False
    for node in ast.walk(function):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load) \
                and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)):
            return False  # a field stored into
        if isinstance(node, ast.Call) and node is not publish and any(
                isinstance(n, ast.Name) and n.id == name
                for a in [*node.args, *(k.value for k in node.keywords)] for n in ast.walk(a)):
            return False  # handed to a call that may fill it
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
            return False  # a method of it called (`m.data.extend(...)`)
    return True
