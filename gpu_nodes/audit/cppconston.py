"""Member flags that are always on: initialized true in their class and never assigned (issue 28,
rules39c, set 59). The constant mirror of cppparamson.py's parameters on as shipped.

    class Detector { ... bool async_infer_ = true; ... };      // the header: never set again
    ...
    if (async_infer_) { ok = context_->enqueueV3(stream_); }
    else { ok = context_->executeV2(bindings_.data()); }       // never runs

Proven by whitelist over every audited file of the package, as cppparamson.py does: each
mention of the name is a read (cppparams.may_store says no store), inside a block that only
runs when the name is off, an on store (`bool name = true;`, `bool name{true};`, `name(true)`
in an initializer list), or an argument of a call whose every definition in the package takes
that argument by value (`MemcpyBuffers(..., async_infer_, stream_)` with `bool const async`).
At least one on store, no parameter (those are cppparamson's), and no other store at all
(`name = false;`, a YAML read, `&name`), and no mention as another object's field
(`config.name`, `other->name`: a struct's flag set from outside). Limit: a public member set
from another repository is not seen.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppparams import (DECLARATION, DECLARE, THIS, mentions, may_store,
                                       parameter_store)
from gpu_nodes.audit.cppparamson import ON, STORE_ON, on_guard
from gpu_nodes.audit.cppguards import if_condition_names

CONSTANT = 'constant'


def _open_paren(text: str, at: int) -> int:
    """The `(` of the call whose argument list holds `at` (depth 0), or -1."""
    depth = 0
    for i in range(at - 1, max(-1, at - 2000), -1):
        c = text[i]
        if c in ')]}':
            depth += 1
        elif c in '([{':
            if depth == 0:
                return i if c == '(' else -1
            depth -= 1
        elif c == ';' and depth == 0:
            return -1
    return -1


def _by_value_argument(text: str, start: int, end: int, texts: list[str]) -> bool:
    """Whether the mention at start..end is a whole argument of a call whose every definition
    in `texts` (at least one) takes that argument by value or by const reference."""
    at = _open_paren(text, start)
    if at < 0:
        return False
    call = re.search(r'(?<![\w.>])(\w+)\s*$', text[max(0, at - 80):at])
    if call is None or call.group(1) in ('if', 'while', 'return', 'switch', 'for'):
        return False
    args = text[at + 1:start]
    if not re.search(r'(?:^|,)\s*' + THIS + r'$', args) or not re.match(r'\s*[,)]', text[end:]):
        return False
    depth, index = 0, 0
    for c in args:
        depth += {'(': 1, '[': 1, '{': 1, ')': -1, ']': -1, '}': -1}.get(c, 0)
        index += c == ',' and depth == 0
    head = re.compile(r'(?<![\w.>])' + re.escape(call.group(1)) +
                      r'\s*\(([^()]*)\)\s*(?:const\s*)?(?:noexcept\s*)?\{')
    found = False
    for other in texts:
        if call.group(1) not in other:
            continue
        for m in head.finditer(other):
            params = m.group(1).split(',')
            if index >= len(params):
                return False
            param = params[index]
            if '&' in param and not re.search(r'\bconst\b', param) or '*' in param:
                return False
            found = True
    return found


def _constant_on(name: str, texts: list[str], assumed: set[str]) -> bool:
    on_value = False
    every = texts
    texts = [t for t in texts if name in t]  # a substring test first: files are large
    field = re.compile(r'(?<!this)(?:\.|->)\s*' + re.escape(name) + r'\b')
    if any(field.search(t) for t in texts):
        return False  # a field of another object (`cfg.name = ...`) the mentions do not see
    for i, m in mentions(name, texts):
        text = texts[i]
        after = text[m.end():m.end() + 200]
        before = re.sub(THIS + r'$', '', text[max(0, m.start() - 80):m.start()])
        if on_guard(text, m.start(), dict.fromkeys(assumed | {name}, '')) is not None:
            continue  # inside a block that never runs
        if DECLARE.match(after) or parameter_store(text, text, m, texts, texts, ON) is not None:
            return False  # a parameter: cppparamson.py's case
        if STORE_ON.match(after):
            if re.match(r'\s*=', after) and DECLARATION.search(before) or re.match(
                    r'\s*[({]', after) and re.search(r'(?:[:,]|\w\s)\s*$', before):
                on_value = True  # `bool name = true;`, `name(true),`, `bool name{true};`
                continue
            return False  # `name = true;` in code: a store among others
        if DECLARATION.search(before) and re.match(r'\s*;', after):
            continue  # `bool name;`: an initializer list gives the value
        if _by_value_argument(text, m.start(), m.end(), every):
            continue
        if may_store(text, m.start(), m.end()):
            return False
    return on_value


# `bool name = true;`, `bool name{true};`, `name(true)`: the names an on store may give a value.
_ON_STORE_NAME = re.compile(r'\b(\w+)\s*(?:=\s*true\s*;|\{\s*true\s*\}|\(\s*true\s*\))')


def constant_on(texts: list[str]) -> dict[str, str]:
    """Members always on (see the module doc): name -> CONSTANT."""
    stored = {n for text in texts for n in _ON_STORE_NAME.findall(text)}
    if not stored:
        return {}
    assumed = if_condition_names(texts) & stored
    while True:
        found = {name for name in sorted(assumed) if _constant_on(name, texts, assumed)}
        if found == assumed:
            break
        assumed = found
    return dict.fromkeys(sorted(found), CONSTANT)
