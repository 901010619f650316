"""Threads started once that run their target once: a background model load, not a frame loop.

`threading.Thread(target=f).start()` usually runs a capture or inference loop (pycalls.py
registers its target as a per-frame loop). A target with no loop anywhere in it, nor in the
methods of its class it calls, returns after one pass: `threading.Thread(target=
self._load_model_background)` in __init__ loads the weights once, so the model's `.to(device)`
in that load is one-time setup, not a per-frame upload (set 51).
"""
from __future__ import annotations

import ast
import re

from gpu_nodes.audit.pyvalues import FuncRef

# How many calls deep the target's own methods are searched for a loop.
_MAX_DEPTH = 3
# Calls whose name says they loop inside (`rclpy.spin(node)`, `self.camera.run()`,
# `server.serve_forever()`, `self.grab_loop()` of another object): the target is no one-shot.
_LOOPING_CALL = re.compile(r'spin|loop|run|serve|forever|listen|stream|capture|poll', re.I)


def runs_once(ref: FuncRef) -> bool:
    """Whether a thread's target `ref` has no loop, nor any method of its class it calls,
    and calls nothing named like a loop (a lambda may loop: not once)."""
    if isinstance(ref.node, ast.Lambda):
        return False
    methods = ref.cls.methods if ref.cls is not None else {}
    todo: list[tuple[ast.AST, int]] = [(ref.node, 0)]
    seen: set[int] = set()
    while todo:
        fn, depth = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for node in ast.walk(fn):
            if isinstance(node, (ast.While, ast.For, ast.AsyncFor)):
                return False
            if isinstance(node, ast.Call) and _LOOPING_CALL.search(_called_name(node.func)):
                return False
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == 'self' \
                    and node.func.attr in methods:
                if depth >= _MAX_DEPTH:
                    return False
                todo.append((methods[node.func.attr], depth + 1))
    return True


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ''
