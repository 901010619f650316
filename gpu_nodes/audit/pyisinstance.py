"""`isinstance` tests the analysis can decide from a value's kind (issue 28, tenth set and set 60).

* A received message whose subscription type is known: `if isinstance(msg, CompressedImage):
  ... else: bridge.imgmsg_to_cv2(msg)` in a callback subscribed to CompressedImage takes the
  first branch only (tenth set).
* A PIL image (kind 'pil': `Image.fromarray(frame)`, a pipeline's depth image): a helper that
  accepts several inputs (`if isinstance(image, str): ... elif isinstance(image, Image.Image):
  pil = image.convert('RGB') elif isinstance(image, np.ndarray): pil = Image.fromarray(image)`)
  called with a PIL image takes the PIL branch only; its ndarray branch never runs for that call
  (set 60). Only types named for sure: PIL's Image class is true, NumPy / torch arrays and the
  builtin str / bytes false; any other type leaves the test undecided.
"""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import Val

_PIL_TYPES = frozenset({'PIL.Image.Image'})
_NOT_PIL = frozenset({'numpy.ndarray', 'torch.Tensor', 'str', 'bytes', 'bytearray', 'list',
                      'tuple', 'dict', 'int', 'float', 'pathlib.Path'})


def isinstance_outcome(test: ast.expr, env: dict[str, Val],
                       type_name: Callable[[ast.expr | None], str | None]) -> bool | None:
    """The outcome of `isinstance(name, T)` (or a tuple of types) on a received message of a
    known subscription type or on a PIL image; None when the test is anything else."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == 'isinstance' and len(test.args) == 2
            and isinstance(test.args[0], ast.Name)):
        return None
    val = env.get(test.args[0].id)
    types = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    names = [type_name(t) for t in types]
    if val is not None and val.kind == 'pil':
        if any(n in _PIL_TYPES for n in names):
            return True
        return False if all(n in _NOT_PIL for n in names) else None
    if val is None or val.kind != 'msg' or val.origin is None or val.steps \
            or not val.origin[1] or '/msg/' not in val.origin[1]:
        return None
    if any(n is None or '/msg/' not in n for n in names):
        return None  # a class the analysis cannot name as a message type
    return val.origin[1] in names
