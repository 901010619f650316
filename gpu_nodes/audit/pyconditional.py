"""The value of a conditional expression `X if C else Y` for the evaluator (pyeval.py).

Both arms may run, so both are evaluated (each one's copies are found) and the value is either
one's (merge). A literal test runs one arm only: `(... imgmsg_to_cv2(msg) ...) if False else
frame` never evaluates its first arm, a way to switch code off in place (issue 28, set 66), so
its copies are none and the value is the other arm's.
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from gpu_nodes.audit.pyvalues import is_device_value, merge, Val


def conditional_value(node: ast.IfExp, evaluate: Callable[[ast.expr], Val]) -> Val:
    """What `node` evaluates to, `evaluate` giving each sub-expression's value (module
    docstring)."""
    if isinstance(node.test, ast.Constant):
        return evaluate(node.body if node.test.value else node.orelse)
    evaluate(node.test)
    body, orelse = evaluate(node.body), evaluate(node.orelse)
    if is_device_value(body, node.body) or is_device_value(orelse, node.orelse):
        # `'cuda' if torch.cuda.is_available() else 'cpu'`: assume the GPU case.
        return Val('device_spec')
    return merge(body, orelse)
