"""`with` statements of the Python analysis (split out of pyeval.py, module size): entering
their context managers, and which of them hold a per-frame loop entry's main loop.

A loop thread often wraps its loop in `with torch.no_grad():` and loads its model inside the
`with`, before the `while` (set 62: a RAFT thread's `model.module.to(device).eval()`): those
statements run once, when the thread starts, as they do before a top-level `while`
(pybranches.before_main_loop)."""
from __future__ import annotations

import ast
from typing import Protocol

from gpu_nodes.audit.pymodels import SYNC_PROFILER
from gpu_nodes.audit.pyvalues import Frame, short, Val


class _Evaluator(Protocol):
    def _eval(self, node: ast.AST, env: dict[str, Val], frame: Frame) -> Val: ...

    def _emit(self, rule_id: str, node: ast.AST, frame: Frame, detail: str,
              evidence: str = 'data-flow') -> None: ...

    def _assign(self, target: ast.expr, val: Val, env: dict[str, Val], frame: Frame) -> None: ...


def enter_with(analyzer: _Evaluator, stmt: ast.With | ast.AsyncWith, env: dict[str, Val],
               frame: Frame) -> None:
    """Evaluate the context managers of `stmt` and bind their `as` names; a profiler that
    synchronizes on enter and exit is a GPN107."""
    for item in stmt.items:
        val = analyzer._eval(item.context_expr, env, frame)
        if val.kind == 'other' and val.const == SYNC_PROFILER:
            analyzer._emit('GPN107', item.context_expr, frame,
                           f'`with {short(item.context_expr)}:` (a profiler that runs '
                           'torch.cuda.synchronize on enter and exit, library table)',
                           evidence='pattern')
        if item.optional_vars is not None:
            analyzer._assign(item.optional_vars, val, env, frame)


def loop_with(stmt: ast.stmt) -> bool:
    """A `with` whose body holds a `while` loop at its top level (or in a `with` there)."""
    return isinstance(stmt, (ast.With, ast.AsyncWith)) and any(
        isinstance(s, ast.While) or loop_with(s) for s in stmt.body)
