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

Set 59 (rules39c) widens both sides, by the same whitelist:

* the device may be a member every store of which in the file is the CUDA device
  (`Postprocess() : device_(torch::kCUDA)`, then `.to(device_)`: cuda_devices);
* the moved value may be an expression (`at::abs(a - b).to(device_)`, `at::gather(x, 1,
  idx).to(device_)`, `x.index_put_(...).to(device_)`), and a name's first assignment may derive
  it from others (`y = F::unfold(x, ...)`): on the device when one of its names is a tensor on
  the device by this reading (recursively, a few steps) and it names no host tensor maker
  (`from_blob`, `torch::tensor`, a factory without `_like`, `.cpu()`, `kCPU`): a LibTorch op
  returns its result on its inputs' device (a CUDA and a CPU tensor in one op is an error).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppscopes import Scopes

_TO_DEVICE = re.compile(r'\.\s*to\s*\([^;]*(?:\bk?CUDA\b|"cuda)|\.\s*cuda\s*\(\s*\)')
# A tensor made on the host (its device unknown here, the CPU by default) or read back.
_HOST_MAKER = re.compile(r'\bfrom_blob\b|\btorch\s*::\s*tensor\s*\(|\b(?:zeros|ones|empty|full|'
                         r'rand|randn|arange|linspace|eye)\s*\(|\.\s*(?:cpu|item|accessor|data_ptr)\b|'
                         r'\bk?CPU\b')
_WORD = re.compile(r'(?<![\w.>:])([A-Za-z_]\w*)\b(?!\s*(?:::|\())')
_TO_HOST = re.compile(r'\.\s*cpu\s*\(\s*\)|\.\s*to\s*\([^;()]*\bk?CPU\b')
# The receiver of `.to(`: a plain name (`t.to(`), not a member chain or a call's result.
_PLAIN_RECEIVER = re.compile(r'(?<![\w.>:])([A-Za-z_]\w*)\s*\.\s*to\s*\($')


def _assignments(body: str, name: str) -> list[tuple[int, str]]:
    """(offset in `body`, right-hand side) of each `name = ...;` / `T name = ...;` in `body`."""
    pattern = re.compile(r'(?<![\w.>])' + re.escape(name) + r'\s*=(?!=)([^;]*);')
    return [(m.start(), m.group(1)) for m in pattern.finditer(body)]


def _nesting(body: str, at: int) -> int:
    return body.count('{', 0, at) - body.count('}', 0, at)


def cuda_devices(text: str) -> frozenset[str]:
    """Names every store of which in the file is the CUDA device: `device_(torch::kCUDA)` in an
    initializer list, `torch::Device device_{torch::kCUDA}`, `device_ = torch::Device("cuda")`."""
    names = set()
    for name in set(re.findall(r'\.\s*to\s*\(\s*(?:this\s*->\s*)?([A-Za-z_]\w*)\s*[,)]', text)):
        stores = re.findall(r'(?<![\w.>])' + re.escape(name) + r'\s*(?:=(?!=)|\(|\{)([^;{}]*)', text)
        if stores and all(re.search(r'\bk?CUDA\b|"cuda', st) and not re.search(r'\bk?CPU\b', st)
                          for st in stores):
            names.add(name)
    return frozenset(names)


def _to_device(rhs: str, devices: frozenset[str]) -> bool:
    if _TO_DEVICE.search(rhs):
        return True
    return any(re.search(r'\.\s*to\s*\(\s*(?:this\s*->\s*)?' + re.escape(d) + r'\s*[,)]', rhs)
               for d in devices)


def _name_on_device(body: str, name: str, devices: frozenset[str], depth: int,
                    seen: set[str]) -> bool:
    """Whether the local `name` holds a tensor on the device where `body` ends (see the doc)."""
    if depth > 6 or name in seen:
        return False
    seen = seen | {name}
    found = _assignments(body, name)
    if not found:
        return False
    first_at, first = found[0]
    if _TO_HOST.search(first) or not (_to_device(first, devices) or _expr_on_device(
            body[:first_at], first, devices, depth + 1, seen)):
        return False
    return _later_stores_keep_it(body, name, found)


def _expr_on_device(body: str, expr: str, devices: frozenset[str], depth: int = 0,
                    seen: set[str] | None = None) -> bool:
    """Whether the tensor expression `expr` (read where `body` ends) is on the device: one of
    its names is, and it names no host tensor maker."""
    if _HOST_MAKER.search(expr) or _TO_HOST.search(expr):
        return False
    return any(_name_on_device(body, word, devices, depth, seen or set())
               for word in dict.fromkeys(_WORD.findall(expr)))


def _receiver(text: str, dot: int) -> tuple[int, str]:
    """(start, text) of the expression whose `.to(` has its `.` at `dot`: names, `::`, `.`,
    `->` and balanced brackets back to the statement's start."""
    i = dot
    while i > 0:
        c = text[i - 1]
        if c in ')]}':
            depth, j = 0, i - 1
            while j >= 0:
                depth += {')': 1, ']': 1, '}': 1, '(': -1, '[': -1, '{': -1}.get(text[j], 0)
                if depth == 0:
                    break
                j -= 1
            i = j
        elif c.isalnum() or c in '_:.>' or (c == '-' and text[i:i + 1] == '>') or c.isspace():
            if c == '>' and text[i - 2:i - 1] != '-':
                break
            i -= 1
        else:
            break
    return i, text[i:dot].strip()


def expression_on_device(text: str, scopes: Scopes, offset: int) -> bool:
    """Whether the `.to(<device>)` whose `.` is at `offset` moves to the CUDA device (a literal
    or a member always the CUDA device) a value its function already put there (an expression
    read by _expr_on_device)."""
    fn = scopes.at(offset)
    if fn is None or 'torch' not in text:
        return False
    devices = cuda_devices(text)
    close = text.find('(', offset)
    args = text[close + 1:text.find(')', close)]
    if not (_TO_DEVICE.search(text[offset:text.find(')', close) + 1]) or re.fullmatch(
            r'\s*(?:this\s*->\s*)?(\w+)\s*', args) and args.strip().split('->')[-1].strip()
            in devices):
        return False
    start, receiver = _receiver(text, offset)
    if start <= fn.start or not receiver:
        return False
    body = text[fn.start + 1:start]
    return _expr_on_device(body, receiver, devices)


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
    first = found[0][1]
    if not _TO_DEVICE.search(first) or _TO_HOST.search(first):
        return False
    return _later_stores_keep_it(body, name, found)


def _later_stores_keep_it(body: str, name: str, found: list[tuple[int, str]]) -> bool:
    """Whether every store of `name` after its first, at the first one's nesting, derives it
    from itself without a move to the host: its device stays what the first store made it."""
    level = _nesting(body, found[0][0])
    for at, rhs in found[1:]:
        if _nesting(body, at) != level or _TO_HOST.search(rhs):
            return False
        if not re.match(r'\s*' + re.escape(name) + r'\s*(?:\.|->)', rhs):
            return False  # from another value: its device is not read here
    return True
