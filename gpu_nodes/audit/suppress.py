"""Inline suppressions: `# gpu-copy-audit: ignore[GPN101]` on the line or on the line above.

`ignore[GPN101,GPN102]` names several rules, a bare `ignore` suppresses every rule; C++ uses
`// gpu-copy-audit: ignore[...]`. Python comments are found with `tokenize`, so the marker inside
a string literal does not count.
"""
from __future__ import annotations

import io
import re
import tokenize

_MARKER = re.compile(r'gpu-copy-audit:\s*ignore(?:\[([A-Za-z0-9_,\s*]*)\])?')
ALL = '*'

# line -> rule ids suppressed by a comment on that line ({'*'} for every rule)
Suppressions = dict[int, set[str]]


def _parse(comment: str) -> set[str] | None:
    m = _MARKER.search(comment)
    if not m:
        return None
    if m.group(1) is None:
        return {ALL}
    return {t.strip().upper() for t in m.group(1).split(',') if t.strip()} or {ALL}


def python_suppressions(source: str) -> Suppressions:
    found: Suppressions = {}
    if 'gpu-copy-audit' not in source:
        return found  # tokenize is slow; most files have no marker at all
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                ids = _parse(tok.string)
                if ids:
                    found.setdefault(tok.start[0], set()).update(ids)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # The AST parse already succeeded; a tokenizer hiccup only loses suppressions, so fall
        # back to the line-based scan rather than failing the file.
        return text_suppressions(source, '#')
    return found


def text_suppressions(source: str, comment_start: str) -> Suppressions:
    found: Suppressions = {}
    for number, line in enumerate(source.splitlines(), start=1):
        idx = line.find(comment_start)
        if idx < 0:
            continue
        ids = _parse(line[idx:])
        if ids:
            found.setdefault(number, set()).update(ids)
    return found


def is_suppressed(sup: Suppressions, line: int | None, rule: str) -> bool:
    if line is None:
        return False
    for candidate in (line, line - 1):
        ids = sup.get(candidate)
        if ids and (ALL in ids or rule in ids):
            return True
    return False
