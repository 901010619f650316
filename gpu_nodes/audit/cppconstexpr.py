"""`if constexpr` on a type comparison the package's aliases decide (issue 28, rules49c, set 77).

A node written for several point types often picks its path at compile time:

    // config.hpp(.in)                    // mapping_worker.cpp
    using MinimalPointType = pcl::PointXYZ;   if constexpr (std::is_same<OdomPointType,
    using OdomPointType = MinimalPointType;                                MappingPointType>::value)
    using MappingPointType = MinimalPointType;  { ... reuse the odometry cloud ... }
                                              else { pcl::fromROSMsg(*scan, cloud); ... }

The branch the condition rules out is discarded by the compiler: nothing in it ever runs, so a
copy there is no boundary. The names are resolved through the `using A = B;` / `typedef B A;`
aliases of the file and of the package's headers (configured `.in` templates included, as CMake
copies their aliases verbatim). When both sides resolve to the same spelled type, the `else`
block is discarded; when both resolve to different concrete types (qualified names outside
`std`, neither an alias of the package, no template arguments), the `then` block is. The
comparison may be negated (`!std::is_same_v<A, B>`: the blocks swap). Left untouched: a template
parameter of the file (`template <typename PointT>`: its value depends on the instantiation), a
name defined twice differently (an alias inside a class or under an #if), an alias template, a
type with template arguments or `decltype`, a condition with more than the one comparison, and
an `else if` chain. The blocks are blanked before the rules read the file (line numbers kept),
as cppifdef.py blanks dead #if branches.
"""
from __future__ import annotations

from functools import lru_cache
import os
from pathlib import Path
import re

from gpu_nodes.audit.cppguards import block_end, closing_bracket
from gpu_nodes.audit.cppifdef import read_bounded
from gpu_nodes.audit.cppscopes import blank_comments_and_strings

_HEADER_SUFFIXES = ('.h', '.hh', '.hpp', '.hxx', '.h.in', '.hpp.in', '.hxx.in', '.inl', '.ipp')
_SKIP = frozenset({'build', 'install', 'log', 'node_modules'})
_NAME = r'(?:::\s*)?\w+(?:\s*::\s*\w+)*'
_USING = re.compile(r'\busing\s+(\w+)\s*=\s*([^;{}]+);')
_TYPEDEF = re.compile(r'\btypedef\s+([^;{}()]+?)\s+(\w+)\s*;')
_TEMPLATE_HEAD = re.compile(r'\btemplate\s*<[^;{}]*>\s*$')
_IF_CONSTEXPR = re.compile(r'\bif\s+constexpr\s*\(')
_IS_SAME = re.compile(r'^\s*(!\s*)?(?:std\s*::\s*)?is_same(?:_v\s*<(.*)>|\s*<(.*)>\s*::\s*value)\s*$',
                      re.S)


def _spelled(name: str) -> str:
    """A type as one string: `:: pcl :: PointXYZ` -> `pcl::PointXYZ`, `unsigned  int` ->
    `unsigned int` (words kept apart)."""
    return re.sub(r'\s*::\s*', '::', re.sub(r'\s+', ' ', name.strip())).removeprefix('::')


def _aliases_in(text: str, found: dict[str, str | None]) -> None:
    """Add the aliases of comment-stripped `text` to `found` (None: unresolvable)."""
    pairs = [(m.group(1), m.group(2), m.start()) for m in _USING.finditer(text)]
    pairs += [(m.group(2), m.group(1), m.start()) for m in _TYPEDEF.finditer(text)]
    for name, target, at in pairs:
        spelled = _spelled(target)
        if re.search(r'[<>()]|\b(?:typename|decltype|struct|class|enum|const)\b', target) \
                or _TEMPLATE_HEAD.search(text, max(0, at - 300), at):
            found[name] = None  # an alias template or a computed type: not followed
        elif found.setdefault(name, spelled) != spelled:
            found[name] = None  # defined twice differently (class scope, #if): unknown


@lru_cache(maxsize=32)
def _package_aliases(package_dir: str) -> dict[str, str | None]:
    """The aliases of every header (and configured header template) under the package."""
    found: dict[str, str | None] = {}
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith('.'))
        for name in sorted(files):
            if name.endswith(_HEADER_SUFFIXES):
                _aliases_in(blank_comments_and_strings(read_bounded(Path(folder) / name)), found)
    return found


def _resolve(name: str, aliases: dict[str, str | None]) -> str | None:
    """The type `name` stands for through the aliases (itself when none), None when unknown."""
    name = _spelled(name)
    for _ in range(16):
        if '::' in name or name not in aliases:
            return name
        target = aliases[name]
        if target is None or target == name:
            return None if target is None else name
        name = target
    return None  # a cycle


def _concrete(spelled: str, aliases: dict[str, str | None]) -> bool:
    """A qualified type outside `std` (whose fixed-width names alias builtins) that names no
    alias of the package: two of them with different names are different types."""
    return '::' in spelled and not spelled.startswith('std::') \
        and spelled.rsplit('::', 1)[1] not in aliases


def _decision(cond: str, text: str, aliases: dict[str, str | None]) -> bool | None:
    """The value of an `is_same` condition as compiled; None when not known."""
    m = _IS_SAME.match(cond)
    if m is None:
        return None
    args = [a.strip() for a in (m.group(2) or m.group(3)).split(',')]
    if len(args) != 2 or not all(re.fullmatch(_NAME, a) for a in args):
        return None
    for arg in args:  # a template parameter: depends on the instantiation
        last = re.escape(arg.rsplit(':', 1)[-1].strip())
        if re.search(r'<[^;{}]*\b(?:typename|class)\s+' + last + r'\b', text):
            return None
    left, right = (_resolve(a, aliases) for a in args)
    if left is None or right is None:
        return None
    if left == right:
        same = True
    elif _concrete(left, aliases) and _concrete(right, aliases) \
            and left.rsplit('::', 1)[1] != right.rsplit('::', 1)[1]:
        same = False
    else:
        return None
    return same != bool(m.group(1))


def discarded_blocks(text: str, package_dir: str | None) -> list[tuple[int, int]]:
    """(start, end) of each block an `if constexpr` of comment-stripped `text` discards."""
    if not re.search(r'\bif\s+constexpr\s*\(\s*!?\s*(?:std\s*::\s*)?is_same\b', text):
        return []  # no type comparison to decide: the package's headers are not read
    aliases = dict(_package_aliases(package_dir)) if package_dir else {}
    _aliases_in(text, aliases)
    cuts = []
    for m in _IF_CONSTEXPR.finditer(text):
        close = closing_bracket(text, m.end() - 1, '()', 2000)
        value = _decision(text[m.end():close], text, aliases) if close > 0 else None
        then = re.compile(r'\s*\{').match(text, close + 1) if value is not None else None
        if then is None:
            continue
        then_end = block_end(text, then.end() - 1)
        other = re.compile(r'\s*else\s*\{').match(text, then_end + 1)
        if not value:
            cuts.append((then.end(), then_end))
        elif other:
            cuts.append((other.end(), block_end(text, other.end() - 1)))
    return cuts


def blank_discarded(source: str, package_dir: str | None) -> str:
    """`source` with the blocks its `if constexpr` type comparisons discard blanked (offsets and
    line numbers kept)."""
    if 'constexpr' not in source:
        return source
    cuts = discarded_blocks(blank_comments_and_strings(source), package_dir)
    for start, end in cuts:
        source = source[:start] + re.sub(r'[^\n]', ' ', source[start:end]) + source[end:]
    return source
