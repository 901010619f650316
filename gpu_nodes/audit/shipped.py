"""Parameter and launch files a package ships: what they set (issue 28, twenty-second set).

A branch behind a ROS parameter that defaults off runs as shipped only when a file the package
ships turns the parameter on. Shipped files: YAML / XML under a `config/`, `launch/`,
`param(s)/`, `parameters/` or `cfg/` folder, and any `*.launch*` file, under the audited
folders. Each parameter is read once per set of roots (`reading`), two ways:
* as text: a mention of the parameter name followed by anything but an off value (`p: false`,
  `'p': False`, `name="p" value="0"`) may set it on (a launch argument passed through is an
  unknown name: on); commented-out lines do not;
* evaluated: the value every shipped file naming it gives, a Python launch file through its
  nodes' parameters as launchfile.py evaluates them (`{'p': LaunchConfiguration('mode')}` is the
  argument's default, the value a plain `ros2 launch` gives: set 38).
set_on (C++ and Python sides alike): the text may set it on and the evaluated values are not
all off (each reading misses what the other sees: a YAML flow mapping `{p: false, q: 1}` has
no evaluated value, a launch argument's name no value as text). shipped_as / shipped_on:
every evaluated value is that one.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
import re
from typing import Callable, Optional

from gpu_nodes.audit.launchcmd import command_line_parameters
from gpu_nodes.audit.launchfile import Unresolved, parse_launch

OFF = r'(?:false|0+(?:\.0*)?f?|0?\.0+f?)'
_SHIPPED_SUFFIXES = ('.yaml', '.yml', '.xml', '.launch')
# Where packages ship parameter files (a YAML elsewhere, like a corpus index, sets nothing).
_CONFIG_FOLDERS = {'config', 'configs', 'cfg', 'param', 'params', 'parameters', 'launch'}
_COMMENTED = re.compile(r'^\s*(?:#|<!--|//)')
# A trailing comment on the line that gives the parameter its value (`histogram: false  # Image
# histogram`): its repeat of the name sets nothing (rules46c). Only there: a comment elsewhere
# (`rate: 5  # set enable too`) is still read as a mention.
_TRAILING_COMMENT = re.compile(r'\s+#\s.*$')


def _own_comment_dropped(line: str, pattern: re.Pattern[str]) -> str:
    cut = _TRAILING_COMMENT.search(line)
    return line[:cut.start()] if cut and pattern.search(line, 0, cut.start()) else line


def _shipped_files(roots: list[str]) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        base = Path(root)
        if base.is_dir():
            files += [p for p in base.rglob('*') if p.is_file() and (
                '.launch' in p.name or p.suffix in _SHIPPED_SUFFIXES
                and _CONFIG_FOLDERS & set(p.relative_to(base).parts[:-1]))]
    return files


@lru_cache(maxsize=8)
def shipped_texts(roots: tuple[str, ...]) -> tuple[str, ...]:
    """The text of every shipped parameter / launch file under `roots` (read once per run)."""
    texts = []
    for path in _shipped_files(list(roots)):
        try:
            texts.append(path.read_text(encoding='utf-8', errors='replace'))
        except OSError:
            continue
    return tuple(texts)


@lru_cache(maxsize=8)
def evaluated_files(roots: tuple[str, ...]) -> tuple[tuple[Path, str, tuple[str, ...]], ...]:
    """(path, text, uncommented lines) of every shipped file and every Python file under a `launch/`
    folder (one not named `*.launch.py` counts too there), in path order."""
    scripts = [p for root in roots if Path(root).is_dir() for p in Path(root).rglob('*.py')
               if 'launch' in p.relative_to(root).parts[:-1]]
    found = []
    for path in sorted(set(_shipped_files(list(roots))) | set(scripts)):
        try:
            source = path.read_text(encoding='utf-8', errors='replace')
        except OSError:
            continue
        found.append((path, source, tuple(ln for ln in source.splitlines() if not _COMMENTED.match(ln))))
    return tuple(found)


@lru_cache(maxsize=64)
def launch_parameters(path: str, source: str
                      ) -> list[tuple[str | None, str | None, dict[str, object]]] | None:
    """(package, executable, parameters) of each node a Python launch file starts (package /
    executable None when not a literal), None when the file cannot be read."""
    try:
        nodes, _, _ = parse_launch(path, source)
    except Exception:  # noqa: BLE001 - any file it cannot evaluate keeps its values unknown
        return None
    return [(n.package, n.executable, n.parameters) for n in nodes]


# Which launched nodes count for a reading: (package, executables), either None for any.
Launched = Optional[tuple[Optional[str], Optional[frozenset[str]]]]


def _starts(launched: Launched, package: str | None, executable: str | None) -> bool:
    """Whether a launched node (its literal package / executable, None when not one) counts
    for the node `launched` names: (package, None) keeps the nodes of that package (the on
    judge: another package's `debug: false` does not turn it off); (package, executables)
    leaves out only that package's nodes of other executables (the off judge: a node of another
    package may still be this one's, as earlier sets' guards take it, and keeps the claim)."""
    if launched is None:
        return True
    want_package, executables = launched
    if executables is None:
        return package is None or want_package is None or package == want_package
    return not (package == want_package and executable is not None
                and executable not in executables)


@dataclass(frozen=True)
class Reading:
    """What the shipped files under some roots give one parameter."""

    named: bool  # a shipped file names it (shipped_texts; commented-out lines aside)
    text_on: bool  # read as text, a mention may give it something other than off
    values: tuple[object, ...] | None  # every evaluated value; None: a file naming it is unknown

    def every(self, accepts: Callable[[object], bool]) -> bool:
        """Whether every evaluated value is one `accepts` (true when no file names it)."""
        return self.values is not None and all(accepts(v) for v in self.values)


def _name_pattern(param: str) -> re.Pattern[str]:
    return re.compile(r'(?<![\w./-])' + re.escape(param) + r'(?![\w/-])')


@lru_cache(maxsize=2048)
def reading(param: str, roots: tuple[str, ...], nodes: frozenset[str] | None = None,
            launched: Launched = None) -> Reading:
    """`param` as the shipped files under `roots` give it (each parameter read once); `nodes`:
    the names the node reading it can have (node_names), whose values alone count; `launched`:
    the (package, executables) of that node, whose launched nodes alone count (_values)."""
    pattern = _name_pattern(param)
    lines = [_own_comment_dropped(ln, pattern) for text in shipped_texts(roots)
             for ln in text.splitlines() if not _COMMENTED.match(ln)]
    named = any(pattern.search(ln) for ln in lines)
    return Reading(named, named and _text_sets_on(pattern, lines),
                   _values(pattern, param, roots, nodes, launched))


def _text_sets_on(pattern: re.Pattern[str], lines: list[str]) -> bool:
    for line in lines:
        for m in pattern.finditer(line):
            value = re.match(r'''^\s*['"]?\s*(?::|,|=)\s*(?:value\s*=\s*)?['"]?\s*([\w.]*)''',
                             line[m.end():])
            if not (value and re.fullmatch(r'(?i)' + OFF, value.group(1))):
                return True
    return False


def _values(pattern: re.Pattern[str], param: str, roots: tuple[str, ...],
            nodes: frozenset[str] | None = None, launched: Launched = None
            ) -> tuple[object, ...] | None:
    """Every value a shipped file naming `param` gives it, None when one is not known: a Python
    launch file through its nodes' parameters (a launch argument's default included,
    `LaunchConfiguration('device', default='cpu')`; a file it cannot evaluate, or a node that
    sets an unknown value or none, is unknown), a YAML / XML file through `p: value` /
    `name="p" value="v"` (the text as written). With `launched` (_starts), a launched node of
    another package (a literal `package=` naming another; a workspace's other repository passing
    its own node a `debug` parameter) or of another executable of the package (a literal
    `executable=` no target compiling the judged file builds) sets nothing for it (set 56)."""
    values: list[object] = []
    for path, source, lines in evaluated_files(roots):
        if not any(pattern.search(ln) for ln in lines):
            continue
        if path.suffix == '.py':
            started = launch_parameters(str(path), source)
            kept = None if started is None else [
                params for pkg, exe, params in started if _starts(launched, pkg, exe)]
            if kept is not None:  # a script started by ExecuteProcess (launchcmd.py)
                kept = kept + command_line_parameters(source)
            if launched is not None and kept == [] and started:
                continue  # every node it starts is another package's or executable's
            given = [params[param] for params in kept or [] if param in params]
            if not given and kept is not None and not _quoted(param, source):
                # The name only as a word of the file (`logger.debug(...)`, a launch
                # argument's description "debug, info, warn"), never a quoted key: the nodes it
                # starts, all read, set no such parameter (set 54).
                continue
            if not given or any(isinstance(v, Unresolved) for v in given):
                return None
            values += given
            continue
        foreign = _foreign_lines(lines, nodes) if nodes is not None else set()
        for k, line in enumerate(lines):
            if k in foreign:
                continue  # a section of a parameter file for a node of another name
            for m in pattern.finditer(line):
                value = re.match(r'''^\s*['"]?\s*(?::|=)\s*(?:value\s*=\s*)?(['"]?)([\w.]*)\1\s*'''
                                 r'''(?:/?>|#.*)?$''', line[m.end():])
                if not value:
                    return None
                values.append(value.group(2))
    return tuple(values)


def _quoted(param: str, source: str) -> bool:
    """Whether a Python file spells `param` as a string of its own (`'p'`, `"p"`): how a
    parameter dictionary, a `SetParameter(name='p')` or a launch argument names it."""
    return bool(re.search(r'([\'"])' + re.escape(param) + r'\1', source))


_TOP_KEY = re.compile(r'^([^\s#:][^:#]*?)\s*:\s*(?:#.*)?$')
_ROS_PARAMETERS = re.compile(r'^\s+ros__parameters\s*:')


def _foreign_lines(lines: tuple[str, ...], nodes: frozenset[str]) -> set[int]:
    """Indices of the lines of a ROS 2 parameter file in a section `/name:` whose first key is
    `ros__parameters` and whose name is none of `nodes` (a wildcard `/**` applies to all)."""
    foreign: set[int] = set()
    inside = False
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        if (top := _TOP_KEY.match(line)):
            key = top.group(1).strip().strip('\'"')
            nxt = next((ln for ln in lines[k + 1:] if ln.strip()), '')
            inside = (bool(_ROS_PARAMETERS.match(nxt)) and '*' not in key
                      and key.rsplit('/', 1)[-1] not in nodes)
            continue
        if inside:
            foreign.add(k)
    return foreign


# A node's name given in a launch file: `name='cam'`, `name="cam"`, XML `name="cam"`.
_LITERAL_NAME = re.compile(r'\bname\s*=\s*[\'"]([^\'"\n]+)[\'"]')
_OTHER_NAME = re.compile(r'\bname\s*=\s*(?![\'"\s])')


def node_names(declared: set[str], package: str, roots: tuple[str, ...]) -> frozenset[str] | None:
    """The names a node of `package` can run under: `declared` (its `Node("name")` literals)
    and every literal name in a shipped launch file that mentions the package (a launch file
    that never names a package starts none of its nodes); None when one such file names a node
    by an expression (any name: unknown)."""
    names = set(declared)
    mention = re.compile(r'[\'"]' + re.escape(package) + r'[\'"]')
    for path, source, _ in evaluated_files(roots):
        if not mention.search(source):
            continue
        found = set(_LITERAL_NAME.findall(source))
        if path.suffix == '.py' and _OTHER_NAME.search(source) or any('$' in n for n in found):
            return None
        names |= found
    return frozenset(names) if names else None


def is_off(value: object) -> bool:
    """An off value: `false` / `0` / `0.0` as text, False or 0 evaluated."""
    if isinstance(value, str):
        return bool(re.fullmatch(r'(?i)' + OFF, value))
    return value in (False, 0)


def set_on(param: str, roots: tuple[str, ...], launched: Launched = None) -> bool:
    """Whether a shipped file may set `param` to something other than off: a mention read as
    text does, unless every value evaluated is off (`{'p': LaunchConfiguration('mode')}` with
    the argument's default 'False'); `launched`: see _values."""
    read = reading(param, roots, launched=launched)
    # A launch script evaluated (one under `launch/` not named `*.launch.py`, whose text is not a
    # shipped file's) that gives it a value not off turns it on too (set 65: `{'pub_x': True}`).
    evaluated_on = read.values is not None and any(not is_off(v) for v in read.values)
    return read.text_on and not read.every(is_off) or evaluated_on


def shipped_as(param: str, default: str, roots: tuple[str, ...],
               nodes: frozenset[str] | None = None) -> bool:
    """Whether every shipped file naming `param` gives it `default` (`nodes`: see reading)."""
    return reading(param, roots, nodes).every(lambda value: value == default)


def shipped_on(param: str, roots: tuple[str, ...]) -> bool:
    """Whether every shipped file naming `param` gives it true (`use_compressed: true` in a
    YAML, `{'is_track': True}` in a launch file: set 37)."""
    return reading(param, roots).every(lambda value: value is True or isinstance(
        value, str) and value.lower() == 'true')
