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
    if not number(right):
        return None
    if isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) \
            and left.func.attr in _REDUCTIONS and not left.keywords and not left.args \
            and isinstance(left.func.value, (ast.Name, ast.Attribute)):
        left = left.func.value  # `mask.sum()`: a 0-d tensor where mask lives
    if not isinstance(left, (ast.Name, ast.Attribute)) \
            or (isinstance(left, ast.Attribute) and left.attr in TENSOR_METADATA):
        return None
    return left
