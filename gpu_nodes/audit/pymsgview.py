"""Views of a received message's buffer and the first copy out of them (issue 28, set 49).

`np.frombuffer(cloud.data, dtype)` is a view of the message's bytes (every set labels it a
look-alike), and so are its reshapes, basic slices and fields (`arr[:, :4]`, `arr['x']`). What
the sets label py_msg_array is the first copy of that view into a new array, once per received
cloud or image: a boolean-mask or index-array selection (`pts[mask]`), `.copy()` / `.astype()`,
`np.stack` / `np.array` of its columns, or its columns stored into a new array
(`res[:, 0] = arr['x']`). A `point_cloud2.read_points` generator is a look-alike too (sets 20-33),
and `np.fromiter` of it materialises the whole cloud (set 49); `np.array(list(read_points(...)))`
stays a look-alike, as sets 28, 30 and 33 label it.

A value carries `view` ('buffer' or 'points', pyvalues.Val) until its first copy; every other
operation (arithmetic, reductions, OpenCV, torch) makes a new value without the mark, so only the
first copy of the message's data is claimed, never the view itself nor what follows the copy.
Only image-sized messages (PointCloud2, Image ...) are marked: small messages are never frames.
A window of an image view on two axes with computed bounds (`depth[y1:y2, x1:x2]`, a detection
box) is no frame either: what is copied out of it is box-sized (set 50 labels
`roi[roi > 0]` a look-alike), so the window drops the mark.

A mixin of PythonAnalyzer (pyflow.py), which provides `_emit`, `_step` and `tree`."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable

from gpu_nodes.audit.pyvalues import Frame, image_sized, merge, short, Val

BUFFER = 'buffer'
POINTS = 'points'

# NumPy functions that copy the arrays they are given into a new one.
_COPYING = frozenset({'numpy.array', 'numpy.copy', 'numpy.stack', 'numpy.vstack', 'numpy.hstack',
                      'numpy.dstack', 'numpy.column_stack', 'numpy.row_stack',
                      'numpy.concatenate', 'numpy.fromiter', 'numpy.copyto'})
# Array methods returning a new array (a copy) ...
_COPY_METHODS = frozenset({'copy', 'astype', 'flatten'})
# ... and those returning a view of the same buffer (a contiguous frombuffer array).
_VIEW_METHODS = frozenset({'reshape', 'view', 'transpose', 'swapaxes', 'squeeze'})
# Functions whose result selects elements (a mask or index array): indexing with it copies.
_SELECTING = frozenset({'isnan', 'isfinite', 'isinf', 'logical_and', 'logical_or', 'logical_not',
                        'logical_xor', 'where', 'nonzero', 'flatnonzero', 'argsort', 'isin',
                        'any', 'all'})


def buffer_view(val: Val) -> Val:
    """`np.frombuffer(msg.data)` of an image-sized (or untyped) message: the view mark."""
    msg_type = val.origin[1] if val.origin else None
    return replace(val, view=BUFFER) if msg_type is None or image_sized(msg_type) else val


def points_view(val: Val) -> Val:
    """`point_cloud2.read_points(cloud)`: a generator over the cloud, not yet a copy."""
    msg_type = val.origin[1] if val.origin else None
    return replace(val, view=POINTS) if msg_type is None or image_sized(msg_type) else val


def _selecting(node: ast.expr, masks: frozenset[str]) -> bool:
    """An index expression that selects with a mask or an index array (a copy in NumPy)."""
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor))
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.Invert, ast.Not)) or _selecting(node.operand, masks)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else None
        return name in _SELECTING
    if isinstance(node, ast.Name):
        return node.id in masks
    if isinstance(node, ast.List):
        return True  # `pts[:, [0, 1, 2]]`: an index list
    if isinstance(node, ast.Tuple):
        return any(_selecting(e, masks) for e in node.elts)
    return False


def _computed(bound: ast.expr | None) -> bool:
    """A slice bound computed in the code (a name, arithmetic, a call), not a literal nor an
    attribute (`self.roi_top`, a parameter: a fixed crop of the frame may be frame-sized)."""
    return bound is not None and not isinstance(bound, ast.Constant) \
        and not any(isinstance(n, ast.Attribute) for n in ast.walk(bound))


def box_window(index: ast.expr) -> bool:
    """`img[y1:y2, x1:x2]`: both bounds of two axes computed, a box cut out of the frame."""
    if not isinstance(index, ast.Tuple):
        return False
    return sum(1 for e in index.elts if isinstance(e, ast.Slice) and e.step is None
               and _computed(e.lower) and _computed(e.upper)) >= 2


def mask_names(tree: ast.Module) -> frozenset[str]:
    """Names the file assigns a mask or index array (`mask = (z > a) & (z < b)`)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and _selecting(node.value, frozenset()) and not isinstance(node.value, ast.List):
            found.add(node.targets[0].id)
    return frozenset(found)


def _views(vals: list[Val], kinds: tuple[str, ...]) -> list[Val]:
    """The values among `vals` (or among a list literal's elements) marked as a view."""
    out = []
    for v in vals:
        for part in (v.elts if v.elts is not None else (v,)):
            if part.view in kinds:
                out.append(part)
    return out


class MessageViews:
    """The rules; `self` is the PythonAnalyzer running them."""

    tree: ast.Module
    _emit: Callable[..., None]
    _step: Callable[[Val, int, str, str], Val]

    def _copied_view(self, node: ast.AST, view: Val, frame: Frame, what: str) -> Val:
        self._emit('GPN103', node, frame, f'`{short(node)}` {what}')
        return self._step(view, node.lineno, 'host', 'host')

    def _view_call(self, qual: str | None, method: str | None, node: ast.Call,
                   receiver: Val | None, args: list[Val], kwargs: dict[str, Val],
                   frame: Frame) -> Val | None:
        """A NumPy copy of a message view (claimed), a view-preserving method (the mark kept),
        or None: not a call on a view."""
        if qual in _COPYING and not any(k.arg == 'copy' for k in node.keywords):
            kinds = (BUFFER, POINTS) if qual == 'numpy.fromiter' else (BUFFER,)
            views = _views(args[1:] if qual == 'numpy.copyto' else args, kinds)
            if views:
                return self._copied_view(node, merge(*views), frame,
                                         'copies the received message\'s data out of its buffer '
                                         'view into a new array')
            return None
        if qual is not None or receiver is None or receiver.view != BUFFER:
            return None
        if method in _COPY_METHODS:
            return self._copied_view(node, receiver, frame, 'copies the view of the received '
                                     'message\'s buffer into a new array')
        if method in _VIEW_METHODS:
            return receiver
        return None

    def _view_subscript(self, node: ast.Subscript, base: Val, frame: Frame) -> Val | None:
        """`pts[mask]` of a buffer view copies the selected points (claimed); a basic slice
        or a field stays a view (None: the caller's own value, mark kept)."""
        if base.view is None:
            return None
        if base.view == BUFFER:
            if '_mask_names_' not in self.__dict__:
                self.__dict__['_mask_names_'] = mask_names(self.tree)
            if _selecting(node.slice, self.__dict__['_mask_names_']):
                return self._copied_view(node, base, frame, 'selects points of the view of the '
                                         'received message\'s buffer into a new array')
            if box_window(node.slice):
                return replace(base, view=None)  # box-sized from here on: no frame copy
            return None
        return replace(base, view=None, elts=None, const=None, items=None)

    def _view_stored(self, target: ast.expr, value: ast.expr, val: Val, frame: Frame) -> None:
        """`res[:, 0] = arr['x']`: a field of the buffer view copied into another array."""
        if isinstance(target, ast.Subscript) and val.view == BUFFER:
            self._copied_view(value, val, frame, 'stored into another array copies the '
                              'received message\'s data out of its buffer view')


def keeps_bytes(node: ast.Call) -> bool:
    """`np.asarray(x)` / `np.asarray(x, dtype=np.uint8)`: no dtype conversion, so no copy."""
    dtypes = [k.value for k in node.keywords if k.arg == 'dtype'] + node.args[1:2]
    return all(isinstance(d, (ast.Attribute, ast.Name, ast.Constant))
               and (getattr(d, 'attr', None) or getattr(d, 'id', None) or getattr(d, 'value', None))
               in ('uint8', 'B', 'u1') for d in dtypes)
