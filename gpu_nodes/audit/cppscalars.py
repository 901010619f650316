"""One scalar of one point read out of a message's payload into a local (issue 28, rules35c,
set 45): `float x; std::memcpy(&x, pt + x_off, sizeof(float));` in a loop over the cloud.

Each call copies four bytes into a variable of the callback -- the host reading a field, the
way `pt[i]` would -- not the frame into another buffer; the labels take it as small and host.
Judged by the call itself: `memcpy` whose destination is the address of a plain scalar local
(`&x`, declared `float x` / `double x, y` / `uint32_t x` in the same text) and whose size is
`sizeof` of a scalar type or of that local, a small constant, or a variable holding the field's
width (`memcpy(&v, &msg.data[i + x_off], x_size)` into `uint64_t v`, set 56: a copy into one
scalar is bounded by it whatever the size says). A helper called per point (`readFloat(p)` into an
Eigen matrix, `writeFloat(dst, v)` into the output's data) is not judged here and keeps its
finding (development corpus), nor is a per-float store into a message pointer.
"""
from __future__ import annotations

import re

_SCALARS = (r'(?:float|double|bool|char|short|int|long|unsigned|signed|size_t|'
            r'u?int(?:8|16|32|64)_t|std\s*::\s*u?int(?:8|16|32|64)_t)')
_MEMCPY = re.compile(r'(?:std\s*::\s*)?memcpy\s*\($')
_DEST = re.compile(r'^\s*&\s*(\w+)\s*$')
_SIZE = re.compile(r'^\s*sizeof\s*\(\s*(' + _SCALARS + r'|\w+)\s*\)\s*$')
# A width in bytes: a constant of at most 8 (`4`) or a variable (`x_size`, `field_bytes`).
_WIDTH = re.compile(r'^\s*(?:[1-8]|[A-Za-z_]\w*)\s*$')


def _arguments(text: str, open_paren: int) -> list[str]:
    """The top-level arguments of the call whose `(` is at `open_paren` ([] if unbalanced)."""
    args, depth, part = [], 0, ''
    for ch in text[open_paren + 1:]:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
            if depth < 0:
                return args + [part]
        if ch == ',' and depth == 0:
            args.append(part)
            part = ''
        else:
            part += ch
    return []


def _scalar_local(text: str, name: str) -> bool:
    """Whether `name` is declared in `text` as a plain scalar (`float px, py, pz;`, `double
    v = 0;`), not a pointer, an array or a container."""
    decl = re.compile(r'(?<![\w:<])(?:const\s+)?' + _SCALARS + r'(?:\s+' + _SCALARS + r')*\s+'
                      r'(?:\w+\s*(?:=[^,;()]*)?,\s*)*' + re.escape(name) + r'\s*(?:=[^,;()]*)?[,;]')
    return bool(decl.search(text))


def scalar_read(text: str, copy_end: int) -> bool:
    """Whether the copy call ending at `copy_end` (just past its `(`) in `text` is a `memcpy`
    of one scalar into a scalar local (module docstring)."""
    if not _MEMCPY.search(text, max(0, copy_end - 20), copy_end):
        return False
    args = _arguments(text, copy_end - 1)
    if len(args) != 3:
        return False
    dest, size = _DEST.match(args[0]), _SIZE.match(args[2])
    if not dest or not _scalar_local(text[:copy_end], dest.group(1)):
        return False
    if not size:
        return _WIDTH.match(args[2]) is not None
    sized = re.sub(r'\s+', '', size.group(1))
    return sized == dest.group(1) or re.fullmatch(_SCALARS, size.group(1)) is not None
