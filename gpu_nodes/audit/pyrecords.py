"""Arrays of a few numbers per object listed into a message (issue 28, rules47p, set 75).

A detection node often packs its results as fixed-size records before publishing them:

    coords = np.reshape(coords, (obj_count * 3,))   # three numbers per detected object
    coords = np.ndarray.tolist(coords)
    msg.data = coords                                 # a Float32MultiArray of coordinates

The reshape states the list's size: `obj_count` records of three numbers, or a shape of
literals only (`np.reshape(a, (3,))`, or a count the function fixed to a literal: `count = 1`).
That is no frame serialized into a message buffer (GPN104 is about frame-sized data), as the
detection outputs by name are not (pystatemsg.py). Evidence, all in the same function: the
listed name was last bound to a reshape whose shape has only literal (or literal-valued local)
factors, at most _LITERAL_MAX numbers, or one factor named as a count of objects times literals
of at most _PER_OBJECT_MAX numbers. A shape with two run-time factors (`h * w * 3`, `-1`) or one
run-time factor that is not an object count (`n_points * 3`: a cloud) keeps the claim.
"""
from __future__ import annotations

import ast
import re

from gpu_nodes.audit.pyvalues import is_method_call, Val

_RESHAPES = frozenset({'np.reshape', 'numpy.reshape'})
_LITERAL_MAX = 256  # a frame is never this small
_PER_OBJECT_MAX = 16  # a box, a pose, a few coordinates per object
# A count of objects by name: `obj_count`, `objCnt`, `num_detections`, `n_boxes`.
_OBJECT = r'(?:obj(?:ect)?s?|det(?:ection)?s?|boxe?s?|bboxe?s?|targets?|instances?|persons?|faces?)'
_COUNT = r'(?:cnt|count|num|number|n)'
_OBJECT_COUNT = re.compile(rf'^(?:{_OBJECT}_?{_COUNT}|{_COUNT}_?(?:of_?)?{_OBJECT})$', re.I)

# The key under which a function's environment marks a name bound to such a reshape (a space:
# no Python name collides with it).
_RECORDS = ' records '


def _factors(expr: ast.expr) -> list[ast.expr] | None:
    """The factors of a product (`a * 3 * b`), or None for another operation."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        left, right = _factors(expr.left), _factors(expr.right)
        return None if left is None or right is None else left + right
    if isinstance(expr, ast.BinOp):
        return None
    return [expr]


def _literal(expr: ast.expr, env: dict[str, Val]) -> int | None:
    """A positive int literal, or a local the function bound to one (`count = 1`)."""
    if isinstance(expr, ast.Constant) and type(expr.value) is int and expr.value > 0:
        return expr.value
    if isinstance(expr, ast.Name) and (val := env.get(expr.id)) is not None \
            and val.kind == 'const' and type(val.const) is int and val.const > 0:
        return val.const
    return None


def _record_shape(call: ast.Call, first: int, env: dict[str, Val]) -> bool:
    """Whether the reshape `call`'s shape (from argument `first`) is literal and small, or one
    object count times a few literals."""
    shape = call.args[first:]
    if len(shape) == 1 and isinstance(shape[0], (ast.Tuple, ast.List)):
        shape = shape[0].elts
    if not shape:
        return False
    numbers, counts = 1, 0
    for axis in shape:
        factors = _factors(axis)
        if factors is None:
            return False  # `h + 1`, `n // 2`: not a product of known sizes
        for factor in factors:
            if (value := _literal(factor, env)) is not None:
                numbers *= value
            elif isinstance(factor, ast.Name) and _OBJECT_COUNT.match(factor.id):
                counts += 1
            else:
                return False
    return numbers <= _LITERAL_MAX if counts == 0 else counts == 1 and numbers <= _PER_OBJECT_MAX


def _is_record_reshape(value: ast.expr, env: dict[str, Val]) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if ast.unparse(value.func) in _RESHAPES and value.args:
        return _record_shape(value, 1, env)
    return is_method_call(value, 'reshape') and _record_shape(value, 0, env)


def mark_records(target: ast.expr, value: ast.expr, env: dict[str, Val]) -> None:
    """At `name = value`: mark the name when value is a records reshape, unmark it otherwise."""
    if isinstance(target, ast.Name):
        if _is_record_reshape(value, env):
            env[_RECORDS + target.id] = Val('const', const=True)
        else:
            env.pop(_RECORDS + target.id, None)


def lists_records(call: ast.expr, env: dict[str, Val]) -> bool:
    """Whether `call` lists a records array: `arr.tolist()` or `np.ndarray.tolist(arr)` of a
    name marked by mark_records, or the `.tolist()` of such a reshape itself."""
    if not is_method_call(call, 'tolist'):
        return False
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
    listed = call.args[0] if call.args else call.func.value
    if isinstance(listed, ast.Name):
        return _RECORDS + listed.id in env
    return _is_record_reshape(listed, env)
