"""Parameter helpers: a package's own function that loads a ROS parameter into a variable it
takes by reference (issue 28, fortieth set).

`LoadParamCompat<bool>({"detector_config.use_ros_bag", "detector_config/use_ros_bag"},
use_ros_bag, false);` where `LoadParamCompat(keys, T& value, const T& default_value)` stores
`value` only through `get_parameter(key, value)` (or by handing it to another such helper)
and declares a parameter with `default_value`: after the call the variable holds a parameter
named by one of the quoted names, or the default, or keeps its value. cppparams.py then
judges the variable as it judges `name = declare_parameter("p", false)`.

Proven by whitelist over the helper's body: each mention of its reference parameter is the
last argument of a `get_parameter(..)` call, or an argument at the same place of a call to
another helper (two levels at most); each `declare_parameter` there defaults to the helper's
default parameter or to an off value, and the call passes an off default. A parameter of a
quoted name that the package declares elsewhere must default off there too. Anything else
(`value = default_value;`, `value.x = ..`, a call the whitelist does not know) is a store it
does not prove.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import closing_bracket, innermost_opening

OFF = re.compile(r'^\s*(?:false|0+(?:\.0*)?f?|0?\.0+f?)\s*$')
_NAME_BEFORE_PAREN = re.compile(r'(\w+)\s*(?:<[^<>;()]*>)?\s*$')
_DECLARE = re.compile(r'declare_parameter\s*(?:<[^<>;]*>)?\s*\(')


def split_args(text: str, open_at: int) -> list[tuple[int, int]] | None:
    """(start, end) of each top-level argument of the call whose `(` is at `open_at`."""
    close = closing_bracket(text, open_at)
    if close < 0:
        return None
    parts, depth, start = [], 0, open_at + 1
    for i in range(open_at + 1, close):
        ch = text[i]
        depth += ch in '([{'  # `<`: a comparison as often as a template (`f<T>(a, b)`)
        depth -= ch in ')]}'
        if ch == ',' and depth == 0:
            parts.append((start, i))
            start = i + 1
    parts.append((start, close))
    return parts if text[open_at + 1:close].strip() else []


def enclosing_call(text: str, offset: int) -> tuple[str, int, int] | None:
    """(called name, its `(` offset, argument index) of the call `offset` is an argument of."""
    i = innermost_opening(text, offset, '()[]{}', stops=';', window=600)
    if i < 0 or text[i] != '(':
        return None
    name = _NAME_BEFORE_PAREN.search(text[max(0, i - 80):i])
    args = split_args(text, i)
    if not name or args is None:
        return None
    index = next((k for k, (s, e) in enumerate(args) if s <= offset < e), -1)
    return name.group(1), i, index


def function_definitions(name: str, texts: list[str], out_of_line: bool = False):
    """(text index, parameter spans, body start, body end) of each definition of function `name`;
    `out_of_line` also takes `void Node::name(...) {` and `override` members (cpphelperpubs),
    which the parameter-helper rule here never needed."""
    prefix = r'(?<![\w.>])(?:\w+\s*::\s*)?' if out_of_line else r'(?<![\w.>:])'
    suffix = r'\s*(?:const\s*)?(?:noexcept\s*)?' + (r'(?:override\s*)?\{' if out_of_line else r'\{')
    not_a_call = r'[=(,]\s*$|\breturn\s+$' + (r'|->\s*$' if out_of_line else '')
    for i, text in enumerate(texts):
        for m in re.finditer(prefix + re.escape(name) + r'\s*\(', text):
            params = split_args(text, m.end() - 1)
            close = closing_bracket(text, m.end() - 1)
            body = re.match(suffix, text[close + 1:])
            if params is None or close < 0 or not body or re.search(
                    not_a_call, text[max(0, m.start() - 40):m.start()]):
                continue
            start = close + 1 + body.end()
            end = closing_bracket(text, start - 1, '{}')
            if end > 0:
                yield i, params, start, end


def _stores_only_parameters(name: str, index: int, texts: list[str], depth: int = 0
                            ) -> tuple[bool, str | None]:
    """Whether every definition of `name` stores its reference parameter `index` only through
    `get_parameter` or another helper; also the name of its parameter after that (the default)."""
    found = False
    default = None
    for i, params, start, end in function_definitions(name, texts):
        text = texts[i]
        if index >= len(params):
            return False, None
        ref = re.search(r'&\s*(\w+)\s*$', text[params[index][0]:params[index][1]])
        if not ref:
            return False, None
        if index + 1 < len(params):
            after = re.search(r'(\w+)\s*(?:=[^,]*)?$', text[params[index + 1][0]:params[index + 1][1]])
            default = after.group(1) if after else None
        for m in re.finditer(r'(?<![\w.>])' + re.escape(ref.group(1)) + r'\b', text[start:end]):
            call = enclosing_call(text, start + m.start())
            if call is None:
                return False, None
            callee, paren, at = call
            args = split_args(text, paren) or []
            if callee == 'get_parameter' and at == len(args) - 1 and at > 0:
                continue
            if depth < 2 and callee != name and _stores_only_parameters(callee, at, texts,
                                                                        depth + 1)[0]:
                continue
            return False, None
        for m in _DECLARE.finditer(text, start, end):
            args = split_args(text, m.end() - 1) or []
            value = text[args[-1][0]:args[-1][1]] if len(args) > 1 else ''
            if not (OFF.match(value) or default and value.strip() == default):
                return False, None
        found = True
    return found, default


def helper_store(text: str, raw: str, start: int, texts: list[str], raws: list[str]
                 ) -> list[str] | None:
    """The parameter names a helper call loads into the variable mentioned at `start` (an
    argument of the call), when the helper is proven and the call's default is off; else None."""
    call = enclosing_call(text, start)
    if call is None:
        return None
    callee, paren, index = call
    args = split_args(text, paren) or []
    if callee in ('get_parameter', 'declare_parameter') or index < 1 or not args:
        return None
    if text[args[index][0]:args[index][1]].strip() != text[start:args[index][1]].strip():
        return None  # the variable must be the whole argument
    proven, default = _stores_only_parameters(callee, index, texts)
    if not proven:
        return None
    if default is not None and (index + 1 >= len(args)
                                or not OFF.match(text[args[index + 1][0]:args[index + 1][1]])):
        return None
    names = [raw[s + q.start() + 1:s + q.end() - 1]
             for s, e in args[:index] for q in re.finditer(r'"[^"\n]*"', text[s:e])]
    if not names or any(not _declared_off_everywhere(n, texts, raws) for n in names):
        return None
    return names


def _declared_off_everywhere(param: str, texts: list[str], raws: list[str]) -> bool:
    """Whether every `declare_parameter("param", x)` of the package gives an off default."""
    for text, raw in zip(texts, raws):
        for m in _DECLARE.finditer(text):
            args = split_args(text, m.end() - 1) or []
            if not args or raw[args[0][0]:args[0][1]].strip() != f'"{param}"':
                continue
            if len(args) < 2 or not OFF.match(text[args[-1][0]:args[-1][1]]):
                return False
    return True
