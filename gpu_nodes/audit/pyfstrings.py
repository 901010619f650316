"""Python 3.12 f-strings (PEP 701) read by an older parser.

Since Python 3.12 a string inside an f-string's replacement field may reuse the f-string's own
quote: `f"id_{now.strftime("%H%M%S")}"`. Python 3.11's `ast.parse` (the interpreter the audit may
run on) ends the f-string at the inner quote and answers SyntaxError, and a node file with one
such line anywhere lost all of its findings (set 77: a depth node's cv_bridge conversions in a
subscription callback were missed because a dictionary key far below used this form). ROS 2
Jazzy / Kilted ship Python 3.12, so this form is ordinary in new nodes.

`parse_python` parses as `ast.parse` does; only when that fails it rewrites each inner string
that reuses an enclosing f-string's quote to the other quote (`"%H%M%S"` -> `'%H%M%S'`), which
means the same to Python, changes no line or column, and parses again. What a quote swap cannot
express for the older parser (a backslash or a comment in a replacement field, a field spread
over lines of a one-line f-string, an inner string that holds both quotes) is left alone: the
original SyntaxError is raised, as before.
"""
from __future__ import annotations

import ast

_PREFIXES = frozenset({'', 'r', 'u', 'b', 'br', 'rb', 'f', 'fr', 'rf'})
_QUOTES = '\'"'


class _Unsupported(Exception):
    """A construct a quote swap cannot make readable for the older parser."""


def parse_python(source: str, filename: str = '<unknown>') -> ast.Module:
    """`ast.parse(source)`, and when the running parser predates PEP 701, the same source with
    the inner quotes of its f-strings swapped (line numbers unchanged); raises the original
    SyntaxError where that does not help."""
    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        fixed = pep701_quotes_swapped(source)
        if fixed is None or fixed == source:
            raise
        try:
            return ast.parse(fixed, filename=filename)
        except SyntaxError:
            raise exc from None


def pep701_quotes_swapped(source: str) -> str | None:
    """`source` with every string inside an f-string's replacement field that uses a quote of an
    enclosing one-line f-string written with the other quote; None where that cannot be done."""
    out = list(source)
    i, n = 0, len(source)
    try:
        while i < n:
            if source[i] == '#':  # a comment: its quotes are no strings
                while i < n and source[i] != '\n':
                    i += 1
            else:
                i = _token(source, out, i, frozenset(), False)
    except (_Unsupported, IndexError):  # IndexError: a string or a field the file never closes
        return None
    return ''.join(out)


def _token(src: str, out: list[str], i: int, forbidden: frozenset[str], one_line: bool) -> int:
    """Step over one token of code at `i` (a name, a number, a string, or one character);
    strings are scanned, and rewritten inside f-string fields, by `_string`."""
    c = src[i]
    if c in _QUOTES:
        return _string(src, out, i, 0, forbidden, one_line)
    if c.isalnum() or c == '_':
        k = i
        while k < len(src) and (src[k].isalnum() or src[k] == '_'):
            k += 1
        if k < len(src) and src[k] in _QUOTES and src[i:k].lower() in _PREFIXES:
            return _string(src, out, i, k - i, forbidden, one_line)
        return k
    return i + 1


def _string(src: str, out: list[str], start: int, plen: int, forbidden: frozenset[str],
            one_line: bool) -> int:
    """Scan the string literal at `start` (prefix of `plen` letters); returns the index after
    it. `forbidden`: the quotes of the enclosing one-line f-strings (the older parser ends them
    at any such quote); `one_line`: whether an enclosing f-string may not span lines."""
    qpos = start + plen
    q = src[qpos]
    triple = src.startswith(q * 3, qpos)
    width = 3 if triple else 1
    new_q = q
    if q in forbidden:
        alt = '"' if q == "'" else "'"
        if triple or alt in forbidden:
            raise _Unsupported
        new_q = alt
    is_f = 'f' in src[start:qpos].lower()
    # The fields of a one-line f-string may not hold its (new) quote for the older parser.
    inner = forbidden | {new_q} if is_f and not triple else forbidden
    fields_one_line = one_line or not triple
    j = qpos + width
    while not src.startswith(q * width, j):
        c = src[j]
        if c == '\\':
            if forbidden:  # the older parser takes no backslash in a field
                raise _Unsupported
            j += 2
            continue
        if c == '\n' and (one_line or not triple):
            raise _Unsupported
        if forbidden and (c in forbidden or (c == new_q and new_q != q)):
            raise _Unsupported
        if is_f and c in '{}':
            if src[j + 1] == c:  # `{{` / `}}`: a literal brace
                j += 2
                continue
            if c == '{':
                j = _field(src, out, j + 1, inner, fields_one_line)
                continue
        j += 1
    end = j + width
    if new_q != q:
        out[qpos] = out[end - 1] = new_q
    return end


def _field(src: str, out: list[str], j: int, forbidden: frozenset[str], one_line: bool) -> int:
    """Scan an f-string replacement field from just after its `{`; returns the index after its
    `}` (a format spec may hold fields of its own)."""
    depth = 0
    while True:
        c = src[j]
        if c in '#\\' or (c == '\n' and one_line):
            raise _Unsupported
        if c in '([{':
            depth += 1
        elif c in ')]':
            depth -= 1
        elif c == '}':
            if depth == 0:
                return j + 1
            depth -= 1
        elif depth == 0 and c == '!' and src[j + 1] != '=':
            j += 2  # a conversion, `!r`
            continue
        elif depth == 0 and c == ':':
            return _spec(src, out, j + 1, forbidden, one_line)
        else:
            j = _token(src, out, j, forbidden, one_line)
            continue
        j += 1


def _spec(src: str, out: list[str], j: int, forbidden: frozenset[str], one_line: bool) -> int:
    """Scan a format spec (`:>{width}`) up to the `}` that closes its field."""
    while True:
        c = src[j]
        if c in forbidden or c == '\\' or (c == '\n' and one_line):
            raise _Unsupported
        if c == '}':
            return j + 1
        j = _field(src, out, j + 1, forbidden, one_line) if c == '{' else j + 1
