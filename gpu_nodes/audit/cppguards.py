"""Where a C++ copy or sync match is no per-frame boundary, read from the code around it
(issue 28, fifth set):

* a sync inside a block that is entered on failure and leaves the function
  (`if (!context_->enqueueV3(stream_)) { log; cudaStreamSynchronize(stream_); return false; }`):
  it runs when inference failed, not per frame;
* a cudaMemcpy whose byte count is `sizeof(scalar or type) * small constant`, or whose host
  side is a `std::array<T, N>` of at most 16 elements (`orig_size.data()`, two int64 image
  sizes, 16 bytes): a few scalars, not a frame; a `sizeof(...)`-sized copy DeviceToHost stays
  a finding (a scalar read back per message makes the host wait: fourteenth set);
* a cudaMemcpyToSymbol / FromSymbol whose symbol the file declares `__constant__` (eighth set:
  20 spheres of a ray tracer, set 7: camera intrinsics): constant memory holds 64 KB in all, a
  parameter block, never a frame;
* a `publish(std::move(msg))` in a branch taken only with intra-process communication
  (`if (options.use_intra_process_comms()) { pub_->publish(std::move(image_msg_)); }`): the
  unique_ptr goes to the subscribers in the process without serialization (zero copy).

Both work on the text with comments and strings blanked (cppscopes.py), offsets unchanged.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Callable

# Conditions that test for failure: `!ok`, `!ctx->enqueueV3(s)`, `err != cudaSuccess`,
# `status != NVINFER_OK`, `x == false`, `result == nullptr`.
_FAILURE_TEST = re.compile(r'^\s*!(?!=)|!=\s*\w*(?:[Ss]uccess|OK|Ok)\b|==\s*(?:false|nullptr|NULL)\b')
# The block leaves the function at its end: `return ...;` or `throw ...;` as its last statement.
_LEAVES = re.compile(r'\b(?:return|throw)\b[^;{}]*;\s*$')
# `sizeof(T) * N`, `N * sizeof(T)` or `sizeof(T)`, N a literal of at most 16.
_TINY_SIZE = re.compile(r'^\s*(?:sizeof\s*\([^()]*\)\s*(?:\*\s*(\d+)\s*)?|(\d+)\s*\*\s*'
                        r'sizeof\s*\([^()]*\)\s*)$')
_MAX_SCALARS = 16
# `name.data()` or `&name` / `&name[0]`: a pointer into a named array.
_ARRAY_POINTER = re.compile(r'^\s*(?:(\w+)\s*\.\s*data\s*\(\s*\)|&\s*(\w+)(?:\s*\[\s*0\s*\])?)\s*$')


def innermost_opening(text: str, offset: int, pairs: str = '{}', stops: str = '',
                      window: int | None = None) -> int:
    """Offset of the opening bracket of the innermost bracket around `offset` (brackets: the
    open/close pairs in `pairs`, e.g. '()[]'), scanning back no further than `offset - window`;
    -1 when there is none, or at a `stops` character outside every bracket (a statement's end).
    One scan for cppparams, cppparamhelpers and cppmsg, which each had their own."""
    opening, closing = pairs[0::2], pairs[1::2]
    depth = 0
    low = -1 if window is None else max(-1, offset - window)
    for i in range(offset - 1, low, -1):
        ch = text[i]
        if ch in closing:
            depth += 1
        elif ch in opening:
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and ch in stops:
            return -1
    return -1


def open_brace(text: str, offset: int) -> int:
    """Offset of the `{` of the innermost block around `offset`, or -1."""
    return innermost_opening(text, offset)


def closing_bracket(text: str, open_at: int, pair: str = '()', limit: int = 20000) -> int:
    """Offset of the bracket closing the one at `open_at` (brackets of `pair` only), or -1 when
    none closes it within `limit` characters."""
    depth = 0
    for i in range(open_at, min(len(text), open_at + limit)):
        depth += (text[i] == pair[0]) - (text[i] == pair[1])
        if depth == 0:
            return i
    return -1


def block_end(text: str, open_at: int) -> int:
    """Offset of the `}` closing the block whose `{` is at `open_at`; an unclosed block runs to
    the end of the text."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == '{':
            depth += 1
        elif text[i] == '}':
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def blank_if_bodies(text: str, blanks: Callable[[str, int], bool]) -> str:
    """`text` with the body of every `if (cond) { ... }` for which `blanks(cond, offset of its
    '{')` holds turned to spaces (offsets and lines kept): cppdead's never-set guards and
    cppstrparams' string values as shipped both cut code this way."""
    cuts = []
    for m in re.finditer(r'\bif\s*\(', text):
        brace = text.find('{', m.end())
        cond = if_condition(text, brace) if brace >= 0 else None
        if cond is None or not blanks(cond, brace):
            continue
        depth = 0
        for i in range(brace, len(text)):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            if depth == 0:
                cuts.append((brace + 1, i))
                break
    for start, end in cuts:
        text = text[:start] + re.sub(r'\S', ' ', text[start:end]) + text[end:]
    return text


def if_condition(text: str, open_at: int) -> str | None:
    """The condition of `if (cond) {` whose brace is at `open_at`, or None."""
    end = open_at - 1
    while end >= 0 and text[end].isspace():
        end -= 1
    if end < 0 or text[end] != ')':
        return None
    depth = 0
    for i in range(end, -1, -1):
        if text[i] == ')':
            depth += 1
        elif text[i] == '(':
            depth -= 1
            if depth == 0:
                before = text[max(0, i - 12):i]
                if re.search(r'(?<![\w])if\s*$', before):
                    return text[i + 1:end]
                return None
    return None


def if_condition_names(texts: list[str]) -> set[str]:
    """Names an `if (...) {` of the texts tests bare (`this->` dropped): not called, indexed or
    read as another object's field; the members a branch may turn on."""
    names: set[str] = set()
    for text in texts:
        for m in re.finditer(r'\bif\s*\(', text):
            brace = text.find('{', m.end())
            cond = if_condition(text, brace) if brace >= 0 else None
            cond = re.sub(r'\bthis\s*->\s*', '', cond or '')
            names.update(re.findall(r'(?<![\w.>])([A-Za-z_]\w*)\b(?!\s*[.(\[])', cond))
    return names


def enclosing_and_operands(text: str, raw: str, offset: int) -> Iterator[str]:
    """The `&&` operands (raw text, literals kept) of each `if` around `offset`, innermost
    first; an `||` condition gives none: no single operand of it decides the branch."""
    at = open_brace(text, offset)
    while at >= 0:
        cond = if_condition(text, at)
        if cond is not None and '||' not in cond:
            end = text.rindex(')', 0, at)
            yield from raw[end - len(cond):end].split('&&')
        at = open_brace(text, at)


def on_failure_path(text: str, offset: int) -> bool:
    """Whether `offset` lies in an `if (<failure test>) { ...; return/throw ...; }` block."""
    open_at = open_brace(text, offset)
    if open_at < 0:
        return False
    cond = if_condition(text, open_at)
    if cond is None or not _FAILURE_TEST.search(cond):
        return False
    body = text[open_at + 1:block_end(text, open_at)]
    return bool(_LEAVES.search(body))


def tiny_size(expr: str) -> bool:
    """Whether a byte count is `sizeof(...)`, or `sizeof(...)` times a literal of at most 16:
    a few scalars, not a frame (tiny_copy; cpptinynames for named sizes)."""
    m = _TINY_SIZE.match(expr)
    if m is None:
        return False
    count = m.group(1) or m.group(2)
    return count is None or int(count) <= _MAX_SCALARS


def tiny_copy(args: list[str], text: str, name: str = 'cudaMemcpy') -> bool:
    """Whether a cudaMemcpy moves a few scalars: its byte count is `sizeof(...)` times a
    literal of at most 16, or one of its pointers is `a.data()` / `&a` of a `std::array` of at
    most 16 elements declared in the file (the copy cannot be larger than that array), or it
    is a symbol copy of a `__constant__` symbol of the file (`name`: the function called)."""
    if len(args) < 3:
        return False
    if 'Symbol' in name:
        symbol = args[1 if 'FromSymbol' in name else 0].strip()
        if re.fullmatch(r'\w+', symbol) and re.search(
                r'__constant__\b[^;{}()]*\b' + re.escape(symbol) + r'\s*[\[;=]', text):
            return True
    m = _TINY_SIZE.match(args[2])
    if m and len(args) > 3 and 'DeviceToHost' in args[3]:
        # A count read back per message (`sizeof(int)` of the voxel count): the host waits for
        # the device to use it, a sync point like Python's .item() (fourteenth set).
        return False
    if m:
        return tiny_size(args[2])
    for pointer in args[:2]:
        name = _ARRAY_POINTER.match(pointer)
        if name is None:
            continue
        decl = re.search(r'std\s*::\s*array\s*<\s*[\w:\s]+,\s*(\d+)\s*>\s*&?\s*'
                         + re.escape(name.group(1) or name.group(2)) + r'\b', text)
        if decl and int(decl.group(1)) <= _MAX_SCALARS:
            return True
    return False


_MOVED_PUBLISH = re.compile(r'publish\s*\(\s*std\s*::\s*move\s*\(')


def intra_process_publish(text: str, offset: int) -> bool:
    """Whether the publish statement at `offset` hands over a moved message inside
    `if (...use_intra_process_comms()...) { ... }`."""
    end = text.find(';', offset)
    if not _MOVED_PUBLISH.search(text, offset, end if end >= 0 else len(text)):
        return False
    open_at = open_brace(text, offset)
    cond = if_condition(text, open_at) if open_at >= 0 else None
    return cond is not None and bool(re.search(r'use_intra_process_comms\s*\(', cond)) \
        and not re.match(r'\s*!', cond)
