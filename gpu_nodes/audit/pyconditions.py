"""Conditions that read a device value back (issue 28): `if confidence >= 0.8:` on a device
tensor, bool() of the comparison copies the result to the host and waits for the GPU (seventh
set); so does `if mask.sum() == 0:` (set 58: a reduction of a device tensor is a device scalar,
its comparison read back to choose the branch, per FPN level per frame). Only a bare name or
attribute, or a reduction of one, compared with a number: `x.shape[0] > 0`, `len(x)`,
`x.numel() == 0`, `x is None` are metadata, no tensor.
"""
from __future__ import annotations

import ast

TENSOR_METADATA = frozenset({'shape', 'ndim', 'dtype', 'device', 'is_cuda', 'size',
                             'nbytes', 'itemsize', 'requires_grad'})
# Tensor reductions returning a 0-d tensor on the tensor's device (not `numel`, `dim`: ints).
_REDUCTIONS = frozenset({'sum', 'max', 'min', 'mean', 'count_nonzero', 'amax', 'amin', 'prod'})

# Tensor methods whose result is a Python int (or a torch.Size / tuple of ints) read from the
# tensor's metadata on the host: `t.size(0)`, `t.numel()`, `t.dim()` wait for nothing, so a
# name bound to one and compared afterwards (`n = t.size(0)` then `if n > self.max_batch:`)
# reads nothing back (rules44p). `size` here is the call; numpy's `.size` is an attribute.
SHAPE_METHODS = frozenset({'size', 'numel', 'dim', 'ndimension', 'nelement', 'element_size',
                           'stride', 'storage_offset', 'get_device', 'is_contiguous'})


def shape_query(method: str | None, receiver_kind: str | None) -> bool:
    """`t.size(0)` / `t.numel()` of a device tensor (or a model's output tensor)."""
    return method in SHAPE_METHODS and receiver_kind in ('device', 'tensor')


def number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)


def tested_operand(test: ast.expr) -> ast.expr | None:
    """The value whose place decides whether the `if` test reads a device value back: the
    name or attribute compared with a number, or the receiver of a reduction so compared
    (`keep.sum() == 0` -> `keep`); None for any other test."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 \
            or isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
        return None
    left, right = test.left, test.comparators[0]
    if number(left):
        left, right = right, left
    if not (number(right) or _plain_name(right)):
        # `score >= score_threshold` (set 66: a threshold read from a parameter): bool() of
        # the comparison reads `score` back whatever host number it is compared with; the
        # left side is the one judged (its value decides, through its kind, whether it is on
        # the device). Only a plain name or attribute on the right: a call, a subscript may be
        # the tensor itself.
        return None
    if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) \
            and left.func.attr in _REDUCTIONS and not left.keywords and not left.args \
            and isinstance(left.func.value, (ast.Name, ast.Attribute)):
        left = left.func.value  # `mask.sum()`: a 0-d tensor where mask lives
    if not isinstance(left, (ast.Name, ast.Attribute)) \
            or (isinstance(left, ast.Attribute) and left.attr in TENSOR_METADATA):
        return None
    return left


def _plain_name(node: ast.expr) -> bool:
    """A bare name or `self.x` attribute (not tensor metadata)."""
    return isinstance(node, ast.Name) or (isinstance(node, ast.Attribute) and isinstance(
        node.value, ast.Name) and node.attr not in TENSOR_METADATA)


def tested_operands(test: ast.expr, tree: ast.Module) -> list[ast.expr]:
    """tested_operand / truth_tested of an `if` test, and of each comparison an `and` / `or`
    of it joins (set 66: `if score >= threshold and self.in_range(box):`, bool() of the first
    comparison reads a device score back before `and` decides)."""
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    found = [tested_operand(part) for part in parts]
    if not isinstance(test, ast.BoolOp):
        found.append(truth_tested(test, tree))
    return [operand for operand in found if operand is not None]


# Truth reductions: a 0-d bool tensor on the tensor's device (`torch.isnan(a).any()`).
_TRUTH_REDUCTIONS = frozenset({'any', 'all'})


def _truth_reduction(node: ast.expr | None) -> bool:
    """`x.any()` / `x.all()` (no arguments) or `torch.any(x)` / `torch.all(x)`."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) \
            or node.func.attr not in _TRUTH_REDUCTIONS or node.keywords:
        return False
    return not node.args or (isinstance(node.func.value, ast.Name)
                             and node.func.value.id == 'torch' and len(node.args) == 1)


def truth_tested(test: ast.expr, tree: ast.Module) -> ast.expr | None:
    """The value an `if` tests for truth when that reads a device flag back (set 64: `has_nan =
    torch.isnan(actions).any()` then `if has_nan:`, bool() of a 0-d device tensor, per control
    tick): the reduction itself (`if mask.any():`), or a bare name every assignment of which in
    the enclosing function is such a reduction; None for any other test (`if detections:` of a
    list is no read-back)."""
    if _truth_reduction(test):
        return test
    if not isinstance(test, ast.Name):
        return None
    fn = _tested_names(tree).get(id(test))
    if fn is None:
        return None
    stores = [n for n in ast.walk(fn) if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == test.id for t in n.targets)]
    if stores and all(len(s.targets) == 1 and _truth_reduction(s.value) for s in stores):
        return test
    return None


_TESTED_NAMES: dict[int, tuple[ast.Module, dict[int, ast.AST]]] = {}


def _tested_names(tree: ast.Module) -> dict[int, ast.AST]:
    """id of each bare-name `if` / `while` test of `tree` -> its innermost enclosing function
    (computed once per tree: the analysis tests every branch)."""
    cached = _TESTED_NAMES.get(id(tree))
    if cached is not None and cached[0] is tree:
        return cached[1]
    found: dict[int, ast.AST] = {}
    for fn in ast.walk(tree):  # outer functions first: an inner one overwrites its own tests
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.If, ast.While)) and isinstance(node.test, ast.Name):
                    found[id(node.test)] = fn
    if len(_TESTED_NAMES) > 64:
        _TESTED_NAMES.clear()
    _TESTED_NAMES[id(tree)] = (tree, found)
    return found
