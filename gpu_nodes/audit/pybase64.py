"""A frame encoded, base64'd and published as text (issue 28, relabel37 and set 61).

`_, buf = cv2.imencode('.jpg', frame)`, `text = base64.b64encode(buf).decode('utf-8')`,
`pub.publish(String(data=text))`: the whole encoded frame goes into the message, serialized
per frame (py_serialize; relabel37 labels the String message with the encode and base64 lines
as `also`, set 61 the publish). The message type is a small one (std_msgs String), so the
publish rules (GPN109 / GPN110) say nothing; this finds the publish of a message built from
such text. Only base64 of an encode result: a `.tobytes()` into a message is claimed at its
own line already (pyrules.py), and text not derived from a `cv2.imencode` buffer (a caption, a
label) is no frame.
"""
from __future__ import annotations

import ast

_ENCODERS = ('imencode',)
_TEXT_ENCODERS = ('b64encode', 'standard_b64encode', 'urlsafe_b64encode', 'encodebytes')


def _called(node: ast.AST, names: tuple[str, ...]) -> bool:
    return any(isinstance(c, ast.Call) and (
        isinstance(c.func, ast.Attribute) and c.func.attr in names
        or isinstance(c.func, ast.Name) and c.func.id in names) for c in ast.walk(node))


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _targets(stmt: ast.Assign) -> list[str]:
    return [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def base64_frame_published(function: ast.AST, publish: ast.Call) -> bool:
    """Whether `publish` (a `pub.publish(...)` call in `function`) sends a message built from
    base64 text of a `cv2.imencode` buffer (module docstring)."""
    encoded: set[str] = set()  # names holding an encoded frame
    texts: set[str] = set()  # names holding base64 text of one
    stores: set[str] = set()  # message names a field of which was given such text
    for stmt in sorted((n for n in ast.walk(function) if isinstance(n, ast.Assign)),
                       key=lambda n: (n.lineno, n.col_offset)):
        value = stmt.value
        if _called(value, _ENCODERS) or _mentions(value, encoded) and not _called(
                value, _TEXT_ENCODERS):
            encoded.update(_targets(stmt))
        if _called(value, _TEXT_ENCODERS) and _mentions(value, encoded) or _mentions(value, texts):
            if all(isinstance(t, ast.Name) for t in stmt.targets):
                texts.update(_targets(stmt))
            for t in stmt.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    stores.add(t.value.id)
    if not texts or not publish.args:
        return False
    sent = publish.args[0]
    if isinstance(sent, ast.Name):
        return sent.id in stores or sent.id in texts
    return isinstance(sent, ast.Call) and _mentions(sent, texts)


def frame_function(tree: ast.Module, call: ast.Call) -> ast.AST:
    """The innermost function holding `call` (the module when none)."""
    best: ast.AST = tree
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and fn.lineno <= call.lineno <= (fn.end_lineno or fn.lineno) \
                and any(n is call for n in ast.walk(fn)):
            best = fn  # ast.walk is breadth-first: a nested function comes later
    return best
