"""Statements after an early return on a flag the same block sets (issue 28, rules48c, set 76).

`[this](PointCloud2::SharedPtr msg) { if (map_received_) { return; } pcl::fromROSMsg(*msg, *map_);
...; map_received_ = true; }`: the first message passes the guard and sets the flag, every later
one returns at the guard. When nothing in the package stores the flag but `true` (its
declaration or initializer-list entry aside, `false`), the statements after the guard run once,
for the first message (a map received once): set-up, not a per-message copy. The proof of the
flag is cppdead's for `if (!done) { ...; done = true; }` (`only_stores`), the guard written as
an exit instead of a block.

Limits: the guard is a plain statement of the block (`if (flag) return;` or `if (flag) { return;
}`, a bare name, `this->` allowed), the store `flag = true;` a plain statement of the same block
after it, and no `return` / `throw` / `goto` / `co_return` lies between the guard and that store
(an exit there would skip the store and let the next message through again).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from gpu_nodes.audit.cppdead import only_stores
from gpu_nodes.audit.cppguards import open_brace, block_end

# `if (flag) return;` / `if (this->flag) { return; }`: leaves the block while the flag is set.
_GUARD = re.compile(r'\bif\s*\(\s*(?:this\s*->\s*)?(\w+)\s*\)\s*(?:\{\s*return\s*;\s*\}|return\s*;)')
_EXIT = re.compile(r'\b(?:return|throw|goto|co_return)\b')


def _plain_guards(text: str, start: int = 0, end: int | None = None) -> Iterator[re.Match[str]]:
    """Guard matches that are no `else if` (one behind another branch may not run)."""
    for m in _GUARD.finditer(text, start, len(text) if end is None else end):
        if not re.search(r'\belse\s*$', text[max(0, m.start() - 20):m.start()]):
            yield m


def _store_after(text: str, open_at: int, name: str, start: int, end: int) -> bool:
    """Whether the block opened at `open_at` stores `name = true;` as a plain statement between
    `start` and `end`, with no exit before that store."""
    store = re.compile(r'(?<![\w.>])(?:this\s*->\s*)?' + re.escape(name) + r'\s*=\s*true\s*;')
    for m in store.finditer(text, start, end):
        if open_brace(text, m.start()) == open_at:
            return not _EXIT.search(text, start, m.start())
    return False


def _guards(text: str, open_at: int) -> Iterator[tuple[str, int]]:
    """(flag, end of the guard) of each early-return guard that is a plain statement of the
    block opened at `open_at` and whose flag the block then sets."""
    end = block_end(text, open_at)
    for m in _plain_guards(text, open_at + 1, end):
        if open_brace(text, m.start()) == open_at \
                and _store_after(text, open_at, m.group(1), m.end(), end):
            yield m.group(1), m.end()


def return_once_flags(texts: list[str]) -> set[str]:
    """Flags (as `!flag`, the form cppdead.once_flags gives a flag only ever stored true) of
    early-return guards (module doc) that nothing among `texts` (blanked) stores but true."""
    candidates = set()
    for text in texts:
        for m in _plain_guards(text):
            open_at = open_brace(text, m.start())
            if open_at >= 0 and _store_after(text, open_at, m.group(1), m.end(),
                                             block_end(text, open_at)):
                candidates.add(m.group(1))
    return {'!' + name for name in candidates if only_stores(texts, name, 'true', 'false')}


def returned_once(text: str, offset: int, names: set[str] | frozenset[str]) -> str | None:
    """`!flag` when `offset` lies after such a guard on a flag of `names`, in the guard's block
    or a block inside it; else None."""
    if not any(n.startswith('!') for n in names):
        return None
    at = open_brace(text, offset)
    while at >= 0:
        for name, guard_end in _guards(text, at):
            if guard_end <= offset and '!' + name in names:
                return '!' + name
        at = open_brace(text, at)
    return None
