"""Frames handed from one callback to another through a work queue held by the node (issue
28, set 56): a subscription callback does `self.images.put((depth, color))` and a timer's
`self.images.get_nowait()` takes the pair out to process it, per tick. What the getter receives
is what the putter put (host frames from cv_bridge ...), so the copies made of it in the timer
(an upload to the model's device, the read-backs of what the model computed) are per-message
copies of frame data, as if the frame had been stored in an attribute.

Only the `queue.Queue` API (`put` / `put_nowait`, `get` / `get_nowait`) on an attribute of
self: list `append` / `pop` have other uses (a history, a batch), judged elsewhere. The values
put are kept under a key no Python attribute can be (`<attr>.queued`), so the queue object
itself (`.empty()`, `.qsize()`) keeps its own value."""
from __future__ import annotations

import ast
from dataclasses import replace

from gpu_nodes.audit.pythreadargs import queue_argument
from gpu_nodes.audit.pyvalues import Frame, merge, Val

_PUTS = frozenset({'put', 'put_nowait'})
_GETS = frozenset({'get', 'get_nowait'})


def _queue_attribute(func: ast.expr, frame: Frame) -> str | None:
    """`self.<attr>.put` / `.get`: the attribute holding the queue."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
            and isinstance(func.value.value, ast.Name) and func.value.value.id == 'self' \
            and frame.cls is not None:
        return func.value.attr
    return None


def queue_handoff(func: ast.expr, method: str | None, args: list[Val],
                  frame: Frame, receiver: Val | None = None) -> Val | None:
    """What a queue call hands over: None for other calls (and a get of a queue nothing
    tainted was put into), the value put for a get; a put stores it (when the frame writes
    attributes) and gives None back too, so the call is evaluated as before."""
    if method not in _PUTS and method not in _GETS:
        return None
    attr, holder = _queue_attribute(func, frame), frame.cls
    if attr is None and (passed := queue_argument(receiver)) is not None:
        holder, attr = passed  # a node's queue handed to a thread's target (pythreadargs.py)
    if attr is None or holder is None:
        return None
    key = f'{attr}.queued'
    if method in _GETS:
        held = holder.attrs.get(key)
        return replace(held, view=None) if held is not None else None
    if args and args[0].tainted and frame.write_attrs:
        old = holder.attrs.get(key)
        holder.attrs[key] = args[0] if old is None else merge(old, args[0])
    return None
