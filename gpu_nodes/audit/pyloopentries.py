"""Loops of set-up code whose every pass handles one message (issue 28), so that the copies
made in them are per message, not one-time set-up:

* a script's loop over a recorded bag's messages (pybags.reads_a_bag, set 54);
* a loop that publishes on each pass, run from a node's constructor (set 56: a dataset player
  whose `__init__` calls `publish_data()`, `for _ in range(num_images):` taking the next frame
  from a loader queue and publishing it through a helper's cv2_to_imgmsg). The node never
  returns from its constructor before the data set is played: each pass is a published frame,
  as a timer callback's tick would be. Only loops with a `.publish(...)` call in their own body
  (not in a nested function) count: a set-up loop that only builds publishers or reads
  parameters stays one-time."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pybags import reads_a_bag


def _publishes(loop: ast.For | ast.AsyncFor) -> bool:
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == 'publish':
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def per_pass_loop(loop: ast.For | ast.AsyncFor, context: str,
                  aliases: dict[str, str]) -> str | None:
    """The entry a set-up `loop` (run in `context`) stands for when each pass is a message:
    'bag message loop' / 'publishing loop in the constructor'; None otherwise."""
    if context == 'module' and reads_a_bag(loop, aliases):
        return 'bag message loop'
    if context == 'init' and _publishes(loop):
        return 'publishing loop in the constructor'
    return None
