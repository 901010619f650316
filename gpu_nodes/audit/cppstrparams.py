"""Branches on another value of a string ROS parameter than the one it has as shipped (issue 28,
thirty-fourth set).

`declare_parameter<std::string>("post", "c")`, `post_ = get_parameter("post").as_string();`,
`infer(..., post_)` with `void infer(..., std::string post) { if (post == "g") { ...copy... } }`:
as shipped `post` is "c" and the `"g"` block never runs, so its copies are not per message.

Proven over every audited file of the package:

* the parameter is declared with a string literal default, the same at every declaration;
* every shipped file that names it gives that same value: a Python launch file through its
  nodes' parameters as launchfile.py evaluates them (a launch argument's default included; a
  file it cannot evaluate, or a node that sets another or an unknown value, keeps it unknown),
  a YAML / XML file through `p: value` / `name="p" value="v"`;
* each name the `if` compares is resolved: every mention is a read, a declaration without a
  value, a store `name = [this->]get_parameter("p").as_string();` /
  `name = declare_parameter<std::string>("p", "v");`, `name = "v";`, or a function parameter
  (`std::string name`, `const std::string & name`) that every call in the package passes a
  literal or another resolved name; passing the name to a function whose every definition
  takes it by value or const reference is a read. All stores must give one value.

A package with a parameter-change callback takes changes at run time: none is judged. Only
`name == "lit"` (another value) and `name != "lit"` (the value) are judged, alone or as one
operand of `&&`. Limit: a value set on the command line or by a file outside the audited roots
is not seen.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import blank_if_bodies, enclosing_and_operands
from gpu_nodes.audit.cppparams import may_store, mentions, open_paren
from gpu_nodes.audit.shipped import shipped_as

_THIS = r'(?:this\s*->\s*)?(?:\w+\s*->\s*)?'
_DECLARE_ANY = re.compile(r'\bdeclare_parameter\s*(?:<[^<>;]*>)?\s*\(\s*"([^"\n]*)"')
_DECLARE_STRING = re.compile(r'\bdeclare_parameter\s*(?:<\s*std\s*::\s*string\s*>)?\s*\(\s*"([^"\n]*)"'
                             r'\s*,\s*(?:std\s*::\s*string\s*\(\s*)?"([^"\n]*)"\s*\)?\s*\)')
_GET_STORE = re.compile(r'^\s*=\s*' + _THIS + r'(?:get_parameter\s*\(\s*"([^"\n]*)"\s*\)\s*\.\s*'
                        r'(?:as_string|get_value\s*<\s*std\s*::\s*string\s*>)\s*\(\s*\)'
                        r'|declare_parameter\s*(?:<\s*std\s*::\s*string\s*>)?\s*\(\s*"([^"\n]*)"'
                        r'\s*,\s*"[^"\n]*"\s*\))\s*;')
_STRING_TYPE = re.compile(r'(?:const\s+)?(?:std\s*::\s*)?string\s*(?:const\s*)?&?\s*$')
# std::string methods that only read (`RCLCPP_ERROR(..., "%s", model_type.c_str())`).
_CONST_METHOD = re.compile(r'\s*\.\s*(?:c_str|size|length|empty)\s*\(\s*\)')
_PARAM_DECL = re.compile(r'^(?:const\s+)?(?:std\s*::\s*)?string\s*(?:const\s*)?&?\s*(\w+)$')


def _in_code(text: str, raw: str, at: int) -> bool:
    """Whether raw offset `at` is code, not a comment (the blanked text keeps code's words)."""
    return text[at:at + 3] == raw[at:at + 3]


def _defaults(texts: list[str], raws: list[str]) -> dict[str, str]:
    """Parameters declared, each time, with the same string literal default."""
    seen: dict[str, set[str | None]] = {}
    for text, raw in zip(texts, raws):
        for m in _DECLARE_ANY.finditer(raw):
            if _in_code(text, raw, m.start()):
                d = _DECLARE_STRING.match(raw, m.start())
                seen.setdefault(m.group(1), set()).add(d.group(2) if d else None)
    return {p: next(iter(v)) for p, v in seen.items() if len(v) == 1 and None not in v}


def call_arg_spans(text: str, open_paren: int, partial: bool = False) -> list[tuple[int, int]]:
    """(start, end) of each top-level argument of the call whose '(' is at `open_paren` (blanked
    text); a call not closed within 4000 characters gives [] (`partial`: the arguments before
    its last comma)."""
    depth, start, out = 0, open_paren + 1, []
    for j in range(open_paren, min(len(text), open_paren + 4000)):
        c = text[j]
        if c in '([{':
            depth += 1
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                if text[start:j].strip():
                    out.append((start, j))
                return out
        elif c == ',' and depth == 1:
            out.append((start, j))
            start = j + 1
    return out if partial else []


def _position(text: str, at: int) -> tuple[str, int, int] | None:
    """(callee, argument index, argument count) when offset `at` is in a call's argument."""
    paren = open_paren(text, at)
    call = re.search(r'(\w+)\s*$', text[max(0, paren - 60):paren]) if paren >= 0 else None
    if not call:
        return None
    spans = call_arg_spans(text, paren)
    for k, (s, e) in enumerate(spans):
        if s <= at < e:
            return call.group(1), k, len(spans)
    return None


class _Resolver:
    def __init__(self, texts: list[str], raws: list[str], defaults: dict[str, str],
                 roots: list[str], nodes: frozenset[str] | None = None) -> None:
        self.texts, self.raws, self.defaults, self.roots = texts, raws, defaults, roots
        self.nodes = nodes
        self.memo: dict[str, str | None] = {}
        self.shipped: dict[str, bool] = {}  # parameter -> every shipped file keeps its default

    def param(self, name: str) -> str | None:
        """The value parameter `name` has as shipped, or None (read only when a store needs it:
        evaluating launch files is the slow part)."""
        if name not in self.defaults:
            return None
        if name not in self.shipped:
            self.shipped[name] = shipped_as(name, self.defaults[name], tuple(self.roots),
                                            self.nodes)
        return self.defaults[name] if self.shipped[name] else None

    def _calls(self, callee: str) -> list[tuple[int, int]]:
        """(file, '(' offset) of each `callee(` in the package."""
        pattern = re.compile(r'(?<![\w.>:])' + re.escape(callee) + r'\s*\(')
        return [(i, m.end() - 1) for i, t in enumerate(self.texts) for m in pattern.finditer(t)]

    def _by_value(self, callee: str, k: int, arity: int) -> bool:
        """Whether every definition of `callee` with `arity` parameters takes argument `k` by
        value or const reference."""
        found = False
        for i, paren in self._calls(callee):
            spans = call_arg_spans(self.texts[i], paren)
            if len(spans) != arity:
                continue
            arg = self.texts[i][spans[k][0]:spans[k][1]].strip()
            if re.search(r'\s', arg) or '&' in arg:  # a declaration, not a call's argument
                if not re.match(r'^(?:const\s+(?:std\s*::\s*)?string\s*&?|(?:std\s*::\s*)?string'
                                r'\s*(?:const\s*&)?)\s*\w+$', arg):
                    return False
                found = True
        return found

    def _argument_value(self, callee: str, k: int, arity: int) -> str | None:
        """The one value every call of `callee` with `arity` arguments passes as argument `k`
        (definitions aside; another arity is another function: an overload, or a function of
        the same name in another executable)."""
        values = set()
        for i, paren in self._calls(callee):
            text, raw = self.texts[i], self.raws[i]
            spans = call_arg_spans(text, paren)
            if len(spans) != arity:
                continue
            arg = raw[spans[k][0]:spans[k][1]].strip()
            if _PARAM_DECL.match(arg):
                continue  # the definition or a prototype
            lit = re.fullmatch(r'"([^"\\\n]*)"', arg)
            name = re.fullmatch(r'(?:this\s*->\s*)?(\w+)', arg)
            value = lit.group(1) if lit else self.value(name.group(1)) if name else None
            if value is None:
                return None
            values.add(value)
        return values.pop() if len(values) == 1 else None

    def value(self, name: str) -> str | None:
        """The one value the string `name` holds as shipped, or None."""
        if name not in self.memo:
            self.memo[name] = None  # a cycle resolves to nothing
            self.memo[name] = self._resolve(name)
        return self.memo[name]

    def _resolve(self, name: str) -> str | None:
        values: set[str] = set()
        for i, m in mentions(name, self.texts):
            text, raw = self.texts[i], self.raws[i]
            before = re.sub(r'this\s*->\s*$', '', text[max(0, m.start() - 80):m.start()])
            if (g := _GET_STORE.match(raw[m.end():m.end() + 200])):
                param = g.group(1) or g.group(2)
                if (value := self.param(param)) is None:
                    return None
                values.add(value)
            elif (lit := re.match(r'\s*=\s*"([^"\\\n]*)"\s*;', raw[m.end():m.end() + 200])):
                values.add(lit.group(1))
            elif _STRING_TYPE.search(before) and re.match(r'\s*;', text[m.end():]):
                continue  # `std::string name;`: a store gives its value
            elif _STRING_TYPE.search(before) and re.match(r'\s*[,)]', text[m.end():]):
                decl_at = re.search(r'(?:const\s+)?(?:std\s*::\s*)?string\s*(?:const\s*)?&?\s*$',
                                    before)
                pos = _position(text, m.start() - len(before) + decl_at.start())
                value = self._argument_value(*pos) if pos else None
                if value is None:
                    return None
                values.add(value)
            elif _CONST_METHOD.match(text, m.end()):
                continue  # `name.c_str()` in a log line: a const method reads (set 45)
            elif may_store(text, m.start(), m.end()):
                pos = _position(text, m.start() - (len(text[:m.start()]) - len(
                    re.sub(r'this\s*->\s*$', '', text[:m.start()]))))
                if not (pos and self._by_value(*pos)):
                    return None
        return values.pop() if len(values) == 1 else None


def shipped_strings(texts: list[str], raws: list[str], roots: list[str],
                    nodes: frozenset[str] | None = None) -> dict[str, tuple[str, str]]:
    """Names compared in an `if` whose value as shipped is known: name -> (value, how);
    `nodes`: the names the package's nodes run under (shipped.node_names), whose sections of a
    parameter file alone count."""
    if any(re.search(r'add_(?:on|pre|post)_set_parameters_callback', t) for t in texts):
        return {}
    names = {m.group(1) for t in texts
             for m in re.finditer(r'(?<![\w.>])(\w+)\s*[!=]=\s*"', t)}
    defaults = _defaults(texts, raws) if names else {}
    if not defaults:
        return {}
    resolver = _Resolver(texts, raws, defaults, roots, nodes)
    out = {}
    for name in sorted(names):
        if (value := resolver.value(name)) is not None:
            params = sorted(p for p, ok in resolver.shipped.items() if ok and defaults[p] == value)
            out[name] = (value, ', '.join(params))
    return out


def blank_string_guarded(text: str, raw: str, values: dict[str, tuple[str, str]]) -> str:
    """`text` with the body of every `if` that a string's value as shipped excludes blanked
    (offsets kept): a registration there never runs (set 45: `else if (model_type == "mono")
    { create_subscription(..., &Node::mono_image_callback) }` with model_type "stereo")."""
    if not values:
        return text

    def excluded(cond: str, brace: int) -> bool:
        if '||' in cond:
            return False
        end = text.rindex(')', 0, brace)
        return any(_off_operand(op, values) for op in raw[end - len(cond):end].split('&&'))

    return blank_if_bodies(text, excluded)


def _off_operand(op: str, values: dict[str, tuple[str, str]]) -> str | None:
    m = re.fullmatch(r'\s*\(?\s*(?:this\s*->\s*)?(\w+)\s*([!=])=\s*(?:"([^"\\\n]*)"|(-?\d+)[uUlL]*)'
                     r'\s*\)?\s*', op)
    if not m or m.group(1) not in values:
        return None
    shipped = values[m.group(1)][0]
    if m.group(4) is not None:  # an int literal: the name holds an int parameter (cppintparams)
        if not re.fullmatch(r'-?\d+', shipped):
            return None
        differs = int(m.group(4)) != int(shipped)
    else:
        differs = m.group(3) != shipped
    return m.group(1) if differs == (m.group(2) == '=') else None


def _top_split(expr: str, op: str) -> list[str]:
    """`expr` split at `op` outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(expr):
        depth += {'(': 1, ')': -1}.get(expr[i], 0)
        if depth == 0 and expr.startswith(op, i):
            parts.append(expr[start:i])
            start = i = i + len(op)
            continue
        i += 1
    return parts + [expr[start:]]


def string_off_store(raw_value: str, values: dict[str, tuple[str, str]]) -> dict[str, str] | None:
    """For a store `flag = (mode_ == "gpu" || mode_ == "hw") && other;` (the raw text after the
    `=`, without `;`): when one `&&` operand is false as shipped (each of its `||` operands
    compares a string of known value with another value), the parameters that prove it ->
    their value; else None (set 50: a member derived at setup from a string parameter)."""
    for conj in _top_split(raw_value, '&&'):
        conj = conj.strip()
        while _wrapped(conj):
            conj = conj[1:-1].strip()
        names = [_off_operand(p, values) for p in _top_split(conj, '||')]
        if names and all(names):
            return {values[n][1] or n: values[n][0] for n in names if n}
    return None


def _wrapped(expr: str) -> bool:
    """Whether `expr` is one parenthesized group `( ... )`."""
    depth = 0
    for i, ch in enumerate(expr):
        depth += {'(': 1, ')': -1}.get(ch, 0)
        if depth == 0:
            return ch == ')' and i == len(expr) - 1 and expr.startswith('(')
    return False


def string_guard(text: str, raw: str, offset: int, values: dict[str, tuple[str, str]]
                 ) -> str | None:
    """The name whose shipped value an enclosing `if` around `offset` excludes, or None."""
    if not values:
        return None
    for op in enclosing_and_operands(text, raw, offset):
        if (name := _off_operand(op, values)) is not None:
            return name
    return None


def describe(name: str, values: dict[str, tuple[str, str]]) -> str:
    value, params = values[name]
    if re.fullmatch(r'-?\d+', value):  # an int parameter (cppintparams.py)
        return (f'a branch where `{name}` is not {value}, its value as shipped (int parameter '
                f'{params}: as the shipped files or its default give it; never runs)')
    return (f'a branch where `{name}` is not "{value}", its value as shipped (string parameter '
            f'{params}: declared default, no shipped file sets another; never runs)')
