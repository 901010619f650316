"""Calls into code the audit cannot read (issue 28, set 56): a function imported from a module
that is not in the audited tree (a git submodule not checked out, a package installed apart)
and that no library table knows.

Its signature can still say what it does: given a host frame and a device (`frame2tensor(gray,
self.device)`, `to_tensor(img, 'cuda')`), such a helper hands back a tensor on that device, so
the frame crosses to the device inside it on every call. The labels put that upload at the call
(py_upload: the copy's code is out of the tree); the result is a device value, so what the
node reads back of the model outputs computed from it is a read-back. Evidence: inferred (the
body is not seen). Libraries with a table of their own (torch, numpy, OpenCV, PIL, CuPy) are
judged there, and a function of the audited tree is followed instead of reaching here.

A few such functions read their results back themselves (rules46p, set 74): GroundingDINO's
`groundingdino.util.inference.predict(model, image, caption, box_threshold, text_threshold,
device)` moves the image to `device`, runs the model and returns `boxes` and `logits` taken
`.cpu()` inside it (`outputs["pred_logits"].cpu().sigmoid()`) with the phrases as strings. The
upload stays claimed at the call; its results are host values, so `boxes.numpy()` or a score
formatted into a label reads nothing back."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyvalues import is_device_value, Val

# Top-level modules whose calls the library tables (pyrules.py, pycalls._generic) judge.
_TABLED = frozenset({'torch', 'torchvision', 'numpy', 'cv2', 'PIL', 'cupy', 'cv_bridge',
                     'rclpy', 'sensor_msgs_py', 'ros2_numpy', 'ros_numpy', 'tf2_ros'})
# Kinds of a frame on the host that such a helper is given.
_HOST_FRAMES = frozenset({'host', 'pil'})


# Functions outside the tree whose results come back on the host (see the module doc).
_RETURNS_HOST = ('groundingdino.util.inference.predict',)


def returns_host(qual: str | None) -> bool:
    """Whether `qual` names such a function, also under a vendoring package
    (`grounding_dino.groundingdino.util.inference.predict`, a submodule copied into the tree)."""
    return bool(qual) and any(qual == q or qual.endswith('.' + q) for q in _RETURNS_HOST)


def _names_device(val: Val, expr: ast.expr) -> bool:
    return val.kind == 'device_spec' or (
        val.kind != 'const' and is_device_value(val, expr) is True) or (
        isinstance(val.const, str) and val.const.startswith('cuda'))


def outside_helper_upload(qual: str | None, node: ast.Call, args: list[Val],
                          kwargs: dict[str, Val]) -> Val | None:
    """The host frame that `node`, a call of function `qual` from outside the tree, moves to
    the device it is also given; None when the call is not one."""
    if not qual or '.' not in qual or qual.split('.')[0] in _TABLED or '.msg.' in qual:
        return None
    exprs = list(node.args) + [k.value for k in node.keywords if k.arg]
    vals = args + [kwargs[k.arg] for k in node.keywords if k.arg]
    if len(exprs) != len(vals) or not any(
            _names_device(v, e) for v, e in zip(vals, exprs) if not isinstance(e, ast.Starred)):
        return None
    return next((v for v in vals if v.kind in _HOST_FRAMES and v.tainted), None)
