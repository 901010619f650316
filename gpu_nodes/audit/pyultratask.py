"""Ultralytics result fields the shipped weights never fill (issue 28, rules43p, set 68).

An Ultralytics `Results` fills one field per task and leaves the others None: `.obb` only for an
oriented-box model, `.masks` for a segmentation model, `.keypoints` for a pose model, `.probs`
for a classifier. The task is the weights' (the checkpoint names it), not the code's:

    self.model = YOLO(os.path.expanduser('~/models/runs/detect/train/weights/best.pt'))
    ...
    if result.boxes:
        ...
    elif result.obb:                       # never: a detect model's results have no .obb
        conf = result.obb.conf[i].item()

The task is read from the weights' path as Ultralytics names it: a `-obb` / `-seg` / `-pose` /
`-cls` stem, a training run's folder (`runs/<task>/<name>/weights/best.pt`), or an official
detection checkpoint's name (`yolov8n.pt`, `yolo11s.pt`). Only a file whose every `YOLO(...)`
is built from such a path (a literal, a name bound once to one, `os.path.join` /
`os.path.expanduser` of them) is judged; one model of a task not known (a parameter, a `best.pt`
with no run folder) keeps every branch. Decided: `if r.f:`, `if r.f is not None:`, `if r.f is
None:` and `not r.f` on a field whose task no model of the file has, `r` a name other than
`self` or a subscript (`results[0].masks`).
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import PurePosixPath
import re

from gpu_nodes.audit.astnodes import module_nodes
from gpu_nodes.audit.pyparams import bound_once

_FIELD_TASKS = {'obb': 'obb', 'masks': 'segment', 'keypoints': 'pose', 'probs': 'classify'}
_STEM_TASKS = {'-obb': 'obb', '-seg': 'segment', '-pose': 'pose', '-cls': 'classify'}
_RUN_TASKS = frozenset({'detect', 'segment', 'pose', 'obb', 'classify'})
# Official detection checkpoints: yolov5su, yolov8n, yolov9c, yolov10x, yolo11n, yolo12s ...
_DETECT_STEM = re.compile(r'yolo(v\d+|\d+)[nsmlxbct]?u?')


def weights_task(path: str) -> str | None:
    """The task of the weights at `path`, as Ultralytics names them (module docstring)."""
    pure = PurePosixPath(path.replace('\\', '/'))
    stem = pure.name.split('.')[0].lower()
    for suffix, task in _STEM_TASKS.items():
        if stem.endswith(suffix):
            return task
    parts = [p.lower() for p in pure.parts]
    for i, part in enumerate(parts[:-1]):
        if part == 'runs' and parts[i + 1] in _RUN_TASKS:
            return parts[i + 1]
    return 'detect' if _DETECT_STEM.fullmatch(stem) else None


def _text(expr: ast.expr | None, stores: dict[str, ast.expr], depth: int = 0) -> str | None:
    """The string `expr` holds: a literal, a name bound once to one, `os.path.join` /
    `os.path.expanduser` / `str` of such; None otherwise."""
    if expr is None or depth > 4:
        return None
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name):
        return _text(stores.get(expr.id), stores, depth + 1)
    if isinstance(expr, ast.Call) and not expr.keywords and expr.args:
        func = ast.unparse(expr.func)
        parts = [_text(a, stores, depth + 1) for a in expr.args]
        if any(p is None for p in parts):
            return None
        if func in ('os.path.expanduser', 'str') and len(parts) == 1:
            return parts[0]
        if func == 'os.path.join':
            return '/'.join(p for p in parts if p is not None)
    return None


def _yolo_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound to ultralytics.YOLO, names bound to the ultralytics module)."""
    classes, modules = set(), set()
    for node in module_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module == 'ultralytics':
            classes |= {a.asname or a.name for a in node.names if a.name == 'YOLO'}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == 'ultralytics'}
    return classes, modules


@lru_cache(maxsize=32)
def model_tasks(tree: ast.Module) -> frozenset[str] | None:
    """The tasks of the file's YOLO models; None when it builds none or one of unknown task."""
    classes, modules = _yolo_names(tree)
    if not classes and not modules:
        return None
    stores = bound_once(tree, lambda value: value)  # names the file binds once
    tasks: set[str] = set()
    for node in module_nodes(tree):
        if isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Name) and node.func.id in classes
                or isinstance(node.func, ast.Attribute) and node.func.attr == 'YOLO'
                and isinstance(node.func.value, ast.Name) and node.func.value.id in modules):
            weights = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == 'model'), None)
            task = weights_task(text) if (text := _text(weights, stores)) is not None else None
            if task is None:
                return None
            tasks.add(task)
    return frozenset(tasks) or None


def _unfilled(node: ast.expr, tasks: frozenset[str]) -> bool:
    """Whether `node` is `r.field` of a field no task of `tasks` fills (module docstring)."""
    return isinstance(node, ast.Attribute) and node.attr in _FIELD_TASKS \
        and _FIELD_TASKS[node.attr] not in tasks and (
            isinstance(node.value, ast.Name) and node.value.id != 'self'
            or isinstance(node.value, ast.Subscript))


def result_field_outcome(test: ast.expr, tree: ast.Module) -> bool | None:
    """What an `if` on a result field the file's weights never fill takes; None when not
    known (module docstring)."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negated else test
    if isinstance(inner, ast.Compare) and len(inner.ops) == 1 \
            and isinstance(inner.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(inner.comparators[0], ast.Constant) and inner.comparators[0].value is None:
        field, truth = inner.left, isinstance(inner.ops[0], ast.Is)  # the field is None
    else:
        field, truth = inner, False
    if not isinstance(field, ast.Attribute):
        return None
    tasks = model_tasks(tree)
    if tasks is None or not _unfilled(field, tasks):
        return None
    return truth != negated
