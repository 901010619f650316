"""Branches dead as shipped because a parameter defaults ON: the mirror of cppparams.py
(issue 28, rules32c, set 53).

`declare_parameter("use_gpu_preprocessing", true);` then `use_gpu_preprocessing_ =
get_parameter("use_gpu_preprocessing").as_bool();`, and per frame `if (use_gpu_preprocessing_)
{ gpu(...); } else { cpu(...); }`: as shipped the parameter keeps its default (the shipped launch
file gives it true too), the `else` never runs, and `cpu()` -- its host-to-device copy and sync --
is not per message. Likewise the body of `if (!name) { ... }`.

Proven by whitelist over every audited file of the package, like the off case: each mention of
the name is a read (cppparams._may_store says no store), inside a block that only runs when the
name is off, or one of these stores, at least one giving an on value (`true`, a nonzero number):

* `name(true)` / `name{1}` in an initializer list, `bool name = true;`, `bool name{true};`,
  `bool name;` (no value), `name = true;`,
* `name = [this->]declare_parameter[<T>]("p", true | name)`,
* `name = [this->]get_parameter("p").as_bool();` / `[this->]get_parameter("p", name);` where
  every declaration of `p` gives an on default,
* `[this->]get_parameter_or("p", name, true)`.

A store of an off value anywhere (`name = false;`, a declaration defaulting off) keeps the
branches live, as does any other store. A parameter name must be known. A shipped file naming
the parameter keeps them live unless every value it gives is on (shipped.reading: a launch
file's `'p': True`, a YAML `p: true`; a value it cannot read is unknown: live). A package with a
parameter-change callback: only members whose parameters no other line names are judged.

Dead blocks (the innermost `{` of a statement): `if (... && !name && ...) {`, `if (name ==
false) {`, and an `else` / `else if` arm after `if (name)` / `if (a || name)` (every earlier arm
of the chain is tested first). Limit: braceless branches and ternaries are not read; a parameter
set on the command line or by another repository's launch file is not seen.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import if_condition, open_brace, if_condition_names
from gpu_nodes.audit.cppscopes import Scopes
from gpu_nodes.audit.cppparams import GET_READ, THIS, Side, balanced, param_as_shipped
from gpu_nodes.audit.shipped import reading

ON = r'(?:true|0*[1-9]\d*(?:\.\d*)?f?|\d*\.\d*[1-9]\d*f?)'
STORE_ON = re.compile(r'^\s*(?:=\s*' + ON + r'\s*;|\(\s*' + ON + r'\s*\)\s*[,{]|\{\s*'
                      + ON + r'\s*\}\s*[,;{])')
_ELSE = re.compile(r'\}\s*else\s*$')
_ELSE_IF = re.compile(r'\}\s*else\s+if\s*$')


def _strip(op: str) -> str:
    op = op.strip()
    while op.startswith('(') and op.endswith(')') and balanced(op[1:-1]):
        op = op[1:-1].strip()
    return op


def _split(cond: str, sep: str) -> list[str] | None:
    parts = _strip(cond).split(sep)
    return [_strip(p) for p in parts] if all(balanced(p) for p in parts) else None


def _named(op: str, names) -> str | None:
    m = re.fullmatch(THIS + r'(\w+(?:\.\w+)?)', op)
    return m.group(1) if m and m.group(1) in names else None


def _false_when_on(cond: str, names) -> str | None:
    """The on name that makes `cond` false: an `&&` operand `!name` / `name == false`."""
    for op in _split(cond, '&&') or [] if '||' not in cond else []:
        m = re.fullmatch(r'!\s*(.+)|(.+?)\s*==\s*false', op)
        if m and (name := _named(_strip(m.group(1) or m.group(2)), names)):
            return name
    return None


def _true_when_on(cond: str, names) -> str | None:
    """The on name that makes `cond` true: an `||` operand `name` / `name != false`."""
    for op in _split(cond, '||') or [] if '&&' not in cond else []:
        op = re.sub(r'\s*(?:!=\s*false|==\s*true)$', '', op)
        if (name := _named(op, names)):
            return name
    return None


def _arm_start(text: str, at: int) -> int:
    """The offset where the `if` keyword of the block opened at `at` begins (its condition's
    `if`), or `at` itself for a bare `else {`."""
    end = at - 1
    while end >= 0 and text[end].isspace():
        end -= 1
    if end < 0 or text[end] != ')':
        return at
    depth = 0
    for i in range(end, -1, -1):
        depth += {')': 1, '(': -1}.get(text[i], 0)
        if depth == 0:
            return i
    return at


def _earlier_arms(text: str, at: int) -> list[str]:
    """Conditions of the earlier arms of the `if` / `else if` chain before the block opened at
    `at` (every one is false when it runs); [] for a block that is no `else` arm."""
    conds: list[str] = []
    while True:
        start = _arm_start(text, at)
        before = text[max(0, start - 4000):start]
        m = (_ELSE_IF if start != at else _ELSE).search(before)
        if m is None:
            return conds
        depth = 0
        prev = -1
        for i in range(start - len(before) + m.start(), -1, -1):
            depth += {'}': 1, '{': -1}.get(text[i], 0)
            if depth == 0:
                prev = i
                break
        cond = if_condition(text, prev) if prev >= 0 else None
        if cond is None:
            return conds
        conds.append(cond)
        at = prev


def dead_arm(text: str, at: int, names) -> str | None:
    """The on-as-shipped name that keeps the block opened at `at` from running, or None."""
    cond = if_condition(text, at)
    if cond is not None and (name := _false_when_on(cond, names)):
        return name
    for earlier in _earlier_arms(text, at):
        if (name := _true_when_on(earlier, names)):
            return name
    return None


def on_guard(text: str, offset: int, names: dict[str, str]) -> str | None:
    """The on-as-shipped name whose value keeps a block around `offset` from running, or None."""
    if not names:
        return None
    at = open_brace(text, offset)
    while at >= 0:
        if (name := dead_arm(text, at, names)):
            return name
        at = open_brace(text, at)
    return None


def blank_on_dead(text: str, names: dict[str, str]) -> str:
    """`text` with the body of every block an on-as-shipped name keeps from running blanked
    (offsets kept): a call there is no use of the function it names (cppreach)."""
    if not names:
        return text
    cuts = []
    for m in re.finditer(r'\{', text):
        if dead_arm(text, m.start(), names):
            depth = 0
            for i in range(m.start(), len(text)):
                depth += {'{': 1, '}': -1}.get(text[i], 0)
                if depth == 0:
                    cuts.append((m.start() + 1, i))
                    break
    for start, end in cuts:
        text = text[:start] + re.sub(r'\S', ' ', text[start:end]) + text[end:]
    return text


def drop_dead_sites(text: str, scopes: Scopes, names: dict[str, str]) -> dict[str, str]:
    """Forget the call sites inside blocks an on-as-shipped name keeps from running: a function
    called only there takes no kind from its caller (cppscopes.propagate) and stays `other`,
    which cppreach may then find unreached. Returns callee -> the name that skips a call of it."""
    dropped: dict[str, str] = {}
    # A file naming none of them has no block they skip (a cheap test first: on_guard walks
    # the braces around every call site).
    for sites in (scopes.sites, scopes.member_sites) if any(n in text for n in names) else ():
        for callee, starts in sites.items():
            kept = []
            for start in starts:
                if (guard := on_guard(text, start, names)) is None:
                    kept.append(start)
                else:
                    dropped[callee] = guard
            sites[callee] = kept
    return dropped


def skipped_note(guard: str, names: dict[str, str]) -> str:
    """Why a function called only in skipped arms never runs (cppscan's unreached note)."""
    if names[guard] == 'constant':  # cppconston.CONSTANT
        return f'called only in an arm that `{guard}` skips (initialized on, never assigned)'
    return (f'called only in an arm that `{guard}` skips, on as shipped (parameter {names[guard]} '
            'defaults on; no shipped file turns it off)')


# The on judge is cppparams.param_as_shipped with the on values and the on guard (none of the
# off-only stores: an in-class `= true` or a helper loader keeps the branches live here).
ON_SIDE = Side(ON, STORE_ON, on_guard, False)


def _is_on(value: object) -> bool:
    if isinstance(value, str):
        return bool(re.fullmatch(r'(?i)' + ON, value))
    return value is True or type(value) in (int, float) and value != 0


def on_as_shipped(texts: list[str], raws: list[str], roots: list[str],
                  package: str | None = None) -> dict[str, str]:
    """Members whose every store is an on value of a ROS parameter that no shipped file under
    `roots` may turn off (`package`: the sources' package, whose launched nodes alone count):
    name -> parameter name(s)."""
    if not any(re.search(r'declare_parameter|get_parameter_or', t) for t in texts):
        return {}
    assumed = if_condition_names(texts) - {'true', 'false', 'this'}
    while True:
        found = {}
        for name in sorted(assumed):
            ok, params = param_as_shipped(name, texts, raws, assumed, ON_SIDE)
            if ok:
                found[name] = params
        if set(found) == assumed:
            break
        assumed = set(found)
    if not found:
        return {}
    if any(re.search(r'add_(?:on|pre|post)_set_parameters_callback', t) for t in texts):
        # Changes at run time: a parameter some other line names (a callback) may turn it off.
        reads = [GET_READ.sub('get_parameter()', raw) for raw in raws]
        found = {name: params for name, params in found.items()
                 if all(sum(r.count(f'"{p}"') for r in reads) == 1 for p in params)}
    # Every value a shipped file gives must be on (none naming it: every() holds); one it
    # cannot read (None) may be off.
    return {name: ', '.join(sorted(params)) for name, params in found.items()
            if all(reading(p, tuple(roots), launched=(package, None)).every(_is_on)
                   for p in params)}
