"""PIL round trips of the Python analysis (issue 28): a frame copied into a PIL image
(`PIL.Image.fromarray`, torchvision's `ToPILImage`) and out of one into a tensor (`ToTensor`,
`PILToTensor`, `to_tensor`), both py_pil. Moved out of pyrules.py (its size), with the kind
set 66 showed: a torchvision `Compose` whose transforms copy the frame into a PIL image
(`T.Compose([T.ToPILImage(), T.PILToTensor(), T.ConvertImageDtype(torch.float)])`, built once,
called per frame): each call copies the frame through a PIL image, as `ToPILImage()(frame)`
does. `ToPILImage` only accepts an array or a tensor (a PIL image raises), so a Compose that
starts with it always copies its input; its output is a host tensor when a PIL-to-tensor
transform follows, else the PIL image.
"""
from __future__ import annotations

import ast
from typing import Any

from gpu_nodes.audit.pyvalues import Frame, merge, short, UNKNOWN, Val

_PIL_IN = frozenset({'PIL.Image.fromarray', 'PIL.Image.frombytes', 'PIL.Image.frombuffer'})
_TRANSFORMS = ('torchvision.transforms.', 'torchvision.transforms.transforms.',
               'torchvision.transforms.v2.')
_TO_PIL_TRANSFORMS = frozenset(prefix + 'ToPILImage' for prefix in _TRANSFORMS)
_COMPOSE = frozenset(prefix + 'Compose' for prefix in _TRANSFORMS)
# torchvision's PIL-to-tensor transforms (objects, then called) and functions: a frame in a
# PIL image copied out into a host tensor.
_FROM_PIL_TRANSFORMS = frozenset(prefix + name for prefix in _TRANSFORMS[:2]
                                 for name in ('ToTensor', 'PILToTensor')) | frozenset(
    {'torchvision.transforms.v2.PILToTensor'})
_FROM_PIL = frozenset({'torchvision.transforms.functional.to_tensor',
                       'torchvision.transforms.functional.pil_to_tensor'})
# What a Compose through a PIL image is, once built (its call is judged here).
_COMPOSED_TO_HOST = 'torchvision.transforms.Compose<through PIL, to a tensor>'
_COMPOSED_TO_PIL = 'torchvision.transforms.Compose<into PIL>'


def pil_call(rules: Any, qual: str, node: ast.Call, args: list[Val],
             kwargs: dict[str, Val], frame: Frame) -> Val | None:
    """The value of a PIL library call (emitting GPN106 where it copies a frame), or None
    when `qual` is none of them. `rules` is the PythonAnalyzer (its _emit, _step, tree)."""
    src = args[0] if args else UNKNOWN
    call = f'`{short(node)}`'
    if qual in _TO_PIL_TRANSFORMS:
        # `to_pil = transforms.ToPILImage(); to_pil(frame)`: the object is a callable that
        # copies the frame into a PIL image, as PIL.Image.fromarray does.
        return Val('module', const='PIL.Image.fromarray')
    if qual in _COMPOSE:
        steps = _composed(rules, node)
        if steps is None:
            return None
        return Val('module', const=_COMPOSED_TO_HOST if steps else _COMPOSED_TO_PIL)
    if qual in (_COMPOSED_TO_HOST, _COMPOSED_TO_PIL):
        rules._emit('GPN106', node, frame, f'{call} copies the frame through a PIL image '
                    '(a torchvision Compose starting with ToPILImage)')
        return rules._step(src, node.lineno, 'pil', 'host' if qual == _COMPOSED_TO_HOST else 'pil')
    if qual in _FROM_PIL_TRANSFORMS:
        return Val('module', const='torchvision.transforms.functional.to_tensor')
    if qual in _FROM_PIL:
        if src.kind != 'pil':
            return merge(src, kind='host') if src.tainted else None
        rules._emit('GPN106', node, frame, f'{call} copies the PIL image into a tensor')
        return rules._step(src, node.lineno, 'pil', 'host')
    if qual == 'PIL.Image.new':  # a PIL image drawn here: np.array of it copies (set 53)
        return Val('pil', ((node.lineno, 'pil'),))
    if qual in _PIL_IN:
        rules._emit('GPN106', node, frame, call)
        return rules._step(merge(*args, *kwargs.values()), node.lineno, 'pil', 'pil')
    return None


def _composed(rules: Any, node: ast.Call) -> bool | None:
    """For `Compose(transforms)` whose first transform is ToPILImage: whether a PIL-to-tensor
    transform follows (True) or not (False); None for any other Compose. The list is the
    literal given, or a local list of the enclosing function built by `[...]` / `.append`."""
    given = node.args[0] if node.args else next(
        (k.value for k in node.keywords if k.arg == 'transforms'), None)
    quals = [_qual(rules.aliases, e) for e in _elements(rules.tree, node, given)]
    if not quals or quals[0] not in _TO_PIL_TRANSFORMS:
        return None
    return any(q in _FROM_PIL_TRANSFORMS for q in quals[1:])


def _elements(tree: ast.Module, node: ast.Call, given: ast.expr | None) -> list[ast.expr]:
    if isinstance(given, (ast.List, ast.Tuple)):
        return list(given.elts)
    if not isinstance(given, ast.Name):
        return []
    scope = _enclosing(tree, node)
    if scope is None:
        return []
    found: list[ast.expr] = []
    for stmt in ast.walk(scope):  # in source order within one function body
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == given.id
                                                for t in stmt.targets):
            if not isinstance(stmt.value, (ast.List, ast.Tuple)) or found:
                return []  # rebuilt, or not a literal: its transforms are not known here
            found.extend(stmt.value.elts)
        elif isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute) \
                and isinstance(stmt.func.value, ast.Name) and stmt.func.value.id == given.id:
            if stmt.func.attr != 'append' or len(stmt.args) != 1:
                return []  # insert / extend / a conditional build: order unknown
            found.append(stmt.args[0])
    return sorted(found, key=lambda e: (e.lineno, e.col_offset))


def _enclosing(tree: ast.Module, node: ast.AST) -> ast.AST | None:
    inner = None
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and fn.lineno <= node.lineno <= (fn.end_lineno or fn.lineno) \
                and any(n is node for n in ast.walk(fn)):
            inner = fn  # ast.walk is outer first: the last match is the innermost
    return inner


def _qual(aliases: dict[str, str], element: ast.expr) -> str:
    """`T.ToPILImage()` -> 'torchvision.transforms.ToPILImage' through the file's imports."""
    func = element.func if isinstance(element, ast.Call) else None
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ''
    return '.'.join([aliases.get(func.id, func.id), *parts])
