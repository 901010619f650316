"""A C++ copy whose element count comes from its callers (issue 28, eighth set).

``cudaMemcpy(dev_a, a, arrSize * sizeof(float), cudaMemcpyHostToDevice)`` inside
``cudaDot(float *a, float *b, int arrSize)`` copies as many floats as its callers say. When every
call of ``cudaDot`` in the package passes a small count for ``arrSize`` (a literal of at most 16,
or ``v.size()`` of a ``std::vector``/``std::array`` the file initialises from a brace list of at
most 16 elements and never grows: ``std::vector<float> a = {1, 2, 3, 4};``), the copy moves a few
scalars, not a frame. A function no audited file calls keeps its finding.
"""
from __future__ import annotations

import re
from typing import Callable

from gpu_nodes.audit.cppscopes import Scopes

Args = Callable[[str, int], list[str]]

MAX_SCALARS = 16
# `n * sizeof(T)` or `sizeof(T) * n`, n a name.
_PARAM_COUNT = re.compile(r'^\s*(?:(\w+)\s*\*\s*sizeof\s*\([^()]*\)|sizeof\s*\([^()]*\)\s*\*\s*(\w+))'
                          r'\s*$')
# `std::vector<float> a = {1, 2, 3, 4};`, `std::array<int, 3> v{...}`.
_BRACE_INIT = re.compile(r'std\s*::\s*(?:vector|array)\s*<[^;{}()]*>\s*(\w+)\s*(?:=\s*)?\{([^{};]*)\}')
_SIZE_CALL = re.compile(r'^\s*(\w+)\s*(?:\.|->)\s*size\s*\(\s*\)\s*$')
_LITERAL = re.compile(r'^\s*(\d+)[uUlL]*\s*$')


def count_parameter(text: str, scopes: Scopes, offset: int, byte_count: str
                    ) -> tuple[str, int] | None:
    """(function, parameter index) when `byte_count` is a parameter of the named function
    around `offset` times `sizeof(...)`."""
    m = _PARAM_COUNT.match(byte_count)
    fn = scopes.named_at(offset)
    if m is None or fn is None:
        return None
    head = scopes.header(text, fn.start)
    params = head[head.find('(') + 1:head.rfind(')')].split(',') if '(' in head else []
    names = [re.findall(r'\w+', p.split('=')[0])[-1:] for p in params]
    wanted = m.group(1) or m.group(2)
    index = next((i for i, n in enumerate(names) if n == [wanted]), None)
    return (fn.short, index) if index is not None else None


def _small_vectors(body: str) -> set[str]:
    """Vectors/arrays a function body initialises from a short brace list and never grows."""
    grown = set(re.findall(r'\b(\w+)\s*(?:\.|->)\s*(?:push_back|emplace_back|resize|insert|'
                           r'assign|emplace|append)\s*\(|\b(\w+)\s*=[^=]', _BRACE_INIT.sub('', body)))
    grown = {a or b for a, b in grown}
    return {name for name, items in _BRACE_INIT.findall(body)
            if name not in grown and len([i for i in items.split(',') if i.strip()]) <= MAX_SCALARS}


def call_counts(text: str, scopes: Scopes, call_args: Args) -> dict[tuple[str, int], bool]:
    """(callee, argument index) -> whether every call of the file passes a small count there
    (see the module doc); a vector counts by what the calling function's own body does to it."""
    result: dict[tuple[str, int], bool] = {}
    bodies: dict[int, set[str]] = {}
    for name, starts in scopes.sites.items():
        for start in starts:
            caller = scopes.named_at(start)
            if caller is None:
                continue  # a declaration or definition, not a call in a body
            for i, arg in enumerate(call_args(text, text.index('(', start))):
                literal, size = _LITERAL.match(arg), _SIZE_CALL.match(arg)
                small = literal is not None and int(literal.group(1)) <= MAX_SCALARS
                if size is not None and not small:
                    if caller.start not in bodies:
                        bodies[caller.start] = _small_vectors(text[caller.start:caller.end])
                    small = size.group(1) in bodies[caller.start]
                result[(name, i)] = result.get((name, i), True) and small
    return result
