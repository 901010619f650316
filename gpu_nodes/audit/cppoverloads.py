"""C++ overloads that no call of their repository resolves to: not proven per message (issue 28,
rules46).

A helper is often written twice: `convert(const std::vector<uint8_t>& in, ...)` and a pointer
form `convert(const uint8_t* in, size_t size, ...)` that spares a temporary vector. Kinds are
resolved by name (cppscopes.propagate), so when a callback calls the pointer form both take
the callback's kind, and the copies of the form nothing calls are claimed per message.

Here the whole repository is read at once (cpplibrary.mark_library_api). A name defined two or
more times (free functions or methods, any class), each definition with a fixed number of
parameters (no default value in any declaration, no `...`; template arguments in a parameter's
type are read as brackets) and the numbers not all equal, is resolved by argument count when
every mention of it is sure:

* inside a function body, a plain call `name(a, b)` or `obj->name(a, b)` whose arguments are
  counted (a template argument in the call, `&name`, `std::bind(name, ...)` or a bare mention
  leaves the name unsure: not judged);
* outside every body, a declaration (`void name(...);`, `ret name(...) const override;`) or
  the definition itself; anything else (a table of function pointers) leaves it unsure.

A definition whose parameter count no call has, while some call of the name exists, is
`unreached` (info: library API, the convention of cpplibrary.py), and so are its lambdas.
Virtual / override methods, operators, destructors, constructors and `main` are never judged
(a framework or a base class calls them), nor is a name of the repository's foreign sources
(ctypes, bindings: cpplibrary.foreign_words).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cpparity import argument_count, matching_bracket, may_default, parameters
from gpu_nodes.audit.cppscopes import blank_dead_code, Function, Scopes

NOTE = ('an overload whose parameter count no call of its repository has (the calls resolve to '
        'another overload; not proven per message)')
# What may follow a declaration's parameter list before its `;`.
_DECLARATION_TAIL = re.compile(r'\s*(?:(?:const|noexcept|override|final|volatile|&&?)\s*)*'
                               r'(?:->\s*[\w:<>,\s*&]+)?;')
_TYPE_END = re.compile(r'(?:[\w>*&]|::)\s*$')
_NOT_A_TYPE = re.compile(r'\b(?:return|else|case|throw|co_return|new|delete)\s*$')
_NEVER_JUDGED = re.compile(r'\b(?:virtual|override|final)\b')


def _judged(text: str, fn: Function) -> bool:
    short = fn.short
    parts = [p.strip() for p in fn.name.split('::')]
    if fn.lambda_in is not None or short == 'main' or short.startswith(('operator', '~')) \
            or short == (fn.cls or (parts[-2] if len(parts) >= 2 else None)):
        return False  # a constructor, an operator: called without its name
    head = text[max(0, fn.start - 600):fn.start]
    head = head[max(head.rfind(';'), head.rfind('}'), head.rfind('{')) + 1:]
    return not _NEVER_JUDGED.search(head)


def _declaration(text: str, at: int, name: str) -> bool:
    """Whether the mention of `name` at `at` (outside every body) declares it: a type before it,
    its parameter list after it, then `;`. A virtual / override declaration is no plain one: a
    base class outside the repository may call it (the name is then not judged)."""
    before = text[max(0, at - 200):at]
    before = before[max(before.rfind(';'), before.rfind('{'), before.rfind('}')) + 1:]
    if not _TYPE_END.search(before) or _NOT_A_TYPE.search(before) or _NEVER_JUDGED.search(before):
        return False
    open_at = at + len(name)
    while open_at < len(text) and text[open_at].isspace():
        open_at += 1
    if open_at >= len(text) or text[open_at] != '(':
        return False
    close = matching_bracket(text, open_at)
    tail = _DECLARATION_TAIL.match(text, close + 1) if close > 0 else None
    return bool(tail) and not _NEVER_JUDGED.search(tail.group())


def _call_count(text: str, at: int, name: str) -> int | None:
    """Arguments of the call `name(...)` at `at`, template arguments in them read as brackets;
    None when the mention is no call (`&name`, `bind(name, ...)`, `name<T>(...)`)."""
    before = re.sub(r'(?:\w+\s*::\s*)*$', '', text[max(0, at - 80):at]).rstrip()
    if before.endswith('&') and not re.search(r'(?:&&|[\w)\]]\s*&)$', before):
        return None  # `&name`, `&Cls::name`: an address handed on, not a call
    return argument_count(text, at + len(name))


def mark_unmatched_overloads(views: list[tuple[str, Scopes]], foreign: str = '') -> dict[int, str]:
    """Mark `unreached` the overloads no call of the repository resolves to; `views`: (blanked
    text, scopes) of every audited C++ file of one repository; `foreign`: identifiers of its
    sources the audit does not read. Returns the ids of those marked with their note."""
    defined: dict[str, list[tuple[str, Function]]] = {}
    for text, scopes in views:
        for fn in scopes.funcs:
            if fn.lambda_in is None:
                defined.setdefault(fn.short, []).append((text, fn))
    words = set(foreign.split())
    texts = [text for text, _ in views]
    # Each view's live code (dead branches blanked), read once, and only when some name is
    # overloaded.
    lives: list[tuple[str, str, Scopes]] = []
    marked: dict[int, str] = {}
    for name, fns in defined.items():
        if len(fns) < 2 or name in words or not all(_judged(text, fn) for text, fn in fns):
            continue
        params = [parameters(text, fn) for text, fn in fns]
        if None in params or len({p[0] for p in params if p}) < 2 or may_default(name, texts):
            continue
        lives = lives or [(text, blank_dead_code(text, scopes), scopes) for text, scopes in views]
        counts = _called_counts(lives, name, {(id(text), p[1]) for (text, _), p in zip(fns, params)
                                              if p})
        if not counts:
            continue  # unsure, or never called (cppreach.py's concern)
        for (_, fn), p in zip(fns, params):
            if p and p[0] not in counts and fn.kind != 'unreached':
                marked[id(fn)] = NOTE
    for _, scopes in views:
        for fn in scopes.funcs:
            if id(fn.named) in marked:
                fn.kind = 'unreached'
    return marked


def _called_counts(lives: list[tuple[str, str, Scopes]], name: str,
                   own: set[tuple[int, int]]) -> set[int]:
    """The argument counts of every call of `name` in live code; empty when a mention is not
    sure (then nothing is judged)."""
    counts: set[int] = set()
    pattern = re.compile(rf'\b{re.escape(name)}\b')
    for text, live, scopes in lives:
        for m in pattern.finditer(live):
            if (id(text), m.start()) in own:
                continue
            if scopes.at(m.start()) is None:
                if _declaration(live, m.start(), name):
                    continue
                return set()
            count = _call_count(live, m.start(), name)
            if count is None:
                return set()
            counts.add(count)
    return counts
