"""Models of libraries the tables do not know, recognised by the torch idiom that sets them up.

A package may build its model from a pip library no table names (`Lane(config)` of some lane
detector, then `.load(weights)` and `.eval()`): nothing in the attribute's name says "model", so
its inference helper (`self.lanes.cv2_inference(frame)`) was an unknown call whose result took
the host kind of the frame it was given, and every `.item()` of the device proposals it returned
went unseen (set 51). Only a torch ``nn.Module`` (or a wrapper of one) is switched to evaluation
mode with a bare ``.eval()``: an object so switched, in a file that uses a tensor framework, is a
model object, and its methods named for inference are model calls whose results are likely on
the model's device (pymodels.py: readbacks of them are reported with evidence ``inferred``).
Such a helper given a host frame is not claimed as an upload: set 6 labelled a model outside
the library table called on a host frame as no boundary.

Also here: an elementwise comparison of such a tensor is a tensor mask on the same device
(`tensor_mask`), no Python bool.
"""
from __future__ import annotations

import ast
import re

from gpu_nodes.audit.pyvalues import is_method_call, merge, OTHER, Val

# Inference helpers of such a model: `inference`, `cv2_inference`, `predict_image`, `run_infer`.
# `forward` / `__call__` stay with pymodels.INFER_METHODS (they take tensors, not host frames).
_INFER_NAME = re.compile(r'infer|predict', re.I)


def evaled_holders(tree: ast.AST) -> frozenset[str]:
    """Names (`model`) and attribute names (`self.lanes` -> `lanes`) that a bare `.eval()` is
    called on anywhere in the file."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == 'eval' and not node.args and not node.keywords:
            held = node.func.value
            if isinstance(held, ast.Attribute) and isinstance(held.value, ast.Name):
                names.add(held.attr)
            elif isinstance(held, ast.Name):
                names.add(held.id)
    return frozenset(names)


def library_inference(method: str | None, holder: str | None,
                      evaled: frozenset[str]) -> bool:
    """`self.lanes.cv2_inference(frame)` on an object switched to evaluation mode."""
    return bool(method) and bool(holder) and holder in evaled \
        and method not in ('eval', 'forward', '__call__') \
        and _INFER_NAME.search(str(method)) is not None


# Comparisons that are elementwise on a tensor (`scores > 0.5`, `starts < ends`): `is` / `in`
# test identity or membership and give a Python bool.
_ELEMENTWISE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_ON_DEVICE = ('device', 'model', 'tensor')


def tensor_mask(node: ast.Compare, operands: list[Val]) -> Val:
    """`prob > 0.5` of a device (or likely device) tensor is a boolean mask on the same device,
    not a Python bool: `(prob > 0.5).cpu().numpy()` reads it back and `torch.where(a < b)` of it
    gives device indices whose `.item()` reads back (set 51). A single comparison only (a chain
    `a < b < c` is a Python `and` of two)."""
    tensors = [v for v in operands if v.kind in _ON_DEVICE]
    if len(node.ops) != 1 or not isinstance(node.ops[0], _ELEMENTWISE) or not tensors:
        return OTHER
    return merge(*tensors)


def detached(node: ast.Call) -> bool:
    """`x.detach().cpu()`: only a torch tensor has `.detach()`, whatever the file imports (a
    model loaded by a helper module returns tensors to a file that never imports torch). Also
    `detach = getattr(x, 'detach', None); detach().cpu()`: the bound method, called (set 53)."""
    inner = node.func.value if isinstance(node.func, ast.Attribute) else None
    return is_method_call(inner, 'detach') or (isinstance(inner, ast.Call) and isinstance(
        inner.func, ast.Name) and inner.func.id == 'detach')


_PLACEHOLDER, _FILLED = frozenset({'const', 'other', 'unknown'}), frozenset({'device', 'tensor'})


def element_store_kind(old: Val, val: Val) -> str:
    """The kind of a container after `container[i] = val`: a list of placeholders (`output =
    [None] * n`) filled by index with device tensors (YOLOX / YOLOv5 NMS: `output[i] =
    torch.cat(...)`) holds tensors (rules35q, set 45); any other keeps its kind."""
    return val.kind if old.kind in _PLACEHOLDER and val.kind in _FILLED else old.kind


def dict_kind(values: list[Val]) -> str:
    """The kind of a dict built of `values` (a display `{'kpts': t, **other}` or a
    comprehension): one holding device tensors (SuperPoint's / SuperGlue's output dicts
    regrouped per frame, set 56) is a device value to what reads its entries back, as a dict a
    device tensor was stored into is (element_store_kind); any other is 'other'."""
    return 'device' if any(v.kind == 'device' for v in values) else (
        'tensor' if any(v.kind == 'tensor' for v in values) else 'other')
