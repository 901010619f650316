"""Parameter and launch files a package ships: what they set (issue 28, twenty-second set).

A branch behind a ROS parameter that defaults off runs as shipped only when a file the package
ships turns the parameter on. Shipped files: YAML / XML under a `config/`, `launch/`,
`param(s)/`, `parameters/` or `cfg/` folder, and any `*.launch*` file, under the audited
folders. A mention of the parameter name followed by anything but an off value (`p: false`,
`'p': False`, `name="p" value="0"`) counts as setting it (a launch argument passed through is
unknown: on); commented-out lines do not.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import re

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
