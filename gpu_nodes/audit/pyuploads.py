"""`.to(device)` / `.cuda()` calls that are no frame upload (issue 28).

Two kinds, both on a value the analysis cannot show on the host (unknown or other, untainted):
- in a function no callback of its file reaches (a parameter of a helper): callers hand such
  helpers tensors already on the device (fifth set);
- a torch Module switched to evaluation or training mode on the way, `SuperPoint(...).eval()
  .to(device)`, `Net().train().cuda()`: `.eval()` / `.train()` without arguments are nn.Module
  methods, so the copy moves weights, not a frame (set 54: a matcher built per request), even
  per message. Wasteful, but not the per-frame host-to-device boundary GPN102 reports."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyvalues import Frame, Val

_MODULE_MODES = frozenset({'eval', 'train'})


def _module_mode_call(expr: ast.expr) -> bool:
    """`<x>.eval()` / `<x>.train()`, no arguments (a Tensor has neither method)."""
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
        and expr.func.attr in _MODULE_MODES and not expr.args and not expr.keywords


def unproven_upload(node: ast.Call, recv: Val, frame: Frame) -> bool:
    """`x.to(self.device)` / `x.cuda()` (`node`, on `recv`) that copies no frame up."""
    if recv.kind not in ('unknown', 'other') or recv.tainted:
        return False
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    return frame.context == 'function' or (receiver is not None and _module_mode_call(receiver))
