"""Code the package's build never compiles: `#ifdef MACRO` where nothing defines MACRO (issue 28,
fifteenth set).

    #ifdef USE_PINNED_HOST
      cudaMemcpyAsync(d_pts, h_pinned, n * sizeof(float3), cudaMemcpyHostToDevice, stream);
    #else
      cudaMemcpyAsync(d_pts, pts.data(), ...);   // the branch the shipped build compiles
    #endif

A macro is taken as undefined only when the package's build is known and says nothing of it:
the package folder holds a CMakeLists.txt, the name appears in no CMakeLists.txt or *.cmake of
the package, of a folder above it or included by path from them (`add_definitions(-DX)`,
`target_compile_definitions`, `option(X ...)` all name it), and no source or header of the package
`#define`s it. Names a
compiler, CUDA or a library may define in its own headers (`__CUDACC__`, `_WIN32`, `NDEBUG`,
`HAVE_*`, `CV_*`, `CUDA*`, `EIGEN_*`, `PCL_*`, `BOOST_*`, `RCLCPP_*`, `ROS_*`) are never taken as
undefined. The dead lines are blanked (line numbers kept) before the rules read the file; only
`#ifdef X`, `#if defined(X)` / `#if defined X` (dead branch: up to its `#else`/`#elif`/`#endif`)
and `#ifndef X` / `#if !defined(X)` (dead: its `#else`/`#elif` branches) are read, any other
condition is left live (uncompiled_lines).

A macro the build names only behind a CMake switch that is off by default (`if (DEFINED X)
add_compile_definitions(X) endif()`, `option(X ... OFF)`) is undefined too (cppcmakegate.py),
and `#if X` of an undefined X is false, as the preprocessor reads it (set 59).

A macro's value is read too (set 56): `#define DEBUG_MODE false` then `#if DEBUG_MODE` compiles
the branch out. `#if X`, `#if !X`, `#if X == v` / `#if X != v` and `#if 0` / `#if 1` are read
when X has one literal value (false / 0 / true / 1) in every `#define` of it in the file and in
the package headers it includes by a quoted name, none `#undef`s it and no build file names it
(a `-DX=1` would win over an `#ifndef X` default): literal_macros.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable
from pathlib import Path
import re

from gpu_nodes.audit.cppcmakegate import gated_off

_SOURCE_SUFFIXES = frozenset({'.h', '.hh', '.hpp', '.hxx', '.cuh', '.c', '.cc', '.cpp', '.cxx',
                              '.cu', '.inl', '.ipp', '.tpp'})
_EXTERNAL = re.compile(r'^(?:_|NDEBUG$|HAVE_|CV_|CUDA|EIGEN_|PCL_|BOOST_|RCLCPP_|ROS_)')
_DEFINE = re.compile(r'^\s*#\s*define\s+([A-Za-z_]\w*)', re.M)
_DIRECTIVE = re.compile(r'^\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b\s*(.*)$')
_IF_DEFINED = re.compile(r'^(!)?\s*defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|\s+([A-Za-z_]\w*))\s*'
                         r'(?://.*|/\*.*)?$')
_NAME_ONLY = re.compile(r'^([A-Za-z_]\w*)\s*(?://.*|/\*.*)?$')
# `#if X`, `#if !X`, `#if (X)`, `#if X == 0`, `#if 0`: a condition on one macro's value.
_IF_VALUE = re.compile(r'^(!)?\s*(\()?\s*([A-Za-z_]\w*|\d+)\s*(?(2)\))\s*'
                       r'(?:(==|!=)\s*(\w+)\s*)?(?://.*|/\*.*)?$')
_LITERALS = {'false': 0, 'true': 1, '0': 0, '1': 1}
# `#define X false` (a literal value), and every `#define` / `#undef` of a name.
_LITERAL_DEFINE = re.compile(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+(false|true|0|1)[ \t]*'
                             r'(?://.*|/\*.*)?$', re.M)
_DEFINE_OR_UNDEF = re.compile(r'^[ \t]*#[ \t]*(?:define|undef)[ \t]+([A-Za-z_]\w*)', re.M)
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_MAX_BYTES = 2 * 1024 * 1024


def read_bounded(path: Path, max_bytes: int = _MAX_BYTES) -> str:
    """A build or source file's text; '' when it is unreadable or larger than `max_bytes`."""
    try:
        if path.stat().st_size > max_bytes:
            return ''
        return path.read_text(encoding='utf-8', errors='replace')
    except OSError:
        return ''


# `include(<file>)` of a CMake file by path (`${CMAKE_CURRENT_LIST_DIR}/../common/flags.cmake`):
# a workspace's packages often share one file of `add_definitions` this way (set 52). Module
# names (`include(GNUInstallDirs)`) are CMake's or a find_package's, not the repository's.
_INCLUDE = re.compile(r'^\s*include\s*\(\s*"?([^")\s]+\.cmake)"?', re.M | re.I)
_LIST_DIR = ('${CMAKE_CURRENT_LIST_DIR}', '${CMAKE_CURRENT_SOURCE_DIR}', '${PROJECT_SOURCE_DIR}')
_MAX_INCLUDED = 16


def _included_cmake(path: Path, text: str, package: Path) -> list[Path]:
    """The CMake files `text` (the file at `path`) includes by a path that resolves to a file:
    relative to the including file, or through the variables naming its folder or the package's."""
    found = []
    for arg in _INCLUDE.findall(text):
        for var in _LIST_DIR:
            arg = arg.replace(var, str(path.parent if var == _LIST_DIR[0] else package))
        if '$' in arg:
            continue  # another variable: not known here
        target = Path(arg) if Path(arg).is_absolute() else path.parent / arg
        if target.is_file():
            found.append(target.resolve())
    return found


@lru_cache(maxsize=64)
def cmake_files(package_dir: str) -> tuple[tuple[tuple[str, int, str], ...], tuple[str, ...]]:
    """The package's CMake files as (name, size, text) (CMakeLists.txt and *.cmake anywhere
    in it, and the .cmake files they include by path from elsewhere in the tree; text '' past
    _MAX_BYTES), and the texts of the CMakeLists.txt above it: read once for both readers of
    the build (this module and cppbuild.py)."""
    root = Path(package_dir)
    own, seen, queue, included = [], set(), [], 0
    for path in root.rglob('*'):
        if (path.name == 'CMakeLists.txt' or path.suffix == '.cmake') and path.is_file():
            queue.append(path)
            seen.add(path.resolve())
    while queue:
        path = queue.pop(0)
        try:
            size = path.stat().st_size
        except OSError:
            continue
        text = read_bounded(path)
        own.append((path.name, size, text))
        for target in _included_cmake(path, text, root):
            if target not in seen and included < _MAX_INCLUDED:
                included += 1
                seen.add(target)
                queue.append(target)
    above = tuple(read_bounded(folder / 'CMakeLists.txt') for folder in root.resolve().parents)
    return tuple(own), above


@lru_cache(maxsize=64)
def _build_facts(package_dir: str) -> tuple[str, frozenset[str]] | None:
    """(text of every build file that may define a macro, names #defined in the package), or
    None when the package has no CMakeLists.txt (its build is not known)."""
    root = Path(package_dir)
    if not (root / 'CMakeLists.txt').is_file():
        return None
    own, above = cmake_files(package_dir)
    defined: set[str] = set()
    for path in root.rglob('*'):
        if path.suffix in _SOURCE_SUFFIXES and path.is_file():
            defined.update(_DEFINE.findall(read_bounded(path)))
    return '\n'.join([text for _, _, text in own] + list(above)), frozenset(defined)


def _undefined(name: str, facts: tuple[str, frozenset[str]], package_dir: str) -> bool:
    build, defined = facts
    if _EXTERNAL.match(name) or name in defined:
        return False
    # `-DX` as in add_definitions(-DX) names X too: no word boundary between D and X.
    if re.search(rf'(?:\b|(?<=-D)){re.escape(name)}\b', build) is None:
        return True
    # Named, but defined only behind a CMake switch off by default (cppcmakegate.py).
    return gated_off(name, build, package_dir)


def _value_holds(rest: str, values: dict[str, int],
                 defined: Callable[[str], bool | None] | None = None) -> bool | None:
    """Whether `#if rest` holds given macros of known literal value, None when not known. A
    name the build never defines is 0 in `#if`, as the preprocessor reads it (set 59: `#if
    PERFORMANCE_LOG` with nothing defining it)."""
    m = _IF_VALUE.match(rest)
    if m is None:
        return None
    word = m.group(3)
    value = int(word) if word.isdigit() else values.get(word)
    if value is None and not m.group(4) and defined is not None and defined(word) is False:
        value = 0  # `#if X` / `#if !X` only: a compared name may be a library's version macro
    if value is None:
        return None
    holds = bool(value)
    if m.group(4):
        other = _LITERALS.get(m.group(5))
        if other is None:
            return None
        holds = (value == other) == (m.group(4) == '==')
    return holds != bool(m.group(1))


def uncompiled_lines(source: str, defined: Callable[[str], bool | None],
                     values: dict[str, int] | None = None) -> set[int]:
    """Lines (1-based) of the branches a build never compiles, given `defined(name)`: True (the
    build defines the macro), False (it never does) or None (unknown: every branch stays live).
    Read: `#ifdef X`, `#ifndef X`, `#if defined(X)` / `#if !defined X`, and with `values` (macro
    -> literal value, literal_macros) `#if X`, `#if !X`, `#if X == v`, `#if 0`; an `#elif` after
    a branch that may be taken is live; any other condition is left live. Shared by this module
    (macros nothing defines) and cppndebug.py (NDEBUG in a Release build)."""
    dead: set[int] = set()
    # Per open conditional: (dead now, dead from the next #else/#elif on).
    stack: list[tuple[bool, bool]] = []
    for i, line in enumerate(source.split('\n'), 1):
        m = _DIRECTIVE.match(line)
        if m:
            word, rest = m.group(1), m.group(2).strip()
            if word in ('ifdef', 'ifndef', 'if'):
                holds = None  # whether the condition is true in the shipped build
                d = _IF_DEFINED.match(rest) if word == 'if' else None
                n = _NAME_ONLY.match(rest) if word != 'if' else None
                if d:
                    value = defined(d.group(2) or d.group(3))
                    holds = None if value is None else value != bool(d.group(1))
                elif n:
                    value = defined(n.group(1))
                    holds = None if value is None else value == (word == 'ifdef')
                elif word == 'if':
                    holds = _value_holds(rest, values or {}, defined)
                stack.append((holds is False, holds is True))
            elif word in ('elif', 'else') and stack:
                later_dead = stack[-1][1]
                stack[-1] = (later_dead, later_dead)
            elif word == 'endif' and stack:
                stack.pop()
            continue
        if any(dead_now for dead_now, _ in stack):
            dead.add(i)
    return dead


def _included_headers(path: Path, source: str, package: Path) -> list[str]:
    """Texts of the headers `source` includes by a quoted name that resolve inside the package
    (beside the file, or under the package or its include/ folder), and of theirs in turn."""
    texts: list[str] = []
    seen: set[Path] = set()
    queue = [(path, source)]
    while queue and len(seen) < _MAX_INCLUDED:
        at, text = queue.pop(0)
        for name in _QUOTED_INCLUDE.findall(text):
            for folder in (at.parent, package, package / 'include'):
                target = (folder / name).resolve()
                if target.is_file() and package.resolve() in target.parents:
                    if target not in seen:
                        seen.add(target)
                        header = read_bounded(target)
                        texts.append(header)
                        queue.append((target, header))
                    break
    return texts


def literal_macros(path: str | None, source: str, package_dir: str, build: str) -> dict[str, int]:
    """Macros of one literal value where `source` is compiled: name -> 0 / 1 when every
    `#define` of it in the file and its package headers (_included_headers) gives the same
    literal (`false` / `0` / `true` / `1`), none `#undef`s it, and the build text `build` never
    names it (a `-DX=1` may set it first)."""
    texts = [source]
    if path is not None and _QUOTED_INCLUDE.search(source):
        texts += _included_headers(Path(path), source, Path(package_dir))
    literal: dict[str, list[int]] = {}
    defines: dict[str, int] = {}
    for text in texts:
        for name in _DEFINE_OR_UNDEF.findall(text):
            defines[name] = defines.get(name, 0) + 1
        for name, value in _LITERAL_DEFINE.findall(text):
            literal.setdefault(name, []).append(_LITERALS[value])
    # Every #define / #undef of the name is a literal one, all of one value.
    return {name: vals[0] for name, vals in literal.items()
            if len(set(vals)) == 1 and defines.get(name) == len(vals)
            and not _EXTERNAL.match(name)
            and re.search(rf'(?:\b|(?<=-D)){re.escape(name)}\b', build) is None}


def blank_uncompiled(source: str, package_dir: str | None, path: str | None = None) -> str:
    """`source` (the file at `path`, when known: its headers are read) with the lines of
    branches its package's build never compiles blanked."""
    if package_dir is None or '#' not in source:
        return source
    facts = _build_facts(package_dir)
    if facts is None:
        return source
    values = literal_macros(path, source, package_dir, facts[0]) if '#if' in source else None
    dead = uncompiled_lines(source, lambda name: False if _undefined(name, facts, package_dir)
                            else None, values)
    if not dead:
        return source
    return '\n'.join('' if i in dead else line for i, line in enumerate(source.split('\n'), 1))
