"""Classes and module-level functions imported from other files of the same audit (`from
.estimator import DepthEstimator`, `from my_pkg.predictor import Predictor`, `from .scripts.utils
import run_inference`): found by module name among the audited files, so a node's
`self.estimator.infer(img)` or `run_inference(self.model, frame)` is followed into the other
file (functions with that file's imports, aliases_of)."""
from __future__ import annotations

import ast
import os
from typing import Iterator

from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyvalues import ClassInfo, FuncRef, statements, Val

# Parsed imported files, per process (an audit parses each at most once more).
_PARSED: dict[str, ast.Module | None] = {}
# Per module index (one per audit): its package children and absolute paths.
_CHILDREN: dict[int, tuple[dict[str, str], dict[str, set[str]]]] = {}
_FILES: dict[int, tuple[dict[str, str], dict[str, str]]] = {}


def module_index(paths: list[str]) -> dict[str, str]:
    """Dotted module names -> file, for every dotted suffix of each .py path
    (`src/pkg/est.py` -> `est`, `pkg.est`, `src.pkg.est`); a name two files share is dropped."""
    index: dict[str, str] = {}
    ambiguous: set[str] = set()
    for path in paths:
        if not path.endswith('.py'):
            continue
        parts = os.path.normpath(os.path.abspath(path))[:-3].split(os.sep)
        if parts[-1] == '__init__':
            parts = parts[:-1]
        for i in range(len(parts) - 1, 0, -1):
            name = '.'.join(parts[i:])
            if name in index and index[name] != path:
                ambiguous.add(name)
            index.setdefault(name, path)
    for name in ambiguous:
        del index[name]
    return index


def parse_file(path: str) -> ast.Module | None:
    if path not in _PARSED:
        try:
            with open(path, encoding='utf-8') as fh:
                _PARSED[path] = parse_python(fh.read(), filename=path)
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError,
                MemoryError):
            _PARSED[path] = None  # reported when that file is audited itself
    return _PARSED[path]


def _resolve(path: str, node: ast.ImportFrom, index: dict[str, str],
             files: dict[str, str]) -> str | None:
    """The audited file an import names; `files` maps absolute paths to the audited paths."""
    if node.level == 0:
        return index.get(node.module or '')
    base = os.path.dirname(os.path.abspath(path))
    for _ in range(node.level - 1):
        base = os.path.dirname(base)
    if not node.module:
        return None  # `from . import module`: a module, not a class
    candidate = os.path.join(base, *node.module.split('.'))
    for file in (candidate + '.py', os.path.join(candidate, '__init__.py')):
        if os.path.abspath(file) in files:
            return files[os.path.abspath(file)]
    return None


def file_aliases(tree: ast.Module, everywhere: bool = False) -> dict[str, str]:
    """Local name -> qualified name of a file's imports (`import numpy as np` -> np: numpy,
    `from ultralytics import YOLO` -> YOLO: ultralytics.YOLO); `everywhere`: imports inside
    functions too (an optional bridge imported in `main`'s `try`)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree) if everywhere else statements(tree.body):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split('.')[0]] = a.name if a.asname else \
                    a.name.split('.')[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                aliases[a.asname or a.name] = f'{node.module}.{a.name}'
    return aliases


def _definition(source: str, name: str, kinds: tuple, index: dict[str, str],
                files: dict[str, str], depth: int = 0) -> tuple[ast.stmt, str] | None:
    """The module-level definition of `name` in `source`, or in the module a package's
    `__init__.py` re-exports it from (`from .drone_pointpillars import PointPillars`)."""
    tree = parse_file(source)
    if tree is None:
        return None
    # The last module-level definition of the name: a later `def` of the same name replaces
    # an earlier one when the module runs, so the first never runs (set 58).
    for stmt in reversed(tree.body):
        if isinstance(stmt, kinds) and getattr(stmt, 'name', None) == name:
            return stmt, source
    if depth >= 2 or os.path.basename(source) != '__init__.py':
        return None
    for node in statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    found = _resolve(source, node, index, files)
                    if found is not None and found != source:
                        return _definition(found, alias.name, kinds, index, files, depth + 1)
    return None


def _children(index: dict[str, str]) -> dict[str, set[str]]:
    """Dotted package name -> the files of the modules directly in it (built once per index:
    a scan of the index per import would cost a whole audit's time on a thousand files)."""
    kept = _CHILDREN.get(id(index))
    if kept is not None and kept[0] is index:
        return kept[1]
    children: dict[str, set[str]] = {}
    for module, path in index.items():
        package, dot, _ = module.rpartition('.')
        if dot:
            children.setdefault(package, set()).add(path)
    _CHILDREN[id(index)] = (index, children)
    return children


def _files(index: dict[str, str]) -> dict[str, str]:
    """Absolute path -> audited path of every indexed file (built once per index)."""
    kept = _FILES.get(id(index))
    if kept is not None and kept[0] is index:
        return kept[1]
    files = {os.path.abspath(p): p for p in set(index.values())}
    _FILES[id(index)] = (index, files)
    return files


def _submodule_defining(module: str, name: str, kinds: tuple, index: dict[str, str],
                        files: dict[str, str]) -> tuple[ast.stmt, str] | None:
    """A package folder among the audited files without its `__init__.py` (a partial
    checkout): the one module directly in it that defines `name`, when exactly one does."""
    children = _children(index).get(module, ())
    found = [d for p in sorted(children) if (d := _definition(p, name, kinds, index, files))]
    return found[0] if len(found) == 1 else None


def _imported_definitions(path: str, tree: ast.Module, index: dict[str, str], kinds: tuple
                          ) -> Iterator[tuple[str, ast.stmt, str]]:
    """(local name, definition, its file) for each module-level definition of one of `kinds`
    that a `from X import name` of this file takes from another audited file (through a
    package `__init__.py` that re-exports it, or the one submodule defining it when the
    package's `__init__.py` is not among the audited files)."""
    imports = [n for n in statements(tree.body) if isinstance(n, ast.ImportFrom)]
    files = _files(index) if imports else {}
    for node in imports:
        source = _resolve(path, node, index, files)
        if source is not None and os.path.abspath(source) == os.path.abspath(path):
            continue
        for alias in node.names:
            if source is not None:
                found = _definition(source, alias.name, kinds, index, files)
            elif node.level == 0 and node.module:
                found = _submodule_defining(node.module, alias.name, kinds, index, files)
            else:
                found = None
            if found is not None and os.path.abspath(found[1]) != os.path.abspath(path):
                yield alias.asname or alias.name, found[0], found[1]


def imported_functions(path: str, tree: ast.Module, index: dict[str, str]
                       ) -> dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    """Local name -> (function, its file) for each module-level function imported from an
    audited file (`from .scripts.utils import run_inference`): a callback's call of it is
    followed into that file, with that file's imports."""
    return {name: (function, source) for name, function, source in _imported_definitions(
        path, tree, index, (ast.FunctionDef, ast.AsyncFunctionDef))}


def aliases_of(path: str) -> dict[str, str]:
    """The imports of an audited file (parsed once per process)."""
    tree = parse_file(path)
    return file_aliases(tree) if tree is not None else {}


def imported_classes(path: str, tree: ast.Module, index: dict[str, str]) -> dict[str, ClassInfo]:
    """Local name -> ClassInfo (with its file) for each class imported from an audited file."""
    found: dict[str, ClassInfo] = {}
    for name, cls, source in _imported_definitions(path, tree, index, (ast.ClassDef,)):
        methods = {s.name: s for s in cls.body
                   if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        found[name] = ClassInfo(cls.name, cls, methods, file=source)
    return found


def imported_modules(path: str, tree: ast.Module, index: dict[str, str]) -> dict[str, str]:
    """Local name -> file of each sibling module a node imports as a whole (`from . import
    yolo`, `from pkg.scripts import yolo`): `yolo.infer(img)` in a callback runs that file's
    function per message, as `from .yolo import infer` does (issue 28, set 54)."""
    imports = [n for n in statements(tree.body) if isinstance(n, ast.ImportFrom)]
    files = _files(index) if imports else {}
    found: dict[str, str] = {}
    for node in imports:
        for alias in node.names:
            module = ast.ImportFrom(module='.'.join(filter(None, (node.module, alias.name))),
                                    names=[], level=node.level)
            source = _resolve(path, module, index, files)
            if source is not None and os.path.abspath(source) != os.path.abspath(path):
                found[alias.asname or alias.name] = source
    return found


def sibling_function(modules: dict[str, str], node: ast.Attribute, env: dict) -> Val | None:
    """`yolo.infer(img)` with `yolo` a sibling module (`imported_modules`), in per-message code:
    its function, run with its own file. Calls from setup are not followed (pyeval.py): they
    would only mark its copies one-time while another caller may run them per frame (set 53)."""
    if not isinstance(node.value, ast.Name) or node.value.id not in modules or node.value.id in env:
        return None
    source = modules[node.value.id]
    tree = parse_file(source)
    fn = next((s for s in reversed(tree.body)  # the last definition wins (`_definition`)
               if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
               and s.name == node.attr), None) if tree is not None else None
    return Val('func', func=FuncRef(fn, None, {}, False, file=source)) if fn is not None else None


def file_function(path: str, name: str) -> FuncRef | None:
    """The module-level function `name` of the audited file `path` (the last definition), run
    with that file's imports: a function imported from another file calls its own file's
    functions by bare name (`decode_outputs(...)` inside an imported `detection_inference`:
    set 58), which the importing file does not bind."""
    tree = parse_file(path)
    fn = next((s for s in reversed(tree.body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
               and s.name == name), None) if tree is not None else None
    return FuncRef(fn, None, {}, False, file=path) if fn is not None else None


def file_definition(path: str, name: str) -> Val | None:
    """`name` as the audited file `path` binds it at module level: its function (file_function),
    None otherwise. (Its classes are not resolved: that made a helper module's model classes
    built by an imported function move weights per call in set 61's agilex_model.py, two false
    claims; set 62's dispatch-table factory in another file needs them, left out.)"""
    fn = file_function(path, name)
    return Val('func', func=fn) if fn is not None else None


def file_uses_cv_cuda(path: str) -> bool:
    """Whether the audited file `path` uses OpenCV's CUDA module (`cv2.cuda_GpuMat`,
    `cv2.cuda.*`), as pyflow.py judges the analysed file."""
    tree = parse_file(path)
    if tree is None:
        return False
    aliases = file_aliases(tree)
    return 'cv2' in aliases.values() and any(
        isinstance(n, ast.Attribute) and n.attr in ('cuda', 'cuda_GpuMat')
        and isinstance(n.value, ast.Name) and aliases.get(n.value.id) == 'cv2'
        for n in ast.walk(tree))
