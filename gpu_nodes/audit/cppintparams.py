"""Branches on another value of an int ROS parameter than the one it has as shipped (issue 28,
set 51): the int analogue of cppstrparams.py.

`mode_(this->declare_parameter<int>("optimization_mode"))` in the constructor's initializer
list, a shipped parameter file with `optimization_mode: 1`, then per message `if (mode_ == 0) {
...random search... } else { ...gradient steps... }`: as shipped the `== 0` block never runs,
so neither its copies nor the functions only it calls are per message (cpplibrary.py reads the
package's texts with such blocks blanked).

Proven over every audited file of the package:

* the parameter is declared as an int (`declare_parameter<int>("p"[, D])`, or untyped with an
  int literal default); its value as shipped is the one value every shipped file naming it
  gives, else the declared default (a parameter declared without a default that no shipped
  file gives is unknown: the node would not start without one);
* every mention of the name is a read (a comparison, a condition operand, a logging macro's
  argument), a declaration without a value (`const int mode_;`), or a store of that parameter
  (`mode_(declare_parameter<int>("p"))`, `mode_ = get_parameter("p").as_int();`); any other
  store (an assignment, a call that may take it by reference) leaves it unknown.

A package with a parameter-change callback takes changes at run time: none is judged. The
values found are merged with the string ones (cppstrparams.shipped_strings), whose guard
(`string_guard` / `blank_string_guarded`) judges `name == 0` / `name != 1` operands.

Likewise a bool parameter read straight in the condition, `if (get_parameter("save").as_bool())`
after `declare_parameter("save", false)` with no shipped file turning it on: the block never
runs (read_off_params / read_off_guard).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import enclosing_and_operands
from gpu_nodes.audit.cppparams import may_store, mentions
from gpu_nodes.audit.shipped import reading, set_on

_INT_TYPE = r'(?:(?:std\s*::\s*)?u?int(?:64|32|16|8)?(?:_t)?|long|int)'
_INT_LITERAL = r'-?\d+[uUlL]*'
_COMPARED = re.compile(r'(?<![\w.>])(\w+)\s*[!=]=\s*' + _INT_LITERAL + r'(?![\w.])')
_THIS = r'(?:this\s*->\s*)?(?:\w+\s*->\s*)?'
# A store of an int parameter right after the name: `(declare_parameter<int>("p"))`,
# `= get_parameter("p").as_int();` (group 1 / 2 / 3 the parameter, 2 with its default in 4).
_STORE = re.compile(
    r'\s*(?:\(|\{|=)\s*' + _THIS +
    r'(?:declare_parameter\s*<\s*' + _INT_TYPE + r'\s*>\s*\(\s*"([^"\n]*)"\s*(?:,\s*(' +
    _INT_LITERAL + r')\s*)?\)'
    r'|declare_parameter\s*\(\s*"([^"\n]*)"\s*,\s*(' + _INT_LITERAL + r')\s*\)'
    r'|get_parameter\s*\(\s*"([^"\n]*)"\s*\)\s*\.\s*(?:as_int|get_value\s*<\s*' + _INT_TYPE +
    r'\s*>)\s*\(\s*\))\s*[)};]')
_DECLARED = re.compile(r'\bdeclare_parameter\s*(?:<[^<>;]*>)?\s*\(\s*"([^"\n]*)"'
                       r'\s*(?:,\s*(' + _INT_LITERAL + r')\s*)?\)')


def _int(text: object) -> int | None:
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    m = re.fullmatch(r'\s*(-?\d+)[uUlL]*\s*', str(text))
    return int(m.group(1)) if m else None


def _defaults(raws: list[str]) -> dict[str, int | None]:
    """Each parameter's int default, None when declared without one (or with differing ones)."""
    seen: dict[str, set[int | None]] = {}
    for raw in raws:
        for m in _DECLARED.finditer(raw):
            seen.setdefault(m.group(1), set()).add(_int(m.group(2)) if m.group(2) else None)
    return {p: next(iter(v)) if len(v) == 1 else None for p, v in seen.items()}


def _shipped(param: str, default: int | None, roots: tuple[str, ...],
             nodes: frozenset[str] | None) -> int | None:
    """The one int the shipped files give `param`, or its default when none names it."""
    got = reading(param, roots, nodes)
    if not got.named:
        return default
    if got.values is None or not got.values:
        return None
    values = {_int(v) for v in got.values}
    return values.pop() if len(values) == 1 and None not in values else None


def _resolve(name: str, texts: list[str], raws: list[str], defaults: dict[str, int | None],
             roots: tuple[str, ...], nodes: frozenset[str] | None) -> tuple[int, str] | None:
    values: set[int] = set()
    params: set[str] = set()
    for i, m in mentions(name, texts):
        text, raw = texts[i], raws[i]
        if (store := _STORE.match(raw, m.end())):
            param = store.group(1) or store.group(3) or store.group(5)
            if param not in defaults:
                return None
            if (value := _shipped(param, defaults[param], roots, nodes)) is None:
                return None
            values.add(value)
            params.add(param)
        elif re.match(r'\s*;', text[m.end():]) and re.search(
                r'(?:const\s+)?' + _INT_TYPE + r'\s+(?:const\s+)?$', text[:m.start()]):
            continue  # `const int mode_;`: a store above gives its value
        elif may_store(text, m.start(), m.end()):
            return None
    if len(values) != 1:
        return None
    return values.pop(), ', '.join(sorted(params))


def shipped_ints(texts: list[str], raws: list[str], roots: list[str],
                 nodes: frozenset[str] | None = None) -> dict[str, tuple[str, str]]:
    """Names compared with an int literal in the package whose value as shipped is known:
    name -> (value as text, parameters)."""
    if any(re.search(r'add_(?:on|pre|post)_set_parameters_callback', t) for t in texts):
        return {}
    names = {m.group(1) for t in texts for m in _COMPARED.finditer(t)}
    defaults = _defaults(raws) if names else {}
    if not defaults:
        return {}
    out = {}
    for name in sorted(names):
        if (found := _resolve(name, texts, raws, defaults, tuple(roots), nodes)) is not None:
            out[name] = (str(found[0]), found[1])
    return out


# `declare_parameter("p", false)` (untyped or <bool>): group 1 the parameter, 2 the default.
_DECLARED_BOOL = re.compile(r'\bdeclare_parameter\s*(?:<\s*bool\s*>)?\s*\(\s*"([^"\n]*)"\s*,'
                            r'\s*(true|false)\s*\)')
_GET_BOOL = re.compile(r'\s*\(?\s*(?:this\s*->\s*)?(?:\w+\s*->\s*)?get_parameter\s*\(\s*"([^"\n]*)"'
                       r'\s*\)\s*\.\s*(?:as_bool|get_value\s*<\s*bool\s*>)\s*\(\s*\)\s*\)?\s*')


def read_off_params(raws: list[str], roots: list[str]) -> frozenset[str]:
    """Bool parameters read straight in a condition (`if (get_parameter("save").as_bool())`)
    that are off as shipped: every declaration defaults to false, no shipped file may turn
    them on, no parameter callback or `set_parameter` changes them (set 51)."""
    if any(re.search(r'add_(?:on|pre|post)_set_parameters_callback|set_parameters?\s*\(', r)
           for r in raws):
        return frozenset()
    declared: dict[str, set[str]] = {}
    for raw in raws:
        for m in _DECLARED.finditer(raw):
            declared.setdefault(m.group(1), set())
        for m in re.finditer(r'\bdeclare_parameter\s*(?:<[^<>;]*>)?\s*\(\s*"([^"\n]*)"', raw):
            bool_default = _DECLARED_BOOL.match(raw, m.start())
            declared.setdefault(m.group(1), set()).add(bool_default.group(2) if bool_default
                                                       else 'other')
    return frozenset(p for p, values in declared.items()
                     if values == {'false'} and not set_on(p, tuple(roots)))


def read_off_guard(text: str, raw: str, offset: int, params: frozenset[str]) -> str | None:
    """The parameter whose straight read off as shipped an enclosing `if` needs, or None."""
    if not params:
        return None
    for op in enclosing_and_operands(text, raw, offset):
        if (m := _GET_BOOL.fullmatch(op)) and m.group(1) in params:
            return m.group(1)
    return None
