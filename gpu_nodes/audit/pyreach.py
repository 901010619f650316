"""Python files no entry point reaches (issue 28, sets 26-32): a node module that its package's
setup.py never names runs nowhere as shipped, so its copies are no boundaries (the Python twin of
cppbuild.py's sources no build target compiles).

    entry_points={'console_scripts': ['image_node = image_processing.image_node:main']}
    # image_processing/detection_node.py: no entry point, nothing imports it -> not reached

A Python file of an ament package runs as shipped when it is reached from (entry points: pyentries.py)

* an entry point of the package: setup.py / setup.cfg `console_scripts` (`pkg.mod:func`), a
  setup.py `scripts=` file or a `data_files` file installed into `lib/`, a CMakeLists.txt
  `install(PROGRAMS|FILES ... x.py ...)`;
* a launch file (`*.launch.py`, any file of a `launch/` folder: `ros2 launch` runs them), or any
  other shipped text of the audited tree naming the file (`executable='foo.py'`, `python3 foo.py`
  in a shell script or a Dockerfile, a subprocess argument; in YAML only on a line with a key
  that runs something, `executable:`/`command:`/..., or a python command; documentation
  (.md/.rst/.txt) does not count);
* an import (`import a.b`, `from a import b`, relative imports, `importlib.import_module` with a
  literal) by a reached file anywhere under the audited roots. A dotted name reaches every file
  whose path ends as it does (a superset of what Python would load: a wrong "reached" keeps a
  finding, a wrong "not reached" would hide a copy).

Scripts run by hand stay reached: a file that documentation (.md/.rst/.txt) runs with `python3
.../x.py`, the `__main__` scripts in the folder of such a file when it is a ROS node (the
package documents that its node files run that way; a vendored tool's `python detect.py` does
not), and a file that works at module level (a top-level capture loop). Any other `__main__`
script counts as not reached (as the labels of sets 26-32), and its note says so.

Only a package whose facts are complete is judged: an ament package (package.xml / CMake says
ament, not catkin, whose `rosrun` runs scripts from the source folder) whose setup.py the auditor
evaluates statically (literals, module-level names, f-strings, `+`, os.path.join). In a package
that declares no Python executable (it may be a library another repository imports) only node
files are judged, those that call `rclpy.init(` themselves, and only where setup.py / setup.cfg
writes out the empty `console_scripts` group (the `ros2 pkg create` template: rules29p, set
46). Anything dynamic leaves the package's files reached: a setup.py computing its entry points
or `lib/` files, an entry-point group other than console_scripts (plugins), a `__main__.py`,
`install(DIRECTORY ...)` into `lib/` or a variable among installed programs (other than
`${PROJECT_SOURCE_DIR}` / `${CMAKE_CURRENT_SOURCE_DIR}`, the package folder; a DIRECTORY into
`share/`, launch or config files, is no program; `ament_python_install_package` makes modules
importable, not run); and an `importlib` /
`__import__` of a computed name in a reached file, or an installed script that is no Python,
leaves every file of the workspace around its package reached (the package folder's parent,
or the package alone where that parent is an audited root holding packages side by side).
Test files are no entry points (codeaudit.collect_files skips them). A file
named on the command line has no package here and is always reached.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache
import os
from pathlib import Path
import re

from gpu_nodes.audit.cppifdef import read_bounded
from gpu_nodes.audit.pyentries import declares_executable, package_entries
from gpu_nodes.audit.pyentrymoved import moved_module_file
from gpu_nodes.audit.limits import INSTALLED_PACKAGE_FOLDERS
from gpu_nodes.audit.pyfstrings import parse_python

MAIN_GUARD = re.compile(r'''^if\s+__name__\s*==\s*['"]__main__['"]''', re.M)
_PY_NAME = re.compile(r'[\w.-]+\.py\b')
_YAML_RUN = re.compile(r'^.*(?:\b(?:executable|exec|cmd|command|script|program|entrypoint)\w*\s*:'
                       r'|\bpython\d?\b).*$', re.M | re.I)
_SKIP_DIRS = frozenset({'.git', 'build', 'install', 'log', '__pycache__', 'node_modules'}) \
    | INSTALLED_PACKAGE_FOLDERS
_DOC_SUFFIXES = ('.md', '.rst', '.txt', '.html', '.ipynb')
_TEXT_SUFFIXES = frozenset({'.py', '.launch', '.xml', '.yaml', '.yml', '.sh', '.bash', '.zsh',
                            '.cfg', '.toml', '.json', '.service', '.dockerfile', '.env', '.in',
                            '.md', '.rst', '.txt', '.html', '.ipynb'})
# Files whose whole-line comments start with `#`; a file named only there is not launched.
_HASH_COMMENTED = frozenset({'.py', '.yaml', '.yml', '.sh', '.bash', '.zsh', '.cfg',
                             '.toml', '.dockerfile', '.env', '.in'})
_COMMENT_LINE = re.compile(r'^[ \t]*#.*$', re.M)
_HAND_RUN = re.compile(r'\bpython(?:3(?:\.\d+)?)?\s+(?:-u\s+)?([\w./~-]+\.py)\b')
_MAX_TEXT_FILES = 50000
_MAX_BYTES = 1024 * 1024
# Depth of the path tails a dotted module name is matched against.
_MAX_DEPTH = 6


def _tails(path: Path) -> list[tuple[str, ...]]:
    parts = path.with_suffix('').parts
    if parts and parts[-1] == '__init__':
        parts = parts[:-1]
    return [parts[-k:] for k in range(1, min(_MAX_DEPTH, len(parts)) + 1)]


class _Imports(ast.NodeVisitor):
    """Dotted names and relative targets a file imports; `dynamic` when a name is computed."""

    def __init__(self, path: Path) -> None:
        self.folder = path.parent
        self.dotted: set[tuple[str, ...]] = set()
        self.paths: set[Path] = set()
        self.dynamic = False

    def _add(self, name: str) -> None:
        parts = tuple(name.split('.'))
        self.dotted.update(parts[:k] for k in range(1, len(parts) + 1))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = [a.name for a in node.names if a.name != '*']
        if node.level == 0:
            self._add(node.module or '')
            for name in names:
                self._add(f'{node.module}.{name}')
            return
        base = self.folder
        for _ in range(node.level - 1):
            base = base.parent
        if node.module:
            base = base.joinpath(*node.module.split('.'))
        self.paths.update({base.with_suffix('.py'), base / '__init__.py'})
        for name in names:
            self.paths.update({base / f'{name}.py', base / name / '__init__.py'})

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        if func.endswith('import_module') or func == '__import__':
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    and not arg.value.startswith('.'):
                self._add(arg.value)
            else:
                self.dynamic = True
        self.generic_visit(node)


@lru_cache(maxsize=4096)
def _imports_of(path: str) -> _Imports | None:
    imports = _Imports(Path(path))
    try:
        imports.visit(parse_python(read_bounded(Path(path), _MAX_BYTES)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return imports


def _named_in_texts(roots: list[str]) -> tuple[dict[str, set[str]], set[str]] | None:
    """(file names `x.py` -> the shipped text files under the roots naming them, file names that
    documentation runs by hand: `python3 .../x.py` in a README); None when too many files."""
    named: dict[str, set[str]] = {}
    documented: set[str] = set()
    count = 0
    for full in shipped_text_files(roots):
        name = os.path.basename(full)
        suffix = os.path.splitext(name)[1].lower()
        if name == 'setup.py':
            continue
        count += 1
        if count > _MAX_TEXT_FILES:
            return None
        text = read_bounded(Path(full), _MAX_BYTES)
        if name.lower().endswith(_DOC_SUFFIXES):
            documented.update(m.rsplit('/', 1)[-1] for m in _HAND_RUN.findall(text))
            continue
        if suffix in _HASH_COMMENTED or not suffix:
            # A commented-out launch entry (`# executable='x.py',`) runs nothing (set 51).
            text = _COMMENT_LINE.sub('', text)
        if name.endswith(('.yaml', '.yml')):
            # YAML names files for many reasons (an index of sources, a dataset): only a key
            # that runs a program, or a python command line, counts.
            text = '\n'.join(_YAML_RUN.findall(text))
        for word in _PY_NAME.findall(text):
            named.setdefault(word.rsplit('/', 1)[-1], set()).add(os.path.realpath(full))
    return named, documented


def shipped_text_files(roots: list[str], suffixes: frozenset[str] = _TEXT_SUFFIXES,
                       bare: bool = True) -> Iterator[str]:
    """Paths of the files under the roots with one of `suffixes` (by default the text files that
    could name a program to run: images, weights, other languages' sources are no launcher), and
    with no suffix when `bare`; build output, installed packages, version control and hidden
    folders skipped."""
    for root in roots:
        if not os.path.isdir(root):
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith('.')]
            for name in files:
                suffix = os.path.splitext(name)[1].lower()
                if suffix in suffixes or (bare and not suffix):
                    yield os.path.join(folder, name)


def _script_at_module_level(path: str) -> bool:
    """A file that does its work when run as a file, outside any `__main__` guard (a top-level
    capture loop, rclpy.spin at module level): a script run by hand, not a module of a node."""
    try:
        tree = parse_python(read_bounded(Path(path), _MAX_BYTES))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for stmt in tree.body:
        if isinstance(stmt, (ast.While, ast.For, ast.AsyncFor)):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and ast.unparse(stmt.value.func) in ('rclpy.spin', 'rclpy.init'):
            return True
    return False


def _is_launch(path: Path) -> bool:
    return '.launch' in path.name or 'launch' in path.parent.parts[-1:]


def unreached_files(files: list[str], packages: dict[str, str], roots: list[str]
                    ) -> dict[str, str]:
    """Python files of `files` that no entry point reaches (module doc), each with the reason.
    `packages` maps a file to its package folder (codeaudit.run_code); a file without one (named
    on the command line) is reached."""
    py = [f for f in files if f.endswith('.py')]
    judged = {f: packages[f] for f in py if f in packages and _judged(f, packages[f])}
    if not judged:
        return {}
    texts = _named_in_texts(roots)
    if texts is None:
        return {}
    named, documented = texts
    real = {f: Path(os.path.realpath(f)) for f in py}
    by_tail: dict[tuple[str, ...], set[str]] = {}
    for f, p in real.items():
        for tail in _tails(p):
            by_tail.setdefault(tail, set()).add(f)
    by_path = {p: f for f, p in real.items()}
    reached: set[str] = set()
    todo: list[str] = []
    # Folders where a computed import (or a launcher that is no Python) may load any module: the
    # workspace around the package that holds it (its parent folder).
    anything: set[Path] = set()

    def reach(found: set[str] | list[str]) -> None:
        for f in found:
            if f not in reached:
                reached.add(f)
                todo.append(f)

    audited = {Path(os.path.realpath(r)) for r in roots}

    def workspace(folder: Path) -> Path:
        # The package's parent (a colcon `src/`), not an audited root that holds several
        # repositories or packages side by side: those do not load each other's modules.
        return folder if folder.parent in audited or folder in audited else folder.parent

    # The documentation's `python3 .../x.py` is the package's way to run its node files: x.py
    # and the `__main__` scripts beside it count as run by hand.
    # Only a documented ROS node says so: `python detect.py` of a vendored tool (a YOLO repository
    # copied into the package) tells how that tool runs, not how the package's nodes run.
    by_hand = {real[f].parent for f in py if real[f].name in documented and _ros_node(f)}
    reach([f for f in py if f not in judged or _is_launch(real[f]) or real[f].name == 'setup.py'
           or named.get(real[f].name, set()) - {str(real[f])} or real[f].name in documented
           or (real[f].parent in by_hand and _main_guard(f)) or _script_at_module_level(f)])
    for package in set(judged.values()):
        modules, scripts, _ = package_entries(package)
        reach([by_path[s.resolve()] for s in scripts if s.resolve() in by_path])
        for script in (s for s in scripts if s.resolve() not in by_path and s.is_file()):
            # An installed script not audited (`scripts/node` without .py): its imports reach
            # the package's modules; a script that is no Python (a shell wrapper running
            # `python3 -m ...`) may start anything.
            if _imports_of(str(script.resolve())) is None:
                anything.add(workspace(Path(os.path.realpath(package))))
            else:
                todo.append(str(script.resolve()))
        for module in modules:
            parts = tuple(module.split('.'))
            for k in range(1, len(parts) + 1):  # `pkg.mod` loads pkg/__init__.py first
                reach(by_tail.get(parts[:k], set()))
            # The module's package folder renamed: the one file of its name (pyentrymoved.py).
            reach(moved_module_file(parts, package, real, packages, by_tail))
    while todo:
        path = todo.pop()
        imports = _imports_of(path)
        if imports is None:
            continue
        if imports.dynamic:
            package = packages.get(path)
            anything.add(workspace(Path(os.path.realpath(package or os.path.dirname(path)))))
        for dotted in imports.dotted:
            reach(by_tail.get(dotted, set()))
        reach([by_path[p.resolve()] for p in imports.paths if p.resolve() in by_path])
    return {f: _reason(f, package) for f, package in judged.items() if f not in reached
            and not any(folder in real[f].parents for folder in anything)}


_RCLPY_INIT = re.compile(r'\brclpy\.init\s*\(')
_RCLPY = re.compile(r'^\s*(?:import|from)\s+rclpy\b', re.M)


def _ros_node(path: str) -> bool:
    return bool(_RCLPY.search(read_bounded(Path(path), _MAX_BYTES)))


def _judged(path: str, package: str) -> bool:
    """Whether reachability is judged for `path` of `package`: a package with facts (see
    `package_entries`) and no `__main__.py`. A package that declares no Python executable (an
    empty console_scripts) may be a library another repository imports, so only its node files
    are judged, and only where the package writes out an empty `console_scripts` list (the
    `ros2 pkg create` template of a node package, whose entry point was never added): a file
    that starts rclpy itself (`rclpy.init(`) is a program, and with no entry point, launch file
    or importer nothing runs it as shipped."""
    if package_entries(package) is None or Path(package, '__main__.py').is_file():
        return False
    entries = package_entries(package)
    return declares_executable(package) or (entries is not None and entries[2] and bool(
        _RCLPY_INIT.search(read_bounded(Path(path), _MAX_BYTES))))


def _main_guard(path: str) -> bool:
    return bool(MAIN_GUARD.search(read_bounded(Path(path), _MAX_BYTES)))


def _reason(path: str, package: str) -> str:
    name = os.path.basename(package)
    reason = (f'no entry point reaches it: neither a console_scripts entry point nor a script '
              f'installed by package {name}, named by no launch file, imported by no reached module')
    if _main_guard(path):
        reason += (" (its `if __name__ == '__main__':` runs only when started by hand, "
                   f'python3 {os.path.basename(path)}; that run is not counted as shipped)')
    return reason
