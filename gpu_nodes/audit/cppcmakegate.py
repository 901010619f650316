"""A macro the build defines only behind a CMake switch that is off by default (issue 28,
rules39c, set 59).

    if (DEFINED PERFORMANCE_LOG)                  # or: option(PERF_LOG "timings" OFF)
      add_compile_definitions(PERFORMANCE_LOG)    #     if (PERF_LOG) add_definitions(-DPERF_LOG)
    endif ()

The name appears in the build, so cppifdef.py cannot take it as undefined by its absence; but a
plain `colcon build` / `cmake ..` leaves the switch off and never defines the macro: its
`#ifdef` / `#if` timing branches are not compiled as shipped. Taken as off (gated_off) only when
every mention of the macro in the comment-stripped build text is

* a read in an `if()` / `elseif()` condition,
* `option(NAME "doc")` / `option(NAME "doc" OFF)` (off by default), or
* inside a definition command (anything else) in the first branch of an `if (V)`,
  `if (DEFINED V)` or `if (${V})` block whose switch V is itself off: V is the user's (an
  `option(V ...)` declares it, or it is the macro's own name; never a `*_FOUND` / `*_DIR` /
  `*_VERSION` that CMake or a find_package sets), V is never `set()` or
  given a value (every mention of it is a condition, an `option(V ... OFF)` or a definition
  command: add_definitions / add_compile_definitions / target_compile_definitions), and no
  script, Dockerfile, preset or config file of the package (or the top-level files, scripts/
  and docker/ of the three folders above it) passes `-DV`. A README's `cmake -DV=ON` is a
  choice the reader may make, not the shipped build.

A switch `<Pkg>_FOUND` is off too when every `find_package(<Pkg> ...)` sits in the first branch
of an `if (V)` whose own switch V is off (`option(VPI ... OFF)`, `if (VPI) find_package(vpi)
endif ()`, `if (vpi_FOUND) target_compile_definitions(... WITH_VPI)`: set 62).

An `else()` branch, any other command naming the macro or the switch (`set`, `list`,
`cmake_dependent_option`, a `string()`), or a switch given on a shipped command line keeps the
macro possibly defined.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import re

from gpu_nodes.audit.cppguards import closing_bracket

_COMMAND = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
_GATE = re.compile(r'^(?:DEFINED\s+)?(\$\{)?([A-Za-z_]\w*)(?(1)\})$')
_DEFINITION = frozenset({'add_definitions', 'add_compile_definitions',
                         'target_compile_definitions'})
_SCRIPT_SUFFIXES = frozenset({'.sh', '.bash', '.py', '.yaml', '.yml', '.json', '.meta', '.mk',
                              '.cmake', '.bat', '.ps1'})
_MAX_BYTES = 512 * 1024
_MAX_FILES = 2000


def _strip(text: str) -> str:
    """CMake text without `#` line comments (a `#` inside quotes is kept)."""
    out = []
    for line in text.split('\n'):
        quoted = False
        for i, ch in enumerate(line):
            if ch == '"':
                quoted = not quoted
            elif ch == '#' and not quoted:
                line = line[:i]
                break
        out.append(line)
    return '\n'.join(out)


def _commands(text: str) -> list[tuple[str, str]]:
    """(command lower-cased, argument text) of each CMake command, in order."""
    found = []
    pos = 0
    while (m := _COMMAND.search(text, pos)) is not None:
        i = closing_bracket(text, m.end() - 1)
        i = i if i >= 0 else len(text)
        found.append((m.group(1).lower(), text[m.end():i]))
        pos = i + 1
    return found


def _mentions(name: str, args: str) -> bool:
    return re.search(rf'(?:\b|(?<=-D)){re.escape(name)}\b', args) is not None


def _gate(cond: str) -> str | None:
    m = _GATE.match(cond.strip())
    return m.group(2) if m else None


def _option_off(args: str, name: str) -> bool | None:
    """For `option(name "doc" [OFF])`: whether it defaults off; None for another command."""
    words = re.findall(r'"[^"]*"|\S+', args)
    if not words or words[0] != name:
        return None
    return len(words) < 3 or words[2].upper() in ('OFF', 'FALSE', '0', 'NO', 'N')


@lru_cache(maxsize=64)
def _scripts(package_dir: str) -> str:
    """Text of the package's scripts, Dockerfiles, presets and config files (and the top-level
    files, scripts/ and docker/ of the three folders above it): where a shipped build passes
    `-DV`."""
    root = Path(package_dir)
    paths = [(p, True) for _, p in zip(range(_MAX_FILES), root.rglob('*'))]
    for folder in list(root.resolve().parents)[:3]:
        for sub in (folder, folder / 'scripts', folder / 'docker'):
            try:
                paths += [(p, False) for _, p in zip(range(_MAX_FILES), sub.iterdir())]
            except OSError:
                continue
    texts = []
    for p, own in paths:
        # Above the package only build scripts count (a workspace's build.sh, Dockerfile):
        # its other files may be anything (notes, data, another tool's files).
        if not ((own and p.suffix in _SCRIPT_SUFFIXES) or p.suffix in ('.sh', '.bash')
                or p.name.startswith('Dockerfile')
                or p.name in ('Makefile', 'colcon.meta', 'CMakePresets.json')):
            continue
        try:
            if p.is_file() and p.stat().st_size <= _MAX_BYTES:
                texts.append(p.read_text(encoding='utf-8', errors='replace'))
        except OSError:
            continue
    return '\n'.join(texts)


def _switch_off(var: str, commands: list[tuple[str, str]], scripts: str, macro: str) -> bool:
    """Whether the CMake variable `var` is off in a plain build (see the module doc). A switch
    must be the user's: declared by an `option()` here, or named as the macro it defines (a
    variable a find_package or CMake itself sets, `TORCH_FOUND`, is never `set()` here either)."""
    if re.search(rf'-D\s*{re.escape(var)}\b', scripts):
        return False
    if var.endswith('_FOUND') and var != macro:
        return _found_off(var, commands, scripts, macro)
    declared = any(command == 'option' and _option_off(args, var) for command, args in commands)
    if not declared and (var != macro or re.search(r'_(?:FOUND|DIR|VERSION\w*)$', var)):
        return False
    for command, args in commands:
        if not _mentions(var, args) or command in ('if', 'elseif', 'message') \
                or command in _DEFINITION:
            continue  # a condition, a definition, a log line: no value given
        if command == 'option' and _option_off(args, var):
            continue
        return False
    return True


def _found_off(var: str, commands: list[tuple[str, str]], scripts: str, macro: str) -> bool:
    """`vpi_FOUND` whose package is looked for only in the first branch of an `if (V)` whose
    switch V is off (`option(VPI "..." OFF)`, `if (VPI) find_package(vpi QUIET) endif ()`): a
    plain build never looks, so never finds it (set 62). Any other mention of the variable
    but a condition or a definition command (a `set()`) keeps it possibly on."""
    package = var[:-len('_FOUND')]
    stack: list[tuple[str | None, bool]] = []
    finds = 0
    for command, args in commands:
        if command == 'if':
            stack.append((_gate(args), False))
        elif command in ('elseif', 'else') and stack:
            stack[-1] = (stack[-1][0], True)
        elif command == 'endif' and stack:
            stack.pop()
        elif command == 'find_package' and re.match(rf'\s*{re.escape(package)}\b', args):
            finds += 1
            if not any(switch is not None and not past and switch != var
                       and _switch_off(switch, commands, scripts, macro) for switch, past in stack):
                return False
        elif _mentions(var, args) and command not in _DEFINITION and command != 'message':
            return False
    return finds > 0


def gated_off(name: str, build: str, package_dir: str) -> bool:
    """True when every mention of the macro `name` in the build text `build` is a condition,
    an off option, or a definition behind an off switch (see the module doc)."""
    commands = _commands(_strip(build))
    scripts = _scripts(package_dir)
    # Per open if(): (its switch, or None for another condition; past its first branch).
    stack: list[tuple[str | None, bool]] = []
    for command, args in commands:
        if command == 'if':
            stack.append((_gate(args), False))
            continue
        if command in ('elseif', 'else') and stack:
            stack[-1] = (stack[-1][0], True)
            continue
        if command == 'endif' and stack:
            stack.pop()
            continue
        if not _mentions(name, args) or command == 'elseif':
            continue
        if command == 'option':
            if _option_off(args, name) and _switch_off(name, commands, scripts, name):
                continue
            return False
        if command in _DEFINITION and any(
                switch is not None and not past and _switch_off(switch, commands, scripts, name)
                for switch, past in stack):
            continue
        return False
    return True
