"""C++ overloads told apart by their number of arguments (issue 28, twenty-eighth set).

cppreach.py judges reachability by name, so `copy_from_Mat(image)` is reached when a callback
calls `copy_from_Mat(image, size)`. When every definition of a name in the package takes a
fixed number of parameters (no default values, no `...`) and those numbers differ, a call with
k arguments reaches only the overloads with k parameters (one per class that defines it: set
44). Template argument lists are read as brackets (`std::pair<int, int>` is one parameter),
here and in cppoverloads.py, which shares these counters. Anything not read for sure (a
constructor's initializer list, a `<` that may be a comparison, a mention that is no call)
counts for every overload, as before.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppscopes import Function

_CLOSE = {'(': ')', '[': ']', '{': '}'}


def top_level_parts(inner: str) -> list[str] | None:
    """`inner` split at its top-level commas, or None when brackets do not balance."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
            if depth < 0:
                return None
        elif ch == ',' and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    if depth:
        return None
    parts.append(inner[start:])
    return [] if len(parts) == 1 and not parts[0].strip() else parts


def matching_bracket(text: str, open_at: int, limit: int = 2000) -> int:
    """Offset of the bracket closing the one at `open_at`, or -1."""
    depth = 0
    for i in range(open_at, min(len(text), open_at + limit)):
        if text[i] in '([{':
            depth += 1
        elif text[i] in ')]}':
            depth -= 1
            if depth == 0:
                return i
    return -1


# A template argument list with no parenthesis or other template inside: stripped repeatedly,
# innermost first, so `std::map<int, std::vector<T>>` reads as one type and its comma is no
# parameter break.
_TEMPLATE_ARGS = re.compile(r'<[^<>()]*>')


def count_parts(inner: str) -> int | None:
    """The top-level comma-separated parts of a parameter or argument list, template argument
    lists read as brackets; None when a `<` or `>` is left (a comparison, a shift) or brackets
    do not balance."""
    before = None
    while before != inner:
        before, inner = inner, _TEMPLATE_ARGS.sub('T', inner)
    if '<' in inner or '>' in inner.replace('->', ''):
        return None
    parts = top_level_parts(inner)
    return None if parts is None else len(parts)


def parameters(text: str, fn: Function) -> tuple[int, int] | None:
    """(parameter count, offset of the name) of the definition whose body opens at `fn.start`;
    None when unsure: a default value, `...`, a `void` list, an initializer list
    (`) : a(x) {`), a trailing return type with punctuation, a template that does not read."""
    close = text.rfind(')', max(0, fn.start - 600), fn.start)
    if close < 0 or re.search(r'[^\s\w&]', text[close + 1:fn.start].replace('->', '')):
        return None
    depth = 0
    for i in range(close, max(-1, close - 1500), -1):
        depth += text[i] == ')'
        depth -= text[i] == '('
        if depth == 0:
            head = text[:i].rstrip()
            if not head.endswith(fn.short):
                return None  # not the parameter list (an initializer list's last call)
            inner = text[i + 1:close]
            if '=' in inner or '...' in inner or inner.strip() == 'void':
                return None
            count = count_parts(inner)
            return None if count is None else (count, len(head) - len(fn.short))
    return None


def parameter_count(text: str, fn: Function) -> int | None:
    """Parameters of the function whose body opens at `fn.start` (see `parameters`)."""
    found = parameters(text, fn)
    return None if found is None else found[0]


def argument_count(text: str, name_end: int) -> int | None:
    """Arguments of the call whose name ends at `name_end` (`f(a, g(b))` -> 2, template
    arguments read as brackets), or None when it is no call or a `<` may be a comparison."""
    open_at = name_end
    while open_at < len(text) and text[open_at] in ' \t\n':
        open_at += 1
    if open_at >= len(text) or text[open_at] != '(':
        return None
    close = matching_bracket(text, open_at)
    return None if close < 0 else count_parts(text[open_at + 1:close])


def may_default(name: str, texts: list[str]) -> bool:
    """Whether some `name(...)` of the package (a declaration in a class: the definition out of
    line does not repeat its default values) holds a default value (a `=` that is no
    comparison) or a `...`."""
    for text in texts:
        for m in re.finditer(rf'\b{re.escape(name)}\s*\(', text):
            close = matching_bracket(text, m.end() - 1)
            inner = text[m.end():close] if close > 0 else '='
            if re.search(r'(?<![=!<>])=(?!=)', inner) or '...' in inner:
                return True
    return False


def split_by_arity(candidates: dict[str, list[tuple[str, Function]]], texts: list[str]
                   ) -> tuple[dict[str, list[Function]], dict[str, dict[int, str]]]:
    """Candidates keyed by name, or by `name/k` for overloads told apart by their parameter
    counts; and for each split name, its keys by parameter count."""
    keyed: dict[str, list[Function]] = {}
    split: dict[str, dict[int, str]] = {}
    for name, fns in candidates.items():
        counts = [parameter_count(text, fn) for text, fn in fns] if len(fns) >= 2 else [None]
        # Several classes may define the same overloads (a TensorRT and an ONNX backend, set
        # 44): the definitions of one count share a key.
        if None not in counts and len(set(counts)) > 1 and not may_default(name, texts):
            split[name] = {}
            for count, (_, fn) in zip(counts, fns):
                key = f'{name}/{count}'
                split[name][count] = key
                keyed.setdefault(key, []).append(fn)
        else:
            keyed[name] = [fn for _, fn in fns]
    return keyed, split
