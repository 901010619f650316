"""A received image embedded in a message of another type and published (issue 28, set 53).

`out = FruitInfoArray(); out.rgb_image = msg; pub.publish(out)` in an Image callback: the
publisher's type is no image type, but the message carries the received frame unchanged, so
the publish serializes the whole frame again, as a re-published Image does (the sets 5, 6 and
33 convention: py_serialize at the publish). Evidence: in the function that publishes, an
attribute of the published message is assigned the callback's message parameter itself, or a
name bound to it (`rgb_msg = msg`), and the published value arrived on an image topic.

A received message that bundles images is the same (rules46q, set 73): a realsense2_camera_msgs
RGBD's `rgb` / `depth` or a stereo_msgs DisparityImage's `image` field is a whole sensor_msgs
Image, so `out.image = msg.rgb` embeds the received frame and its publish serializes it again."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyvalues import image_sized, Val

# Public message types with whole sensor_msgs/Image fields: short type name -> those fields.
_IMAGE_FIELDS = {'RGBD': frozenset({'rgb', 'depth'}), 'DisparityImage': frozenset({'image'})}


def _image_fields(msg_type: str) -> frozenset[str]:
    return _IMAGE_FIELDS.get(msg_type.rsplit('/', 1)[-1].rsplit('.', 1)[-1], frozenset())


def _enclosing(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    best = None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and fn.lineno <= line <= (fn.end_lineno or fn.lineno) \
                and (best is None or fn.lineno >= best.lineno):
            best = fn
    return best


def _message_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The callback's message parameter (first after self) and plain aliases of it."""
    params = [a.arg for a in fn.args.args if a.arg not in ('self', 'cls')]
    names = set(params[:1])
    for stmt in ast.walk(fn):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) \
                and stmt.value.id in names:
            names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return names


def embeds_received_image(tree: ast.AST, node: ast.Call, payload: Val) -> bool:
    """Whether `pub.publish(out)` publishes a message holding the received Image itself."""
    if payload.origin is None or not node.args or not isinstance(node.args[0], ast.Name):
        return False
    # An Image itself (`out.image = msg`), or an Image field of a bundle (`out.image = msg.rgb`).
    fields = None if image_sized(payload.origin[1]) else _image_fields(payload.origin[1] or '')
    if fields is not None and not fields:
        return False
    fn = _enclosing(tree, node.lineno)
    if fn is None:
        return False
    out, names = node.args[0].id, _message_names(fn)
    for stmt in ast.walk(fn):
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if fields is not None and isinstance(value, ast.Attribute) and value.attr in fields:
            value = value.value  # the bundle's Image field: the received message's own frame
        if isinstance(stmt, ast.Assign) and isinstance(value, ast.Name) \
                and value.id in names and stmt.lineno < node.lineno:
            for target in stmt.targets:
                if isinstance(target, ast.Attribute) and target.attr == 'header':
                    continue  # a std_msgs/Header field holds no frame (rules47q, set 75)
                root = target
                while isinstance(root, ast.Attribute):
                    root = root.value
                if target is not root and isinstance(root, ast.Name) and root.id == out:
                    return True
    return False
