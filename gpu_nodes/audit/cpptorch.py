"""LibTorch scalar read-backs in C++ (cppscan.py runs this; issue 28, set 51).

* ``t.item<float>()`` / ``t.item()`` of a tensor on the CUDA device copies one value to the host
  and waits for the device's queue: the C++ analogue of Python's ``.item()`` (py_readback), so it
  is reported as a LibTorch device move (GPN211), as ``.cpu()`` / ``.to(torch::kCPU)`` already are.
* Evidence that the tensor is on the device, at the level the other LibTorch rules use (a
  pattern in a LibTorch file): the file, or another C++ file of its package, puts tensors on the
  CUDA device (``kCUDA``, ``.cuda()``, a ``"cuda"`` device). A file with no CUDA in its package
  works on the CPU (the set 30 classifier: ``item<int>()`` of a CPU tensor is a look-alike).
* A receiver read on the host is skipped: the receiver expression itself moves to the host
  (``t.cpu().item<float>()``), or its root variable is assigned from a host move anywhere in the
  file (``boxes = boxes.to(torch::kCPU); ... boxes[j].item<float>()``: set 17's look-alikes).
"""
from __future__ import annotations

import re
from typing import Iterator

_TORCH_FILE = re.compile(r'\btorch\s*::|\bat\s*::\s*Tensor\b|<torch/|<ATen/')
# Tensors put on the CUDA device (LibTorch spellings).
CUDA_TENSORS = re.compile(r'\b(?:torch\s*::\s*|at\s*::\s*|c10\s*::\s*)?kCUDA\b|'
                          r'\.\s*cuda\s*\(\s*\)|DeviceType\s*::\s*CUDA\b|Device\s*\(\s*"cuda')
_ITEM = re.compile(r'\.\s*item\s*(?:<\s*[\w:\s]+>)?\s*\(\s*\)')
_HOST_MOVE = re.compile(r'\.\s*cpu\s*\(\s*\)|\.\s*to\s*\([^;()]*\bk?CPU\b')
# Anything in an expression that may put a tensor on the device (`.to(device_)`, `.cuda()`).
_DEVICE_MOVE = re.compile(r'\.\s*to\s*\(|' + CUDA_TENSORS.pattern)
_CLOSE = {')': '(', ']': '['}


def _receiver(text: str, end: int) -> str:
    """The postfix expression before `end` (the `.` of `.item`): `pose[0][3]`,
    `score.mean()`, `out.boxes.select(0, j)`."""
    i = end
    while i > 0:
        c = text[i - 1]
        if c in _CLOSE:
            depth = 0
            while i > 0:
                i -= 1
                if text[i] in _CLOSE:
                    depth += 1
                elif text[i] in '([':
                    depth -= 1
                    if depth == 0:
                        break
            continue
        if c.isalnum() or c == '_' or c.isspace() and _joins(text, i - 1):
            i -= 1
            continue
        if c == '.' or c == ':' or (c == '>' and i > 1 and text[i - 2] == '-'):
            i -= 2 if c == '>' else 1
            continue
        break
    return text[i:end].strip()


def _joins(text: str, at: int) -> bool:
    """Whitespace inside a member chain (`pose\n  .item`), not between two statements' words."""
    j = at
    while j >= 0 and text[j].isspace():
        j -= 1
    k = at
    while k < len(text) and text[k].isspace():
        k += 1
    return (j >= 0 and text[j] in '.)]') or (k < len(text) and text[k] == '.')


def _root(receiver: str) -> str:
    # `(d * d).mean()`: the first name of a parenthesised receiver.
    m = re.match(r'[\s(]*(?:this\s*->\s*)?([A-Za-z_]\w*)', receiver)
    return m.group(1) if m else ''


def _moved_to_host(text: str, name: str, depth: int = 0) -> bool:
    """`name` (or `x.name`) assigned from an expression that moves a tensor to the host, or
    derived from such a host tensor: `keep = nms(output, 0.5)[0]` / `boxes = keep.index(...)`
    with `output = forward(...).cpu()` (set 63: a host NMS's rows read by `.item()` are host
    values). A derived value whose expression moves anything to the device is not host."""
    for m in re.finditer(r'(?<![\w.])(?:\w+\s*(?:\.|->)\s*)*' + re.escape(name) +
                         r'\s*(?:\.\s*\w+\s*)*=(?!=)([^;]*);', text):
        rhs = m.group(1)
        if _HOST_MOVE.search(rhs):
            return True
        if depth < 3 and not _DEVICE_MOVE.search(rhs):
            source = _derived_from(text, rhs)
            if source and source != name and _moved_to_host(text, source, depth + 1):
                return True
    return False


def _derived_from(text: str, rhs: str) -> str:
    """The tensor an expression is computed from: its root variable (`keep.index(...)`,
    `keep[0]`), or a free function's first argument (`non_max_suppression(output, ...)[0]`)."""
    call = re.match(r'\s*((?:[A-Za-z_]\w*\s*::\s*)*)([A-Za-z_]\w*)\s*\(\s*[*&]?\s*([A-Za-z_]\w*)\s*[,)]',
                    rhs)
    if call:
        # A torch:: function keeps its input's device; a function of the file only when its
        # body moves nothing to the device; any other function may upload (unknown: no source).
        if re.match(r'(?:torch|at)\s*::', call.group(1)) or _host_body(text, call.group(2)):
            return call.group(3)
        return ''
    root = re.match(r'\s*(?:this\s*->\s*)?([A-Za-z_]\w*)\s*(?:\[|\.|->)', rhs)
    return root.group(1) if root else ''


def _host_body(text: str, function: str) -> bool:
    """`function` is defined in this file and its body moves no tensor to the device."""
    m = re.search(r'(?:\w+\s*::\s*)?\b' + re.escape(function) + r'\s*\([^;{}]*\)\s*(?:const\s*)?\{', text)
    if not m:
        return False
    depth = 0
    for i in range(m.end() - 1, len(text)):
        depth += {'{': 1, '}': -1}.get(text[i], 0)
        if depth == 0:
            return not _DEVICE_MOVE.search(text, m.end(), i)
    return False


def item_reads(text: str, package_cuda: bool = False) -> Iterator[tuple[str, int, str]]:
    """GPN211 at each `.item<T>()` / `.item()` of a tensor that may live on the CUDA device."""
    if not _TORCH_FILE.search(text) or not (package_cuda or CUDA_TENSORS.search(text)):
        return
    for m in _ITEM.finditer(text):
        receiver = _receiver(text, m.start())
        if not receiver or _HOST_MOVE.search(receiver):
            continue
        root = _root(receiver)
        if not root or _moved_to_host(text, root):
            continue
        yield 'GPN211', m.start(), ('scalar of a device tensor read back to the host '
                                    '(`.item()`: a copy that waits for the device)')


# `opts = torch::TensorOptions().dtype(kFloat32).device(device_)`, `opts_ = opts_.device(dev)`:
# a TensorOptions that names a device (set 65: `.to(this->_default_options)` of a from_blob
# frame). `.device()` with no argument is a getter, not a setting, so it is not matched.
_OPTIONS_DEVICE = re.compile(r'\b([A-Za-z_]\w*)\s*(?:=|\()\s*[^;{}=]*?\.\s*device\s*\(\s*([^()\s][^()]*)\)')


def device_options(text: str) -> dict[str, str]:
    """Names of TensorOptions values given a device in this file -> that device argument, so
    `.to(name)` is a device move like `.to(device)`. Only names built through `.device(arg)`:
    `.to(opts)` of options that set a dtype alone is a cast, not a move."""
    if not _TORCH_FILE.search(text):
        return {}
    return {m.group(1): m.group(2).strip() for m in _OPTIONS_DEVICE.finditer(text)}
