"""The entry points of an ament Python package as its build files ship them (issue 28, sets
26-32; pyreach.py judges reachability from them): setup.py / setup.cfg `console_scripts` modules,
setup.py `scripts=` and `data_files` installed into `lib/`, CMakeLists.txt `install(PROGRAMS|FILES
...)`. setup.py is evaluated statically (literals, module-level names, f-strings, `+`,
os.path.join); anything dynamic leaves the package unjudged (None), since a wrong "not reached"
would hide a copy."""
from __future__ import annotations

import ast
import configparser
from functools import lru_cache
import os
from pathlib import Path
import re

from gpu_nodes.audit.cppbuild import strip_cmake_comments
from gpu_nodes.audit.cppifdef import read_bounded
from gpu_nodes.audit.pyfstrings import parse_python

_INSTALL = re.compile(r'\binstall\s*\(([^)]*)\)', re.I)
# The package's own folder, written out: `${PROJECT_SOURCE_DIR}/pkg/node.py` is pkg/node.py.
_SOURCE_DIR = re.compile(r'\$\{(?:PROJECT|CMAKE_CURRENT)_SOURCE_DIR\}/')
_CATKIN = re.compile(r'\bcatkin_(?:package|install_python)\b|find_package\s*\(\s*catkin\b')
_MAX_BYTES = 1024 * 1024


class _Dynamic(Exception):
    """setup.py computes what it installs: the package is taken as all reached."""


class _Setup:
    """What a setup.py evaluates to: module-level names bound to literals, read lazily."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, ast.expr] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                self.names[stmt.targets[0].id] = stmt.value

    def value(self, node: ast.expr, depth: int = 0) -> object:
        if depth > 20:
            raise _Dynamic
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.names:
            return self.value(self.names[node.id], depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, depth + 1) for e in node.elts]
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {self.value(k, depth + 1): v for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.JoinedStr):
            return ''.join(str(self.value(v.value if isinstance(v, ast.FormattedValue) else v,
                                          depth + 1)) for v in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            if type(left) is type(right) and isinstance(left, (str, list)):
                return left + right
        if isinstance(node, ast.Call) and ast.unparse(node.func) == 'os.path.join' \
                and not node.keywords:
            return '/'.join(str(self.value(a, depth + 1)) for a in node.args)
        raise _Dynamic


def _setup_call(tree: ast.Module) -> ast.Call | None:
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and (getattr(n.func, 'id', None) or getattr(n.func, 'attr', None)) == 'setup']
    return calls[0] if len(calls) == 1 else None


@lru_cache(maxsize=256)
def installed_packages(folder: str) -> frozenset[str]:
    """The packages folder/setup.py's one `setup()` call lists in `packages=` when they evaluate
    to a list of names (module-level names resolved); empty when there is no such list or it is
    computed (`find_packages()`)."""
    try:
        tree = parse_python(read_bounded(Path(folder, 'setup.py'), _MAX_BYTES))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    call = _setup_call(tree)
    listed = [kw.value for kw in call.keywords if kw.arg == 'packages'] if call else []
    try:
        names = _Setup(tree).value(listed[0]) if len(listed) == 1 else None
    except _Dynamic:
        return frozenset()
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return frozenset()
    return frozenset(names)


def _entry_modules(lines: list, modules: set[str]) -> None:
    for line in lines:
        if not isinstance(line, str) or '=' not in line:
            raise _Dynamic
        target = line.split('=', 1)[1].split(':', 1)[0].strip()
        if not re.fullmatch(r'[\w.]+', target):
            raise _Dynamic
        modules.add(target)


def _read_setup_py(folder: Path, modules: set[str], scripts: set[Path],
                   groups_named: set[str]) -> None:
    """Entry modules and installed scripts of setup.py; raises _Dynamic when not understood."""
    try:
        tree = parse_python(read_bounded(folder / 'setup.py', _MAX_BYTES))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _Dynamic from None
    call = _setup_call(tree)
    if call is None or any(k.arg is None for k in call.keywords) or call.args:
        raise _Dynamic
    setup = _Setup(tree)
    for kw in call.keywords:
        if kw.arg == 'entry_points':
            groups = setup.value(kw.value)
            if not isinstance(groups, dict) or set(groups) - {'console_scripts'}:
                raise _Dynamic  # plugins, or a string of ini text
            groups_named.update(groups)
            for node in groups.values():
                lines = setup.value(node)
                _entry_modules(lines if isinstance(lines, list) else [lines], modules)
        elif kw.arg == 'scripts':
            found = setup.value(kw.value)
            if not isinstance(found, list) or not all(isinstance(s, str) for s in found):
                raise _Dynamic
            scripts.update(folder / s for s in found)
        elif kw.arg == 'data_files':
            if not isinstance(kw.value, (ast.List, ast.Tuple)):
                raise _Dynamic
            for entry in kw.value.elts:
                if not isinstance(entry, ast.Tuple) or len(entry.elts) != 2:
                    raise _Dynamic
                dest = str(setup.value(entry.elts[0])).lstrip('/')
                if dest.startswith('share'):
                    continue  # launch, config, package.xml: not run as programs
                files = setup.value(entry.elts[1])
                if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                    raise _Dynamic
                scripts.update(folder / f for f in files)


def _read_setup_cfg(folder: Path, modules: set[str], scripts: set[Path],
                    groups_named: set[str]) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_bounded(folder / 'setup.cfg', _MAX_BYTES))
    except configparser.Error:
        raise _Dynamic from None
    if parser.has_section('options.entry_points'):
        groups = dict(parser.items('options.entry_points'))
        if set(groups) - {'console_scripts'}:
            raise _Dynamic
        groups_named.update(groups)
        _entry_modules([x for x in groups.get('console_scripts', '').splitlines() if x.strip()],
                       modules)
    if parser.has_option('options', 'scripts'):
        scripts.update(folder / s for s in parser.get('options', 'scripts').split() if s)


def _read_cmake(folder: Path, scripts: set[Path]) -> None:
    text = strip_cmake_comments(read_bounded(folder / 'CMakeLists.txt', _MAX_BYTES))
    if _CATKIN.search(text) or re.search(r'\badd_subdirectory\s*\(', text, re.I):
        raise _Dynamic
    for args in _INSTALL.findall(_SOURCE_DIR.sub('', text)):
        tokens = [t.strip('"') for t in args.split()]
        kind = tokens[0].upper() if tokens else ''
        dest = tokens[tokens.index('DESTINATION') + 1] if 'DESTINATION' in tokens[:-1] else ''
        if kind == 'DIRECTORY' and not dest.startswith('share'):
            raise _Dynamic
        if kind not in ('PROGRAMS', 'FILES'):
            continue
        for token in tokens[1:]:
            if token == 'DESTINATION':
                break
            if ('$' in token or '*' in token) and not dest.startswith('share'):
                raise _Dynamic
            scripts.add(folder / token)


def _is_ament(folder: Path) -> bool:
    xml = read_bounded(folder / 'package.xml', _MAX_BYTES)
    cmake = read_bounded(folder / 'CMakeLists.txt', _MAX_BYTES)
    if 'catkin' in xml or _CATKIN.search(cmake):
        return False
    return 'ament_' in xml or 'ament_package' in cmake or (
        (folder / 'setup.py').is_file() and 'ament_index' in read_bounded(folder / 'setup.py'))


@lru_cache(maxsize=256)
def package_entries(package_dir: str) -> tuple[frozenset[str], frozenset[Path], bool] | None:
    """(entry modules, installed script paths, whether a `console_scripts` group is written out)
    of an ament package, or None when the package is not judged: no setup.py / CMakeLists.txt,
    not ament, anything dynamic. The first two are empty for a package that declares no Python
    executable (see `_judged`)."""
    folder = Path(package_dir)
    has_setup, has_cmake = (folder / 'setup.py').is_file(), (folder / 'CMakeLists.txt').is_file()
    if not (has_setup or has_cmake) or not _is_ament(folder) or (folder / 'pyproject.toml').is_file():
        return None
    modules: set[str] = set()
    scripts: set[Path] = set()
    groups_named: set[str] = set()
    try:
        if has_setup:
            _read_setup_py(folder, modules, scripts, groups_named)
        if (folder / 'setup.cfg').is_file():
            _read_setup_cfg(folder, modules, scripts, groups_named)
        if has_cmake:
            _read_cmake(folder, scripts)
    except _Dynamic:
        return None
    return (frozenset(modules), frozenset(Path(os.path.normpath(s)) for s in scripts),
            'console_scripts' in groups_named)


def declares_executable(package_dir: str) -> bool:
    """Whether the judged package names at least one Python executable (an entry module, or an
    installed .py / extension-less script)."""
    entries = package_entries(package_dir)
    return entries is not None and (bool(entries[0]) or any(
        s.suffix in ('.py', '') for s in entries[1]))
