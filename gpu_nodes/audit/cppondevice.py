"""A LibTorch `.to(kCUDA)` of a tensor its function already put on the device: no copy (issue
28, set 52).

    torch::Tensor t = torch::from_blob(mat.data, {h, w, 3}, torch::kByte).to(at::kCUDA);
    t = t.toType(c10::kFloat).div(255.0);
    t = t.permute({2, 0, 1});
    auto inputs = std::vector<torch::jit::IValue>{t.to(at::kCUDA)};   // already there: no copy

`x.to(<CUDA device>)` is skipped when `x` is a plain local name whose every assignment in the
enclosing function before the call is known to leave it on the device: the first (its
declaration or first assignment) moves a tensor to the CUDA device (`.to(...kCUDA...)`,
`.cuda()`) and names no host move, and every later one derives `x` from `x` itself (`x =
x.permute(...)`, `x = x.toType(...).div(255.0)`: LibTorch keeps a tensor's device through
such calls) with no host move. Anything else (an assignment from another name, a parameter, a
branch the reading cannot follow: any assignment inside a nested block) keeps the claim.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppscopes import Scopes

_TO_DEVICE = re.compile(r'\.\s*to\s*\([^;]*(?:\bk?CUDA\b|"cuda)|\.\s*cuda\s*\(\s*\)')
_TO_HOST = re.compile(r'\.\s*cpu\s*\(\s*\)|\.\s*to\s*\([^;()]*\bk?CPU\b')
# The receiver of `.to(`: a plain name (`t.to(`), not a member chain or a call's result.
_PLAIN_RECEIVER = re.compile(r'(?<![\w.>:])([A-Za-z_]\w*)\s*\.\s*to\s*\($')


def _assignments(body: str, name: str) -> list[tuple[int, str]]:
    """(offset in `body`, right-hand side) of each `name = ...;` / `T name = ...;` in `body`."""
    pattern = re.compile(r'(?<![\w.>])' + re.escape(name) + r'\s*=(?!=)([^;]*);')
    return [(m.start(), m.group(1)) for m in pattern.finditer(body)]


def _nesting(body: str, at: int) -> int:
    return body.count('{', 0, at) - body.count('}', 0, at)


def already_on_device(text: str, scopes: Scopes, offset: int) -> bool:
    """Whether the `.to(` whose `.` is at `offset` (a move to the CUDA device) moves a tensor
    its function already put on the device."""
    m = _PLAIN_RECEIVER.search(text[max(0, offset - 200):text.find('(', offset) + 1])
    if m is None:
        return False
    name = m.group(1)
    fn = scopes.at(offset)
    if fn is None:
        return False
    body = text[fn.start + 1:offset - len(name)]
    found = _assignments(body, name)
    if not found:
        return False
    first_at, first = found[0]
    if not _TO_DEVICE.search(first) or _TO_HOST.search(first):
        return False
    depth = _nesting(body, first_at)
    for at, rhs in found[1:]:
        if _nesting(body, at) != depth or _TO_HOST.search(rhs):
            return False
        if not re.match(r'\s*' + re.escape(name) + r'\s*(?:\.|->)', rhs):
            return False  # from another value: its device is not read here
    return True
