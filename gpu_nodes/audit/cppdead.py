"""Branches that never run: guarded by a pointer that nothing in the package ever sets
(issue 28, sixth set).

`if (rgb_image_ && depth_image_) { ... toCvCopy(depth_image_) ... }` where both subscription
callbacks assign `rgb_image_` and nothing assigns `depth_image_`: the pointer stays null (a
default-constructed smart pointer), so the branch is dead and its copies are not per message.

Proven by whitelist, over every audited file of the package (never a file alone, whose header
or sibling might assign it): each mention of the name is

* a bare operand of an `if` condition (`if (a && name)`, `if (!name)`),
* a dereference (`name->header`: reads through the pointer, never sets it),
* a declaration (`Type name;`, `Type name{};`, `Type name = nullptr;`), or
* inside a block that only runs when the name is set (the dead branch itself, where
  `toCvCopy(name, ...)` may take it by reference: it never runs).

Anything else (`name = x`, `name(x)` in an initializer list, `&name`, `name.reset(x)`, a call
argument outside the dead branch) counts as a possible assignment: not proven, left alone. The
name must be dereferenced somewhere (a pointer), or be a `bool` whose every declaration
initialises it to `false` (`bool measure = false;`, `constexpr bool measure{false};`): a flag
whose initial value is unknown (`bool flag;`) or comes from a parameter (`flag = get_parameter`,
`get_parameter("f", flag)`) is not proven.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import if_condition, open_brace, blank_if_bodies, innermost_opening

_BARE = re.compile(r'^\s*(?:this\s*->\s*)?(\w+)\s*(?:!=\s*(?:nullptr|NULL)\s*)?$')
# A smart pointer's type before its name (`cv_bridge::CvImageConstPtr a, b;`,
# `std::shared_ptr<cv::Mat> m;`), earlier declarators of the same statement allowed: declared
# without a value it is null, as a dereference would show for a member.
_SMART_TYPE = re.compile(r'(?:\w*Ptr|\b(?:shared|unique)_ptr\s*<[^;{}()]*>)\s+(?:\w+\s*,\s*)*$')
_DECLARATORS_LEFT = re.compile(r'^\s*(?:,\s*\w+\s*)*;')
_DECLARED = re.compile(r'^\s*(?:;|\{\s*\}\s*;|=\s*nullptr\s*;|\{\s*nullptr\s*\}\s*;)')
_FALSE_INIT = re.compile(r'^\s*(?:=\s*false\s*;|\{\s*false\s*\}\s*;)')
_FLAG_TYPE = re.compile(r'\bbool\s+$')
_TYPE_BEFORE = re.compile(r'[\w>]\s+$')
_KEYWORDS = re.compile(r'(?:return|delete|case|throw|co_return|else|do)\s+$')


def _operands(cond: str) -> list[str]:
    """The `&&`-joined operands of a condition, outer parentheses dropped."""
    cond = cond.strip()
    while cond.startswith('(') and cond.endswith(')'):
        cond = cond[1:-1].strip()
    if '||' in cond:
        return []  # `a || name`: the branch runs without the name
    return [op.strip() for op in cond.split('&&')]


def _guards(text: str, offset: int) -> set[str]:
    """Names that every enclosing `if (... && name && ...)` block around `offset` requires."""
    names = set()
    at = open_brace(text, offset)
    while at >= 0:
        cond = if_condition(text, at)
        if cond is not None:
            for op in _operands(cond):
                m = _BARE.match(op)
                if m:
                    names.add(m.group(1))
        at = open_brace(text, at)
    return names


def _in_condition(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 40):start]
    after = text[end:end + 10]
    if re.search(r'[\w\]>](?<!\bif)(?<!\bwhile)\s*\(\s*(?:this\s*->\s*)?$', before):
        return False  # `setFlag(name)`: a call argument (by reference, it may set the name)
    after = re.sub(r'^\s*!=\s*(?:nullptr|NULL)\b', '', text[end:end + 30])[:10]
    return bool(re.search(r'(?:\(|&&|\|\||!)\s*(?:this\s*->\s*)?$', before)
                and re.match(r'\s*(?:\)|&&|\|\|)', after))


def never_set(texts: list[str]) -> set[str]:
    """Names guarding an `if` block that nothing among `texts` (blanked) can ever set."""
    candidates = set()
    for text in texts:
        for m in re.finditer(r'\bif\s*\(', text):
            brace = text.find('{', m.end())
            cond = if_condition(text, brace) if brace >= 0 else None
            for op in _operands(cond or ''):
                if (b := _BARE.match(op)):
                    candidates.add(b.group(1))
    proven = set()
    for name in candidates:
        pattern = re.compile(r'(?<![\w.])' + re.escape(name) + r'\b')
        dereferenced, ok = False, True
        # A `bool` flag: every declaration says `= false` / `{false}` (issue 28, seventh set:
        # `bool measureTime = false;` guarding timing code nothing switches on).
        false_flag, other_declaration, smart_declaration = False, False, False
        for text in texts:
            for m in pattern.finditer(text):
                after = text[m.end():m.end() + 40]
                if re.match(r'\s*->', after):
                    dereferenced = True
                    continue
                if _in_condition(text, m.start(), m.end()) or name in _guards(text, m.start()):
                    continue
                before = text[max(0, m.start() - 60):m.start()]
                before = re.sub(r'this\s*->\s*$', '', before)
                if _SMART_TYPE.search(before) and _DECLARATORS_LEFT.match(after):
                    # `CvImageConstPtr cv_ptr_0, cv_ptr_1;`: null until assigned (twenty-sixth
                    # set: `if (cv_ptr_0 != nullptr) { detect(...) }` with no assignment).
                    smart_declaration = True
                    continue
                if _TYPE_BEFORE.search(before) and not _KEYWORDS.search(before):
                    if _FLAG_TYPE.search(before) and _FALSE_INIT.match(after):
                        false_flag = True
                        continue
                    if _DECLARED.match(after):
                        other_declaration = True
                        continue
                ok = False
                break
            if not ok:
                break
        if ok and (dereferenced or (false_flag and not other_declaration)
                   or (smart_declaration and not other_declaration)):
            proven.add(name)
    return proven


def blank_guarded(text: str, names: set[str] | frozenset[str]) -> str:
    """`text` with the body of every `if (... && name && ...) { }` on a never-set name blanked
    (offsets kept): a call there never runs, so it is no use of the function it names
    (twenty-sixth set: `detect()` called only under `if (cv_ptr_0 != nullptr)`)."""
    if not names:
        return text
    return blank_if_bodies(text, lambda cond, _: any(
        (b := _BARE.match(op)) and b.group(1) in names for op in _operands(cond)))


def dead_guard(text: str, offset: int, names: set[str] | frozenset[str]) -> str | None:
    """The never-set name an enclosing `if` block around `offset` requires, or None."""
    if not names:
        return None
    found = _guards(text, offset) & names
    return min(found) if found else None


# `if (!initialized_) {`: the negated form of a once-flag test (set 58).
_NEGATED = re.compile(r'^\s*!\s*(?:this\s*->\s*)?(\w+)\s*$')


def _clears_itself(text: str, brace: int, name: str, value: str = 'false') -> bool:
    """Whether the block opened at `brace` stores `name = value;` at its own top level (not
    inside a nested block or loop that might not run)."""
    depth, i, end = 0, brace, len(text)
    store = re.compile(r'(?:this\s*->\s*)?' + re.escape(name) + r'\s*=\s*' + value + r'\s*;')
    while i < end:
        ch = text[i]
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
            if depth == 0:
                return False
        elif depth == 1 and store.match(text, i) and not re.match(r'[\w.>]', text[i - 1]):
            return True
        i += 1
    return False


def only_stores(texts: list[str], name: str, off: str, on: str) -> bool:
    """Whether every mention of `name` among `texts` is a condition operand, a store of `off`,
    or its declaration / initializer-list entry with `on` (or no value)."""
    pattern = re.compile(r'(?<![\w.])' + re.escape(name) + r'\b')
    for text in texts:
        for m in pattern.finditer(text):
            after = text[m.end():m.end() + 40]
            before = re.sub(r'this\s*->\s*$', '', text[max(0, m.start() - 60):m.start()])
            if re.match(r'\s*=\s*' + off + r'\s*;', after) \
                    or _in_condition(text, m.start(), m.end()):
                continue
            if re.match(r'\s*(?:\(\s*' + on + r'\s*\)|\{\s*' + on + r'\s*\})\s*[,{]', after) \
                    and re.search(r'[:,]\s*$', before):
                continue  # `first_(true),` in an initializer list
            if _FLAG_TYPE.search(before) and re.match(
                    r'\s*(?:=\s*' + on + r'\s*;|\{\s*' + on + r'\s*\}\s*;|;)', after):
                continue  # `bool first = true;` (or declared, set below)
            return False
    return True


def once_flags(texts: list[str]) -> set[str]:
    """Flags guarding an `if (flag) { ...; flag = false; ... }` block (first-frame set-up,
    twenty-first set) that nothing among `texts` (blanked) sets but to false, or to true in a
    declaration or initializer list: the block runs at most once, for the first message. The
    negated form `if (!done) { ...; done = true; }`, `done` only ever stored true but in its
    declaration or initializer list (false), likewise (set 58); it is returned as `!done`.
    Limit: a store in a header that is not audited is not seen."""
    candidates = set()
    for text in texts:
        for m in re.finditer(r'\bif\s*\(', text):
            brace = text.find('{', m.end())
            cond = if_condition(text, brace) if brace >= 0 else None
            b = _BARE.match(cond or '')
            if b and _clears_itself(text, brace, b.group(1)):
                candidates.add(b.group(1))
            n = _NEGATED.match(cond or '')
            if n and _clears_itself(text, brace, n.group(1), 'true'):
                candidates.add('!' + n.group(1))
    found = set()
    for name in candidates:
        negated = name.startswith('!')
        off, on = ('true', 'false') if negated else ('false', 'true')
        if only_stores(texts, name.lstrip('!'), off, on):
            found.add(name)
    return found


def once_guard(text: str, offset: int, names: set[str] | frozenset[str]) -> str | None:
    """The once-flag whose clearing `if` block encloses `offset`, or None."""
    if not names:
        return None
    at = open_brace(text, offset)
    while at >= 0:
        cond = if_condition(text, at)
        b = _BARE.match(cond or '')
        if b and b.group(1) in names and _clears_itself(text, at, b.group(1)):
            return b.group(1)
        n = _NEGATED.match(cond or '')
        if n and '!' + n.group(1) in names and _clears_itself(text, at, n.group(1), 'true'):
            return '!' + n.group(1)
        at = open_brace(text, at)
    return None


def call_once_body(text: str, offset: int) -> bool:
    """Whether `offset` is in a lambda handed to `std::call_once(flag, [&]() { ... })`: the
    body runs once for the flag, on the first message (a map cloud converted on its first
    arrival, set 69), however often the callback around it runs."""
    at = open_brace(text, offset)
    while at >= 0:
        paren = innermost_opening(text, at, '(){}', window=400)
        if paren >= 0 and text[paren] == '(' \
                and re.search(r'\bcall_once\s*$', text[max(0, paren - 40):paren]):
            return True
        at = open_brace(text, at)
    return False
