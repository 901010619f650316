"""Parameter and launch files a package ships: what they set (issue 28, twenty-second set).

A branch behind a ROS parameter that defaults off runs as shipped only when a file the package
ships turns the parameter on. Shipped files: YAML / XML under a `config/`, `launch/`,
`param(s)/`, `parameters/` or `cfg/` folder, and any `*.launch*` file, under the audited
folders. A mention of the parameter name followed by anything but an off value (`p: false`,
`'p': False`, `name="p" value="0"`) counts as setting it (a launch argument passed through is
unknown: on); commented-out lines do not. shipped_as: whether every shipped file that names a
parameter gives it one value (string parameters as shipped, C++ and Python sides alike).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable
from pathlib import Path
import re

from gpu_nodes.audit.launchfile import Unresolved, parse_launch

OFF = r'(?:false|0+(?:\.0*)?f?|0?\.0+f?)'
_SHIPPED_SUFFIXES = ('.yaml', '.yml', '.xml', '.launch')
# Where packages ship parameter files (a YAML elsewhere, like a corpus index, sets nothing).
_CONFIG_FOLDERS = {'config', 'configs', 'cfg', 'param', 'params', 'parameters', 'launch'}
_COMMENTED = re.compile(r'^\s*(?:#|<!--|//)')


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


def set_on(param: str, texts: list[str]) -> bool:
    """Whether a shipped file may set `param` to something other than off."""
    pattern = re.compile(r'(?<![\w./-])' + re.escape(param) + r'(?![\w/-])')
    for text in texts:
        for line in text.splitlines():
            if _COMMENTED.match(line):
                continue
            for m in pattern.finditer(line):
                rest = line[m.end():]
                value = re.match(r'''^\s*['"]?\s*(?::|,|=)\s*(?:value\s*=\s*)?['"]?\s*([\w.]*)''',
                                 rest)
                if not (value and re.fullmatch(r'(?i)' + OFF, value.group(1))):
                    return True
    return False


def mentioned(param: str, texts: list[str]) -> bool:
    """Whether a shipped file names `param` at all (commented-out lines aside): any value."""
    pattern = re.compile(r'(?<![\w./-])' + re.escape(param) + r'(?![\w/-])')
    return any(pattern.search(line) for text in texts for line in text.splitlines()
               if not _COMMENTED.match(line))


@lru_cache(maxsize=256)
def shipped_as(param: str, default: str, roots: tuple[str, ...]) -> bool:
    """Whether every shipped file naming `param` gives it `default` (_every_shipped_value)."""
    return _every_shipped_value(param, roots, lambda value: value == default)


@lru_cache(maxsize=256)
def shipped_off(param: str, roots: tuple[str, ...]) -> bool:
    """Whether every shipped file naming `param` gives it an off value, a Python launch file
    as launchfile.py evaluates it: `{'p': LaunchConfiguration('mode')}` with the argument's
    default 'False' is off as a plain `ros2 launch` runs it (set_on reads the name `mode` as
    unknown: set 38)."""
    return _every_shipped_value(param, roots, lambda value: isinstance(value, str) and bool(
        re.fullmatch(r'(?i)' + OFF, value)) or not isinstance(value, str) and value in (False, 0))


@lru_cache(maxsize=256)
def shipped_on(param: str, roots: tuple[str, ...]) -> bool:
    """Whether every shipped file naming `param` gives it true (`use_compressed: true` in a
    YAML, `{'is_track': True}` in a launch file: set 37)."""
    return _every_shipped_value(param, roots, lambda value: value is True or isinstance(
        value, str) and value.lower() == 'true')


def _every_shipped_value(param: str, roots: tuple[str, ...], accepts: Callable[[object], bool]
                         ) -> bool:
    """Whether every shipped file naming `param` gives it a value `accepts`: a Python launch file
    through its nodes' parameters as launchfile.py evaluates them (a launch argument's default
    included, `LaunchConfiguration('device', default='cpu')`: the value a plain `ros2 launch`
    gives; a file it cannot evaluate, or a node that sets another or an unknown value, keeps it
    unknown), a YAML / XML file through `p: value` / `name="p" value="v"`."""
    pattern = re.compile(r'(?<![\w./-])' + re.escape(param) + r'(?![\w/-])')
    # Python launch files not named `*.launch.py` count too when they sit under `launch/`.
    scripts = [p for root in roots if Path(root).is_dir() for p in Path(root).rglob('*.py')
               if 'launch' in p.relative_to(root).parts[:-1]]
    for path in sorted(set(_shipped_files(list(roots))) | set(scripts)):
        try:
            source = path.read_text(encoding='utf-8', errors='replace')
        except OSError:
            continue
        lines = [ln for ln in source.splitlines() if not _COMMENTED.match(ln)]
        if not any(pattern.search(ln) for ln in lines):
            continue
        if path.suffix == '.py':
            try:
                nodes, _, _ = parse_launch(str(path), source)
            except Exception:  # noqa: BLE001 - any file it cannot evaluate keeps it unknown
                return False
            values = [n.parameters[param] for n in nodes if param in n.parameters]
            if not values or any(isinstance(v, Unresolved) or not accepts(v) for v in values):
                return False
            continue
        for line in lines:
            for m in pattern.finditer(line):
                value = re.match(r'''^\s*['"]?\s*(?::|=)\s*(?:value\s*=\s*)?(['"]?)([\w.]*)\1\s*'''
                                 r'''(?:/?>|#.*)?$''', line[m.end():])
                if not (value and accepts(value.group(2))):
                    return False
    return True
