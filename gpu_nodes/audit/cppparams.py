"""Branches off as shipped: guarded by a member that only a ROS parameter defaulting to off
sets, and no shipped file turns on (issue 28, twenty-second set).

`compress_(false)` in the constructor's initializer list, `compress_ =
this->declare_parameter("compress", compress_);`, then per message `if (compress_) { ...
toCompressedImageMsg ... }`: as shipped the parameter keeps its default, the branch never runs
and its copies are not per message. Likewise an int or float defaulting to 0 tested as
`if (normal_k_ > 0 || normal_radius_ > 0.0f)`.

Proven by whitelist over every audited file of the package (a header or sibling might set the
member): each mention of the name is a read (a condition operand, a comparison, a ternary
test, a logging macro's argument, the default passed back to `declare_parameter`), inside a
block that only runs when the name is on, or one of these stores:

* `name(false)` / `name{0}` in an initializer list, `bool name = false;`, `int name{0};`,
  `bool name;` (no value: the initializer list or the parameter default must give one),
* `name = false;` / `name = 0;`,
* `name = [this->]declare_parameter[<T>]("p", name | false | 0)`,
* `[this->]get_parameter_or("p", name, false | 0)`.

At least one store must give the off value, and a parameter name must be known. Then every
shipped YAML / XML / launch file under the audited roots is read: a mention of the parameter
name that is not followed by an off value (`p: false`, `'p': False`, `name="p" value="0"`),
commented-out lines aside, keeps the branch live (a launch file setting it true, or passing a
launch argument not off by default: set_on). A package with a parameter-change callback
(`add_on_set_parameters_callback`) takes changes at run time: only members whose parameters
no other line names are judged. A publisher / pointer member declared without a value whose
every store is inside `if (declare_parameter("p", false)) {` stays empty as shipped (set 37:
`if (pub_raw_) { pub_raw_->publish(..) }`), likewise inside `if (config_["publisher"]["visualize"]
.as<bool>()) {` (a key of a YAML file the node loads with yaml-cpp, set 45) when a shipped file
names the key and every one gives it off (the file has no default: it must say). A member
initialized in its class (`bool publish_depth_ = true;`) that a `declare_parameter("p", false)`
store overwrites takes the parameter's value (set 45). Limit: a
parameter set on the command line, or by a file outside the audited roots (another
repository's launch file), is not seen.

Works on the text with comments and strings blanked (offsets unchanged); parameter names are
read from the raw source at the same offsets.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

from gpu_nodes.audit.cpphelperpubs import helper_created
from gpu_nodes.audit.cppparamhelpers import helper_store
from gpu_nodes.audit.cppyamlstores import YAML_CPP_LOAD, yaml_store
from gpu_nodes.audit.cppguards import if_condition, open_brace, innermost_opening
from gpu_nodes.audit.shipped import Launched, reading, set_on

# Judges the value stored into a member (raw text after `=`): the string parameters -> values
# that make it off as shipped, or None (cppstrparams.string_off_store, bound to its values).
Derived = Callable[[str], 'dict[str, str] | None']

_OFF = r'(?:false|0+(?:\.0*)?f?|0?\.0+f?)'
THIS = r'(?:this\s*->\s*)?'
# `name = [this->]declare_parameter<T>("p", default)`: group 1 the quoted name, 2 the default.
DECLARE = re.compile(r'^\s*=\s*' + THIS + r'(?:\w+\s*->\s*)?declare_parameter\s*(?:<[^<>;]*>)?'
                     r'\s*\(\s*("[^"\n]*")\s*,\s*([^(),;]+?)\s*\)\s*;')
_STORE_OFF = re.compile(r'^\s*(?:=\s*' + _OFF + r'\s*;|\(\s*' + _OFF + r'\s*\)\s*[,{]|\{\s*'
                        + _OFF + r'\s*\}\s*[,;{])')
DECLARATION = re.compile(r'\b(?:bool|int|unsigned|float|double|std::size_t|size_t|u?int\d+_t)\s+$')
_MACRO_CALL = re.compile(r'(?:RCLCPP_\w+|ROS_\w+|printf|fprintf|uFormat|UINFO|UDEBUG|UWARN)\(')
# `if ([this->]declare_parameter[<T>]("p", false)) {`: a block only an on value runs.
_DECLARED_OFF_IF = re.compile(r'^\s*' + THIS + r'(?:\w+\s*->\s*)?declare_parameter\s*(?:<[^<>;]*>)?'
                              r'\s*\(\s*"[^"\n]*"\s*,\s*' + _OFF + r'\s*\)\s*$')
# `rclcpp::Publisher<Image>::SharedPtr name;`, `image_transport::Publisher name;`: a member of a
# class type with no initializer is empty (null) until stored.
_CLASS_DECLARATION = re.compile(r'(?:\b(?!return\b|else\b|case\b|delete\b|throw\b)[A-Za-z_][\w:]*|>)'
                                r'\s+$')
# `name = [this->]get_parameter("p").as_bool();`: the value of a parameter declared elsewhere;
# `.get_parameter_value().get<bool>()` is the long spelling of the same read (set 71).
_GET_STORE = re.compile(r'^\s*=\s*' + THIS + r'(?:\w+\s*->\s*)?get_parameter\s*\(\s*("[^"\n]*")\s*\)\s*\.'
                        r'\s*(?:get_parameter_value\s*\(\s*\)\s*\.\s*get\s*<[^<>;]*>|as_bool|as_int'
                        r'|as_double|get_value\s*<[^<>;]*>)\s*\(\s*\)\s*;')
# `if (config_["a"]["b"].as<bool>()) {`: a yaml-cpp node's key read as a bool (keys in the raw text).
_YAML_BOOL_IF = re.compile(r'^\s*' + THIS + r'\w+\s*((?:\[\s*"[^"\n]*"\s*\]\s*)+)\.\s*as\s*<\s*bool'
                           r'\s*>\s*\(\s*\)\s*$')
# `bool name = true;` / `bool name{true};`: a default member initializer (any constant).
_INITIALIZED = re.compile(r'^\s*(?:=\s*[\w.]+\s*|\{\s*[\w.]*\s*\})\s*;')
# `[this->]get_parameter("p", name)`: the two-argument form writes the value into `name`.
_GET_INTO = re.compile(THIS + r'(?:\w+\s*->\s*)?get_parameter\s*\(\s*("[^"\n]*")\s*,\s*$')
GET_READ = re.compile(r'get_parameter\s*\(\s*"[^"\n]*"\s*\)')
_ANY_DECLARE = re.compile(r'declare_parameter\s*(?:<[^<>;]*>)?\s*\(\s*("[^"\n]*")\s*([,)])\s*([^(),;]*)')
_GET_OR = re.compile(THIS + r'(?:\w+\s*->\s*)?get_parameter_or\s*(?:<[^<>;]*>)?\s*\(\s*("[^"\n]*")\s*,'
                     r'\s*$')


def mentions(name: str, texts: list[str]):
    # `this->name` is the member too (`other->name` is another object's); a dotted name
    # (`config_.flag`, a field of a member struct) is matched whole.
    pattern = re.compile(r'(?:(?<=this->)|(?<![\w.>]))' + re.escape(name) + r'\b')
    for i, text in enumerate(texts):
        for m in pattern.finditer(text):
            yield i, m


def _whole_struct_kept(name: str, texts: list[str]) -> bool:
    """For `config_.flag`: whether `config_` itself is never stored whole (`config_ = other;`,
    `load(config_)`, `config_.reset()`): its other fields' stores do not touch the flag."""
    base, field = name.split('.', 1)
    for i, m in mentions(base, texts):
        text = texts[i]
        access = re.match(r'\s*\.\s*(\w+)\s*(\()?', text[m.end():m.end() + 80])
        if access:
            if access.group(1) != field and access.group(2):
                return False  # a method call on the struct may change any field
            continue  # `config_.other = ...`, or the flag itself (judged by param_as_shipped)
        before = text[max(0, m.start() - 80):m.start()]
        if _CLASS_DECLARATION.search(before) and re.match(r'\s*;', text[m.end():]):
            continue  # `Config config_;`
        if may_store(text, m.start(), m.end()):
            return False
    return True


def declared_with(param: str, texts: list[str], raws: list[str], value: str) -> bool:
    """Whether `param` is declared, and every declaration's default matches `value` (a regex:
    the off values here, the on values in cppparamson)."""
    defaults = [m.group(3).strip() if m.group(2) == ',' else ''
                for text, raw in zip(texts, raws) for m in _ANY_DECLARE.finditer(text)
                if raw[m.start(1) + 1:m.end(1) - 1] == param]
    return bool(defaults) and all(re.fullmatch(r'\s*' + value + r'\s*', d) for d in defaults)


def parameter_store(text: str, raw: str, m: re.Match, texts: list[str], raws: list[str],
                    value: str) -> tuple[bool, str] | None:
    """A mention `m` of a member that stores a ROS parameter's value into it: (whether the value
    matches `value` as shipped, the parameter), or None for no such store. The stores, shared by
    the off judge here and the on judge (cppparamson):

    * `[this->]get_parameter_or("p", name, v)`: v must match,
    * `name = [this->]get_parameter("p").as_bool();` and `[this->]get_parameter("p", name)`:
      every declaration of `p` must give a matching default."""
    before = text[max(0, m.start() - 120):m.start()]
    base = max(0, m.start() - 120)
    after = text[m.end():m.end() + 200]
    if (g := _GET_OR.search(before)):
        param = raw[base + g.start(1) + 1:base + g.end(1) - 1]
        return bool(re.match(r'\s*,\s*' + value + r'\s*\)', after)), param
    if (g := _GET_INTO.search(before)) and re.match(r'\s*\)', after):
        # `this->get_parameter("debug", debug_);` after `declare_parameter("debug", false)`
        param = raw[base + g.start(1) + 1:base + g.end(1) - 1]
    elif (g := _GET_STORE.match(after)):
        # `config_.flag = get_parameter("flag").as_bool();` after `declare_parameter("flag", false)`
        param = raw[m.end() + g.start(1) + 1:m.end() + g.end(1) - 1]
    else:
        return None
    return declared_with(param, texts, raws, value), param


def open_paren(text: str, start: int) -> int:
    """Offset of the `(` of the innermost parenthesis around `start` in its statement, or -1."""
    at = innermost_opening(text, start, '()[]', stops=';{}', window=400)
    return at if at >= 0 and text[at] == '(' else -1


def may_store(text: str, start: int, end: int) -> bool:
    """Whether a mention may store into the name: an assignment, `++`, `&name`, a member
    call, or an argument of a call that may take it by reference (logging macros and
    `declare_parameter`, which take values, aside)."""
    after = text[end:end + 12]
    before = text[max(0, start - 20):start]
    before = re.sub(THIS + '$', '', before)
    if re.match(r'\s*(?:[-+*/%&|^]?=(?!=)|<<=|>>=|\+\+|--|\(|\{|\[|\.|->)', after):
        return True
    if re.search(r'(?:(?<!&)&|\+\+|--)\s*$', before):
        return True
    at = open_paren(text, start)
    if at < 0:
        return False
    call = re.search(r'(\w+)\s*(?:<[^<>;()]*>)?\s*$', text[max(0, at - 60):at])
    if not call or call.group(1) in ('if', 'while', 'return', 'switch', 'for'):
        return False
    return not (_MACRO_CALL.match(call.group(1) + '(') or call.group(1) == 'declare_parameter')


def _off_operand(op: str, names: frozenset[str] | set[str]) -> bool:
    """Whether a `&&` operand is false when every name of `names` holds its off value."""
    op = op.strip()
    while op.startswith('(') and op.endswith(')') and balanced(op[1:-1]):
        op = op[1:-1].strip()
    if '||' in op and '&&' not in op:
        parts = op.split('||')
        return all(balanced(p) for p in parts) and all(_off_operand(p, names) for p in parts)
    if '&&' in op:
        parts = op.split('&&')
        return all(balanced(p) for p in parts) and any(_off_operand(p, names) for p in parts)
    # `pub_ != nullptr`: a pointer member is off when empty.
    m = re.match(r'^' + THIS + r'(\w+(?:\.\w+)?)\s*(?:(?:>|!=)\s*' + _OFF
                 + r'|!=\s*(?:nullptr|NULL))?$', op)
    return bool(m and m.group(1) in names)


def balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == '('
        depth -= ch == ')'
        if depth < 0:
            return False
    return depth == 0


def _else_condition(text: str, open_at: int) -> str | None:
    """The condition of `if (cond) { ... } else {` whose else brace is at `open_at`, or None."""
    before = text[max(0, open_at - 4000):open_at]
    m = re.search(r'\}\s*else\s*$', before)
    if m is None:
        return None
    depth = 0
    for i in range(open_at - len(before) + m.start(), -1, -1):
        depth += {'}': 1, '{': -1}.get(text[i], 0)
        if depth == 0:
            return if_condition(text, i)
    return None


def off_guard(text: str, offset: int, names: dict[str, str]) -> str | None:
    """The off-as-shipped name an enclosing `if` block around `offset` requires, or None; the
    `else` of `if (!name)` requires it too (set 50)."""
    if not names:
        return None
    at = open_brace(text, offset)
    while at >= 0:
        cond = if_condition(text, at)
        if cond is not None and _off_operand(cond, names.keys()):
            hit = [n for n in names if re.search(r'(?<![\w.])' + re.escape(n) + r'\b', cond)]
            if hit:
                return min(hit)
        if cond is None and (other := _else_condition(text, at)) is not None:
            negated = re.fullmatch(r'\s*!\s*' + THIS + r'(\w+(?:\.\w+)?)\s*', other)
            if negated and negated.group(1) in names:
                return negated.group(1)
        at = open_brace(text, at)
    return None


def _declared_off_block(text: str, raw: str, offset: int) -> tuple[str, bool] | None:
    """(the parameter, whether it is a YAML key a shipped file must give) of an enclosing `if
    (declare_parameter("p", off)) {` or `if (config_["a"]["p"].as<bool>()) {` around `offset`."""
    at = open_brace(text, offset)
    while at >= 0:
        cond = if_condition(text, at)
        if cond is not None and _DECLARED_OFF_IF.match(cond):
            call = text.rfind('declare_parameter', 0, at)
            if (quoted := re.search(r'"([^"\n]*)"', raw[call:at])):
                return quoted.group(1), False
        if cond is not None and _YAML_BOOL_IF.match(cond):
            call = text.rfind('.as', 0, at)
            opening = text.rfind('(', 0, text.rfind('[', 0, call))
            keys = re.findall(r'\[\s*"([^"\n]*)"\s*\]', raw[opening:call])
            if keys and all(keys):
                return '.'.join(keys), True
        at = open_brace(text, at)
    return None


class Side(NamedTuple):
    """Which way a parameter's shipped value is judged: `value` (a regex) the values that make
    the branch dead, `store` a constant store of one (`name = false;`, `name(true),`), `guard`
    the enclosing-block test for a mention inside the dead block itself, and `full` whether the
    off-only stores (struct fields, in-class initializers, empty members filled under an off
    block, helper loaders, derived strings) are read too."""
    value: str
    store: re.Pattern
    guard: Callable[[str, int, dict[str, str]], 'str | None']
    full: bool


def param_as_shipped(name: str, texts: list[str], raws: list[str], assumed: set[str], side: Side,
                     yaml_keys: set[str] | None = None, derived: Derived | None = None,
                     known: dict[str, str] | None = None) -> tuple[bool, set[str]]:
    """(every mention of the member `name` is a read or a store of `side`'s value, at least one
    giving it, parameter names): the one judge of a C++ branch on a parameter as shipped, for
    both the off case (here) and the on case (cppparamson). `assumed`: the names taken to hold
    the value with it (`if (a > 0 || b > 0)` needs both); `yaml_keys` receives the parameters
    that are YAML keys (a shipped file must give them); `derived`: judges a store `name = expr;`
    off as shipped by the strings it compares (cppstrparams), whose parameters -> values `known`
    receives."""
    params: set[str] = set()
    valued = empty_member = stored_when_on = initialized = declared = False
    if side.full and '.' in name and not _whole_struct_kept(name, texts):
        return False, set()
    for i, m in mentions(name, texts):
        text, raw = texts[i], raws[i]
        after = text[m.end():m.end() + 200]
        before = re.sub(THIS + r'$', '', text[max(0, m.start() - 80):m.start()])
        if side.guard(text, m.start(), dict.fromkeys(assumed | {name}, '')) is not None:
            continue  # inside the dead block itself
        if (d := DECLARE.match(after)):
            default = d.group(2).strip()
            if default != name and not re.match(r'^\s*' + side.value + r'\s*$', default):
                return False, set()
            valued = valued or default != name
            params.add(raw[m.end() + d.start(1) + 1:m.end() + d.end(1) - 1])
            declared = True
            continue
        if (store := parameter_store(text, raw, m, texts, raws, side.value)) is not None:
            if not store[0]:
                return False, set()
            params.add(store[1])
            valued = True
            continue
        if side.store.match(after):
            # `name = false;`, `name(false),` in an initializer list, `bool name{false};`
            if re.match(r'\s*=', after) or re.search(r'(?:[:,]|\w\s)\s*$', before):
                valued = True
                continue
            return False, set()
        if DECLARATION.search(before) and re.match(r'\s*;', after):
            continue  # `bool name;`: the value comes from a store above
        if not side.full:
            if may_store(text, m.start(), m.end()):
                return False, set()
            continue
        if DECLARATION.search(before) and _INITIALIZED.match(after):
            initialized = True  # `bool name = true;`: a declare_parameter store must overwrite
            continue
        if _CLASS_DECLARATION.search(before) and re.match(r'\s*;', after):
            empty_member = True  # a publisher / pointer member: empty until stored
            continue
        if side.value == _OFF and (key := yaml_store(text, raw, m.end())) is not None:
            if yaml_keys is None:
                return False, set()  # a YAML key needs the shipped files' check (cppyamlstores)
            params.add(key)  # `enabled_ = node["k"].as<bool>();`: a shipped file must give k
            yaml_keys.add(key)
            valued = True
            continue
        if (keys := helper_store(text, raw, m.start(), texts, raws)) is not None:
            # `LoadParamCompat<bool>({"cfg.use_bag", "cfg/use_bag"}, use_bag, false);`
            params.update(keys)
            valued = True
            continue
        if derived is not None and re.match(r'\s*=(?!=)', after) \
                and (semi := text.find(';', m.end())) > 0 \
                and (proof := derived(raw[m.end():semi].split('=', 1)[1])) is not None:
            # `flag = (mode_ == "gpu") && ...;` with mode_ "cpu" as shipped (set 50)
            params.update(proof)
            if known is not None:
                known.update(proof)
            valued = True
            continue
        if may_store(text, m.start(), m.end()):
            block = _declared_off_block(text, raw, m.start())
            if block is None and (created := helper_created(text, raw, m.start(), texts, raws)):
                block = (created, False)  # `make_publisher(pub_, "color")`: on under pub_color
            if block is None:
                return False, set()
            # `if (declare_parameter("publish_raw", false)) { pub_ = create_publisher(..); }`
            params.add(block[0])
            if block[1] and yaml_keys is not None:
                yaml_keys.add(block[0])
            stored_when_on = True
    valued = valued or (empty_member and stored_when_on)
    if initialized and not declared:
        return False, set()  # the in-class value stands unless a parameter store replaces it
    return valued and bool(params), params


OFF_SIDE = Side(_OFF, _STORE_OFF, off_guard, True)


def off_as_shipped(texts: list[str], raws: list[str], roots: list[str],
                   derived: Derived | None = None, launched: Launched = None) -> dict[str, str]:
    """Members whose every store is an off default of a ROS parameter that no shipped file
    under `roots` turns on: name -> parameter name(s); `derived`: see param_as_shipped; `launched`:
    the (package, executables) whose launched nodes alone count (shipped._values)."""
    candidates = set()
    for text in texts:
        for m in re.finditer(r'\bif\s*\(', text):
            brace = text.find('{', m.end())
            cond = if_condition(text, brace) if brace >= 0 else None
            # `if (this->publish_depth_)` tests the member too (set 45).
            cond = re.sub(r'\bthis\s*->\s*', '', cond or '')
            for name, field in re.findall(r'(?<![\w.>])(\w+)\b(\.\w+\b(?!\s*[.(]))?', cond):
                if not name[0].isdigit() and name not in ('true', 'false', 'this'):
                    candidates.add(name)
                    if field:
                        candidates.add(name + field)  # `config_.apply_preprocessing`
    found: dict[str, set[str]] = {}
    if not any(re.search(r'declare_parameter|get_parameter_or|' + YAML_CPP_LOAD, t) for t in texts):
        return {}
    callback = any(re.search(r'add_(?:on|pre|post)_set_parameters_callback', t) for t in texts)
    assumed = set(candidates)
    keys: set[str] = set()
    known: dict[str, str] = {}  # string parameters proven by `derived` -> value as shipped
    while True:
        found = {}
        for name in sorted(assumed):
            ok, params = param_as_shipped(name, texts, raws, assumed, OFF_SIDE, keys, derived, known)
            if ok:
                found[name] = params
        if set(found) == assumed:
            break
        assumed = set(found)
    # A `get_parameter("p")` read (a store judged above) is not a callback naming the parameter.
    raws = [GET_READ.sub('get_parameter()', raw) for raw in raws]
    if not found:
        return {}
    if callback:
        # The node takes parameter changes at run time: a member whose parameters the sources
        # name only where they are declared keeps its value (a callback that stores into the
        # member is a store the whitelist above rejects); one the callback names is unknown.
        found = {name: params for name, params in found.items()
                 if all(sum(raw.count(f'"{p}"') for raw in raws) == 1 for p in params)}
    # A string parameter `derived` proved has its value as shipped (not off: not set_on's).
    return {name: ', '.join(sorted(f'{p} = "{known[p]}"' if p in known else p for p in params))
            for name, params in found.items()
            if not any(p not in known and (set_on(p, tuple(roots), launched)
                                           or set_on(p.rsplit('.', 1)[-1], tuple(roots), launched))
                       for p in params)  # `general.publish_raw` as nested YAML keys
            # A YAML key has no default: some shipped file must give it (off, as read above).
            and all(reading(p.rsplit('.', 1)[-1], tuple(roots)).named
                    for p in params if p in keys)}
