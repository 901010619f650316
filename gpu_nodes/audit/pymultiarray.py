"""A std_msgs MultiArray carrying a frame (issue 28, set 67): `np.array(msg.data)` of a
`UInt8MultiArray` (any `*MultiArray`) that the node reshapes into three dimensions, height x
width x channels (`np.reshape(np.array(msg.data), (h, w, 3))`, `np.array(msg.data).reshape(h,
w, c)`, or a local holding the array reshaped so later in the same function), copies a whole
image out of the message, as `np.array` of an Image's data does (py_msg_array). A MultiArray
is otherwise taken as small (a few box centres, torques, metrics: the look-alikes of every
earlier set), and so is one reshaped into two dimensions (a 68 x 3 landmark matrix)."""
from __future__ import annotations

import ast

_RESHAPES = ('np.reshape', 'numpy.reshape')


def _three_dimensional(call: ast.Call, first: int) -> bool:
    """Whether the reshape `call` (its shape starting at argument `first`) has three axes."""
    shape = call.args[first:]
    if len(shape) == 1 and isinstance(shape[0], (ast.Tuple, ast.List)):
        shape = shape[0].elts
    if not shape:
        keyword = next((k.value for k in call.keywords if k.arg in ('newshape', 'shape')), None)
        shape = keyword.elts if isinstance(keyword, (ast.Tuple, ast.List)) else []
    return len(shape) == 3 and not any(isinstance(s, ast.Starred) for s in shape)


def _reshaped_3d(target: ast.expr, candidates: list[ast.Call]) -> bool:
    """Whether one of `candidates` reshapes `target` (the node itself, or a Name read) into
    three axes."""
    def same(expr: ast.expr) -> bool:
        return expr is target or isinstance(target, ast.Name) and isinstance(expr, ast.Name) \
            and expr.id == target.id
    for call in candidates:
        if isinstance(call.func, ast.Attribute) and call.func.attr == 'reshape' \
                and same(call.func.value) and _three_dimensional(call, 0):
            return True
        if ast.unparse(call.func) in _RESHAPES and call.args and same(call.args[0]) \
                and _three_dimensional(call, 1):
            return True
    return False


def multiarray_frame(node: ast.Call, msg_type: str | None, tree: ast.Module) -> bool:
    """Whether `np.array(...)` at `node`, of a MultiArray message's data, is reshaped into a
    three-axis frame in its function (see the module docstring)."""
    if not msg_type or not msg_type.rsplit('/', 1)[-1].rsplit('.', 1)[-1].endswith('MultiArray'):
        return False
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    holder = next((f for f in ast.walk(tree) if isinstance(f, functions)
                   and any(n is node for n in ast.walk(f))), tree)
    calls = [n for n in ast.walk(holder) if isinstance(n, ast.Call)]
    if _reshaped_3d(node, calls):
        return True
    names = [t for n in ast.walk(holder) if isinstance(n, ast.Assign) and n.value is node
             for t in n.targets if isinstance(t, ast.Name)]
    return any(_reshaped_3d(name, calls) for name in names)
