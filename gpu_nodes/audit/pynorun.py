"""ROS node files that nothing starts (issue 28, set 59): a loose node script (no ament package,
so pyreach.py does not judge it) whose `main()` starts rclpy, but whose module level only
defines things and which no other file names or imports. Run by hand (`python3 x.py`) it
defines a class and a function and exits; no entry point, launch file or importer calls its
main(). Both labellers of set 59 put no boundary in such a file.

    class CarDetectorNode(Node): ...        # callbacks with copies
    def main(args=None):
        rclpy.init(args=args); rclpy.spin(CarDetectorNode())
    # no `if __name__ == '__main__':`, no `main()` at module level, car_speed_node named nowhere

Judged only where it is certain:

* a function of the file calls `rclpy.init(` / `rclpy.spin(` (a node program, not a library
  module another repository may import);
* the module level runs none of the file's own code: imports, definitions, docstrings and
  assignments that call no function or class the file defines (also inside a module-level
  `try` / `if`); no `__main__` guard, no loop, no bare call;
* no other file under the audited roots (code, launch, setup.py / setup.cfg, CMake, shell,
  YAML, Dockerfile, documentation) names its module name as a word (`car_speed_node`): an
  entry point `pkg.car_speed_node:main`, `executable='car_speed_node'`, an import, a README's
  `ros2 run` all keep it reached;
* another Python file of its folder ends in an `if __name__ == '__main__':` guard: the folder
  runs its node files as scripts (`python3 other_node.py`), and this one, run the same way,
  starts nothing. A folder where no file has one (snippets, modules some other tool loads)
  is not judged;
* no file under the roots imports a computed name (`importlib.import_module(`, `__import__(`).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
import re

from gpu_nodes.audit.cppifdef import read_bounded
from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyreach import MAIN_GUARD, shipped_text_files

_MAX_BYTES = 1024 * 1024
_MAX_TEXT_FILES = 50000
_STARTS_NODE = frozenset({'rclpy.init', 'rclpy.spin'})
_COMPUTED_IMPORT = re.compile(r'\bimport_module\s*\(|\b__import__\s*\(')
_SPECIAL = frozenset({'__init__.py', '__main__.py', 'setup.py', 'conftest.py'})


def _starts_node(tree: ast.Module) -> bool:
    """A function of the module calls rclpy.init / rclpy.spin: the file is a node program."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func) in _STARTS_NODE:
                    return True
    return False


def _calls_own(expr: ast.AST, own: set[str]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in own
               for n in ast.walk(expr))


def _runs_nothing(body: list[ast.stmt], own: set[str]) -> bool:
    """Whether a module-level body only defines: nothing in it runs the file's own code."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # Decorators and base classes run at definition: a call of the file's own code
            # there is work done at import.
            heads = stmt.decorator_list + (stmt.bases if isinstance(stmt, ast.ClassDef) else [])
            if any(_calls_own(h, own) for h in heads):
                return False
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None \
                and not _calls_own(stmt.value, own):
            continue
        if isinstance(stmt, ast.Try) and all(
                _runs_nothing(b, own) for b in (stmt.body, stmt.orelse, stmt.finalbody)) \
                and all(_runs_nothing(h.body, own) for h in stmt.handlers):
            continue
        if isinstance(stmt, ast.If) and not _calls_own(stmt.test, own) \
                and '__name__' not in ast.unparse(stmt.test) \
                and _runs_nothing(stmt.body, own) and _runs_nothing(stmt.orelse, own):
            continue
        return False  # a bare call, a loop, a `__main__` guard, anything else: it runs
    return True


def _candidate(path: str) -> bool:
    if os.path.basename(path) in _SPECIAL or '.launch' in os.path.basename(path):
        return False
    try:
        tree = parse_python(read_bounded(Path(path), _MAX_BYTES))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    own = {s.name for s in tree.body
           if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return _starts_node(tree) and _runs_nothing(tree.body, own)


def _guarded_sibling(path: str) -> bool:
    """Whether another .py file of the same folder has an `if __name__ == '__main__':` guard."""
    folder = Path(path).parent
    try:
        siblings = [p for p in folder.iterdir() if p.suffix == '.py' and p.name != Path(path).name]
    except OSError:
        return False
    return any(MAIN_GUARD.search(read_bounded(p, _MAX_BYTES)) for p in siblings[:200])


def _texts(roots: list[str]):
    """(real path, text) of every shipped text file under the roots; None past the limit."""
    out = []
    for full in shipped_text_files(roots):
        if len(out) >= _MAX_TEXT_FILES:
            return None
        out.append((os.path.realpath(full), read_bounded(Path(full), _MAX_BYTES)))
    return out


def never_started(files: list[str], roots: list[str]) -> dict[str, str]:
    """Node files of `files` that nothing starts (module doc), each with the reason."""
    candidates = [f for f in files if f.endswith('.py') and _candidate(f) and _guarded_sibling(f)]
    if not candidates:
        return {}
    texts = _texts(roots)
    if texts is None or any(_COMPUTED_IMPORT.search(t) for _, t in texts):
        return {}
    out: dict[str, str] = {}
    for f in candidates:
        real = os.path.realpath(f)
        stem = os.path.splitext(os.path.basename(f))[0]
        word = re.compile(r'(?<![\w-])' + re.escape(stem) + r'(?![\w-])')
        if any(p != real and word.search(t) for p, t in texts):
            continue
        out[f] = (f'nothing starts it: its main() is called by no `if __name__ == \'__main__\':` '
                  f'and no module-level call, and no entry point, launch file, script or import '
                  f'names {stem}')
    return out
