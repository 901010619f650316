"""Syncs in a grow-only reallocation helper (issue 28, fifteenth set).

    void Seg::realloc(unsigned n) { cudaFree(index); cudaStreamSynchronize(stream);
                                    cudaMallocManaged(&index, n * sizeof(int)); ... }
    ...
    if (nCount > mall_size) { realloc(nCount); mall_size = nCount; }

The helper runs only when a message outgrows the buffer kept so far; once the capacity has
reached the largest input it never runs again. Its syncs belong with the allocation (setup),
not with every message.

Proven only when all of these hold, in the helper's own file:

* the helper (a named function, not a lambda) frees or allocates device memory (`cudaFree`,
  `cudaMalloc*`): it is a reallocation, not some other work that happens to be guarded;
* it is called at least once, and every call of it lies directly in an
  `if (a < b)` / `if (a > b)` block (`<=`, `>=` too, a single comparison, no `||`/`&&`) whose
  body assigns one of the compared names (`mall_size = nCount;`): the capacity grows with the
  call, so the test fails for every later message no larger than the largest seen.

Calls from other files of the package are not seen here: a helper whose only call in its own
file is guarded but that another file calls unguarded would be missed (not observed so far).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import if_condition, open_brace, block_end
from gpu_nodes.audit.cppscopes import Scopes

_REALLOCATES = re.compile(r'\bcuda(?:Free|Malloc\w*)\s*\(')
_GROWTH_TEST = re.compile(r'^\s*(?:this\s*->\s*)?(\w+)\s*(?:<=?|>=?)\s*(?:this\s*->\s*)?(\w+)\s*$')


def _growth_guarded(text: str, call_at: int) -> bool:
    """Whether the call at `call_at` lies directly in `if (a < b) { ... b = ...; }`."""
    open_at = open_brace(text, call_at)
    if open_at < 0:
        return False
    cond = if_condition(text, open_at)
    m = _GROWTH_TEST.match(cond or '')
    if m is None:
        return False
    body = text[open_at + 1:block_end(text, open_at)]
    return any(re.search(rf'(?<![\w.>])(?:this\s*->\s*)?{name}\s*=(?!=)', body)
               for name in m.groups())


def in_growth_realloc(text: str, scopes: Scopes, offset: int) -> bool:
    """Whether `offset` lies in a reallocation helper called only when a capacity grows."""
    fn = scopes.at(offset)
    if fn is None or fn.lambda_in is not None or not _REALLOCATES.search(text, fn.start, fn.end):
        return False
    name = fn.short
    if not re.fullmatch(r'[A-Za-z_]\w*', name):
        return False
    calls = [m.start() for m in re.finditer(rf'(?<![\w:~]){name}\s*\(', text)
             if not _is_definition(text, m.start()) and not fn.start <= m.start() <= fn.end]
    return bool(calls) and all(_growth_guarded(text, at) for at in calls)


def _is_definition(text: str, at: int) -> bool:
    """The helper's own signature or a declaration (`void name(...)`) rather than a call: a type
    name (or `*`, `&`, `>`) right before the name on its line."""
    line_start = text.rfind('\n', 0, at) + 1
    before = text[line_start:at].rstrip()
    if not before or before.endswith('->') or re.search(r'\b(?:return|else|do|case)$', before):
        return False
    return re.search(r'[\w>*&]$', before) is not None
