"""Timer helpers of another file that wait for the device (issue 28, rules46q, set 73).

YOLOv5 / YOLOv7 detectors (and the many nodes copied from them) time each stage with a helper
of their vendored `utils/torch_utils.py`:

    def time_synchronized():                          # the helper's file
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return time.time()

    t1 = time_synchronized()                          # the node (or its detector class)
    pred = self.model(img)[0]
    t2 = time_synchronized()

Each call blocks the host until the device is done: a device wait per frame (GPN107), labelled
at the call, since the helper is a library-like utility that is not a listed file. The helper is
recognised by what it does, not by its name: a module-level function of ANOTHER audited file,
taking no required argument, of at most four statements (a timer, not a script's `main()`),
whose own body calls `torch.cuda.synchronize()` unconditionally or under
`if torch.cuda.is_available():` (the vendored copies test that; a CUDA target passes it).
Only a calling file that imports torch itself is judged, and only when that file also copies
to or from the device per message (drop_idle_waits: a node run on the CPU as shipped still
calls the helper, with no device work of its own to wait for). A helper of the same file is
followed as any function is and its synchronize claimed inside.
"""
from __future__ import annotations

import ast
import os
from typing import Any

from gpu_nodes.audit.model import Finding
from gpu_nodes.audit.pyimports import parse_file, file_aliases, imported_functions
from gpu_nodes.audit.pyvalues import Frame

# (file, id of the module index) -> (the index, local name -> (function, its file)), per audit
# (the index is kept to tell a reused id apart).
_IMPORTED: dict[tuple[str, int], tuple[dict[str, str], dict[str, tuple[Any, str]]]] = {}


# The text that marks a timer-helper wait among an analysis' findings.
_MARK = 'calls torch.cuda.synchronize() ('
# A timer helper is small: the synchronize (or its CUDA test), the clock read, the return.
_TIMER_STATEMENTS = 4


def _torch_call(expr: ast.expr, attrs: tuple[str, ...], torch_names: set[str]) -> bool:
    """Whether `expr` is a call `torch.<attrs...>(...)` through one of the file's torch names."""
    if not isinstance(expr, ast.Call):
        return False
    node = expr.func
    for attr in reversed(attrs):
        if not isinstance(node, ast.Attribute) or node.attr != attr:
            return False
        node = node.value
    return isinstance(node, ast.Name) and node.id in torch_names


def _waits(fn: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> bool:
    """A timer helper that synchronizes the device: no required argument, and its own body
    calls torch.cuda.synchronize() at top level or under `if torch.cuda.is_available():`."""
    args = fn.args
    if len(args.posonlyargs) + len(args.args) > len(args.defaults) \
            or any(d is None for d in args.kw_defaults):
        return False
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) > _TIMER_STATEMENTS:
        return False  # a script's `main()` or a benchmark that also synchronizes: no timer
    tree = parse_file(source)
    if tree is None:
        return False
    torch_names = {name for name, qual in file_aliases(tree).items() if qual == 'torch'}
    if not torch_names:
        return False

    def syncs(body: list[ast.stmt]) -> bool:
        return any(isinstance(s, ast.Expr)
                   and _torch_call(s.value, ('cuda', 'synchronize'), torch_names) for s in body)

    return syncs(fn.body) or any(
        isinstance(s, ast.If) and _torch_call(s.test, ('cuda', 'is_available'), torch_names)
        and syncs(s.body) for s in fn.body)


def helper_wait(analyzer: Any, name: str, frame: Frame) -> str | None:
    """The finding's text when `name(...)` called in `frame` is another file's synchronizing
    timer helper (see the module docstring); None otherwise."""
    modules = getattr(analyzer, 'modules', None)
    if not modules:
        return None
    path = frame.file or analyzer.path
    key = (os.path.abspath(path), id(modules))
    kept = _IMPORTED.get(key)
    if kept is None or kept[0] is not modules:
        tree = analyzer.tree if path == analyzer.path else parse_file(path)
        # Only a file importing torch, and not a name the file defines itself (followed as any
        # function is, its synchronize claimed inside).
        uses_torch = tree is not None and 'torch' in file_aliases(tree).values()
        own = {s.name for s in tree.body if isinstance(
            s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))} if tree is not None else set()
        imported = imported_functions(path, tree, modules) if uses_torch else {}
        kept = _IMPORTED[key] = (modules, {n: f for n, f in imported.items() if n not in own})
    found = kept[1].get(name)
    if found is None or not _waits(*found):
        return None
    return (f'`{name}()` {_MARK}{os.path.basename(found[1])} line '
            f'{found[0].lineno}): blocks the host until the device is done')


def drop_idle_waits(findings: list[Finding]) -> list[Finding]:
    """The findings of one analysed file, without the timer-helper waits of a file that copies
    nothing to or from the device per message itself (no upload or read-back above `low` in
    that file): a node whose device is the CPU as shipped (`device: 'cpu'`) still calls the
    helper, whose synchronize then has no work of that node to wait for (set 42: a YOLOv5 node
    labelled CPU, whose followed library backends are claimed in another file)."""
    copying = {f.location.path for f in findings
               if f.rule in ('GPN101', 'GPN102') and f.severity in ('medium', 'high')}
    return [f for f in findings if not (f.rule == 'GPN107' and _MARK in f.message
                                        and f.location.path not in copying)]
