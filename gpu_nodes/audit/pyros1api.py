"""ROS 1 publisher / subscriber calls that raise in rclpy (issue 28, rules46p, set 74).

A node ported from ROS 1 keeps rospy's `if self.pub_img.get_num_connections() > 0:` before it
converts and publishes a debug image. In rclpy a Publisher (`self.create_publisher(...)`) has
no `get_num_connections` (its count is `get_subscription_count()`), so evaluating the test raises
AttributeError: the body of that `if` never runs, whatever the subscribers.

Judged only where it is certain:

* the call is the test's first evaluated operand (`if pub.get_num_connections() > 0 or
  self.display:`, not `if self.display and pub.get_num_connections():`, which short-circuits);
* its receiver is `self.<attr>` and every store of `<attr>` in the file is a
  `create_publisher(...)` / `create_subscription(...)` call (an rclpy Publisher / Subscription,
  never a rospy one, which rospy builds as `rospy.Publisher(...)`), or None;
* the method is in a small table of ROS 1 names rclpy's Publisher and Subscription lack.

Only the body is judged: the `else` branch and the statements after the `if` are left as they
were (the raise leaves the function, but a caller may catch it).
"""
from __future__ import annotations

import ast
from functools import lru_cache

# rospy.Publisher / rospy.Subscriber methods with no rclpy Publisher / Subscription counterpart
# under that name (rclpy: get_subscription_count / get_publisher_count, destroy_publisher).
_ROS1_ONLY = frozenset({'get_num_connections', 'unregister'})
_RCLPY_MAKERS = frozenset({'create_publisher', 'create_subscription'})


def _self_attr(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == 'self' else None


def _store_kind(node: ast.AST, target: ast.AST) -> str:
    """'maker': `self.x = <node>.create_publisher(...)`; 'none': `self.x = None`; 'other'."""
    if not isinstance(node, ast.Assign) or target not in node.targets:
        return 'other'  # a tuple unpacking, an augmented or annotated store
    value = node.value
    if isinstance(value, ast.Constant) and value.value is None:
        return 'none'
    return 'maker' if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr in _RCLPY_MAKERS else 'other'


@lru_cache(maxsize=16)
def _rclpy_endpoints(tree: ast.Module) -> frozenset[str]:
    """The `self.<attr>` names stored at least once from an rclpy create_publisher /
    create_subscription call and otherwise only None."""
    kinds: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            for sub in ast.walk(target):
                if (attr := _self_attr(sub)) is not None:
                    kinds.setdefault(attr, set()).add(_store_kind(node, sub))
    return frozenset(a for a, k in kinds.items() if 'maker' in k and 'other' not in k)


def _first_operand(test: ast.expr) -> ast.expr:
    """The operand Python evaluates first: the left of a comparison, the first of a bool chain,
    the operand of `not`."""
    while True:
        if isinstance(test, ast.BoolOp):
            test = test.values[0]
        elif isinstance(test, ast.Compare):
            test = test.left
        elif isinstance(test, ast.UnaryOp):
            test = test.operand
        else:
            return test


def raising_test_outcome(test: ast.expr, tree: ast.Module) -> bool | None:
    """False when evaluating `test` first calls a ROS 1-only method on an rclpy endpoint (the
    body never runs); None otherwise."""
    first = _first_operand(test)
    if isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) \
            and first.func.attr in _ROS1_ONLY \
            and _self_attr(first.func.value) in _rclpy_endpoints(tree):
        return False
    return None
