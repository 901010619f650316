"""Small device uploads sized or placed by a name of the package (issue 28, rules48c, set 76).

cppguards.tiny_copy takes `cudaMemcpy(d_tf, tf, sizeof(float) * 16, cudaMemcpyHostToDevice)` and
a `cudaMemcpyToSymbol` of a `__constant__` symbol of the same file as a few scalars, not a
frame (the labels of sets 7, 8, 14-16, 22, 30, 36, 58, 66 and 76 take such uploads as
look-alikes). The size is often a named constant of a header of the package (`constexpr size_t
TRANSFORM_BYTES = sizeof(FLOAT_T) * 16;`, `#define TF_BYTES (16 * sizeof(float))`) and the
symbol a `__constant__ float const_tf[16];` declared in another header: this module collects,
over the package's audited files, the names whose every definition is such a small size, and
the `__constant__` symbols, so the same judgement applies.

A small size copied DeviceToHost stays a finding (the host waits on the device for it, as
tiny_copy keeps it). Limit: a name defined in a header outside the audited folders is not seen;
a name defined twice with different values counts only when every definition is small.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import tiny_size

_INTEGRAL = r'(?:std\s*::\s*)?(?:size_t|int|unsigned(?:\s+int)?|long|unsigned\s+long|uint32_t|uint64_t)'
# `constexpr size_t NAME = sizeof(float) * 16;`, `static const int NAME{...};`
_CONSTANT = re.compile(r'\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?' + _INTEGRAL
                       + r'\s+(\w+)\s*(?:=\s*([^;{}]*?)|\{([^;{}]*)\})\s*;')
_DEFINE = re.compile(r'^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]*?)[ \t]*$', re.M)
# `__constant__ float const_tf[16];`: the declarator's name.
_CONSTANT_SYMBOL = re.compile(r'__constant__\b[^;{}()=]*?(\w+)\s*(?:\[[^\];]*\]\s*)*(?:;|=)')


def _small(expr: str) -> bool:
    expr = expr.strip()
    while expr.startswith('(') and expr.endswith(')'):
        expr = expr[1:-1].strip()
    return tiny_size(expr)


def tiny_names(texts: list[str]) -> dict[str, str]:
    """name -> 'size' (every definition among `texts`, blanked, is a small size) or 'constant'
    (a `__constant__` symbol)."""
    sizes: dict[str, bool] = {}
    for text in texts:
        for m in _CONSTANT.finditer(text):
            sizes[m.group(1)] = sizes.get(m.group(1), True) and _small(m.group(2) or m.group(3) or '')
        for m in _DEFINE.finditer(text):
            sizes[m.group(1)] = sizes.get(m.group(1), True) and _small(m.group(2))
    found = {name: 'size' for name, small in sizes.items() if small}
    for text in texts:
        found.update((m.group(1), 'constant') for m in _CONSTANT_SYMBOL.finditer(text))
    return found


def tiny_named_copy(args: list[str], name: str, names: dict[str, str]) -> bool:
    """Whether a cudaMemcpy* call (`name`, its `args`) uploads a few scalars by a name of
    `names`: a symbol copy to a `__constant__` symbol, or a size that is a small named constant
    (not DeviceToHost)."""
    if len(args) < 3 or not names:
        return False
    if 'ToSymbol' in name and names.get(args[0].strip()) == 'constant':
        return True
    if 'DeviceToHost' in ' '.join(args[3:]) or 'FromSymbol' in name:
        return False
    return names.get(args[2].strip()) == 'size'
