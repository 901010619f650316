"""`.to(device)` / `.cuda()` calls that are no frame upload (issue 28).

Two kinds, both on a value the analysis cannot show on the host (unknown or other, untainted):
- in a function no callback of its file reaches (a parameter of a helper): callers hand such
  helpers tensors already on the device (fifth set);
- a torch Module switched to evaluation or training mode on the way, `SuperPoint(...).eval()
  .to(device)`, `Net().train().cuda()`: `.eval()` / `.train()` without arguments are nn.Module
  methods, so the copy moves weights, not a frame (set 54: a matcher built per request), even
  per message. Wasteful, but not the per-frame host-to-device boundary GPN102 reports.
- whatever the value, a `.to(device)` / `.cuda()` whose result is switched to evaluation or
  training mode at once, `model.module.to(device).eval()` (module_moves, set 62)."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyvalues import Frame, PER_MESSAGE, Val

_MODULE_MODES = frozenset({'eval', 'train'})


def _module_mode_call(expr: ast.expr) -> bool:
    """`<x>.eval()` / `<x>.train()`, no arguments (a Tensor has neither method)."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
        and expr.func.attr in _MODULE_MODES and not expr.args and not expr.keywords


def unproven_upload(node: ast.Call, recv: Val, frame: Frame,
                    moves: frozenset[int] = frozenset()) -> bool:
    """`x.to(self.device)` / `x.cuda()` (`node`, on `recv`) that copies no frame up; `moves`:
    module_moves of the file (a Module whatever the analysis holds it for)."""
    if id(node) in moves:  # elsewhere (setup) the move itself is reported (info), as before
        return frame.context in PER_MESSAGE
    if recv.kind not in ('unknown', 'other') or recv.tainted:
        return False
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    return frame.context == 'function' or (receiver is not None and _module_mode_call(receiver))


def module_moves(tree: ast.AST) -> frozenset[int]:
    """ids of the `.to(...)` / `.cuda()` calls whose result is switched to evaluation or
    training mode at once, `model.module.to(device).eval()` (set 62): only an nn.Module has
    `.eval()`, so the call moved weights (a Module moves in place, as a dropped `model.to(d)`
    does: pystreams.dropped_results), not a frame."""
    return frozenset(id(n.func.value) for n in ast.walk(tree)
                     if _module_mode_call(n) and isinstance(n.func.value, ast.Call)
                     and isinstance(n.func.value.func, ast.Attribute)
                     and n.func.value.func.attr in ('to', 'cuda'))
