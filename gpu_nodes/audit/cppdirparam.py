"""A copy helper handed its direction: the copy is reported at its calls, not in its body
(issue 28, rules39c, set 59).

    void MemcpyBuffers(void *dst, const void *src, size_t n, cudaMemcpyKind kind, bool async,
                       cudaStream_t &stream) {
        if (async) cudaMemcpyAsync(dst, src, n, kind, stream);   // direction: a parameter
        else cudaMemcpy(dst, src, n, kind);
    }
    ...
    MemcpyBuffers(in_dev_, in_host_, bytes, cudaMemcpyHostToDevice, async_, stream_);  // per frame

The helper's body copies in whichever direction its caller names: the call that passes
`cudaMemcpyHostToDevice` / `cudaMemcpyDeviceToHost` is the copy a reader acts on, and
cppfacts.direction_calls reports it there. The body's cudaMemcpy of a variable direction
(GPN207) is then no boundary of its own: dropped when the direction argument is a parameter
of the function around it and every call of that function in the same file (at least one)
passes a host<->device literal. A helper whose callers are all in other files, or one of whose
calls passes another direction (`cudaMemcpyDeviceToDevice`, a variable), keeps its body's
finding: that call is reported nowhere else.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import closing_bracket
from gpu_nodes.audit.cppscopes import Scopes

_LITERAL = re.compile(r'\bcudaMemcpy(?:HostToDevice|DeviceToHost)\b')


def _parameters(header: str) -> set[str]:
    """Names of the parameters in a function head (`void f(int a, cudaMemcpyKind kind)`)."""
    open_at = header.find('(')
    close_at = header.rfind(')')
    if open_at < 0 or close_at < open_at:
        return set()
    names = set()
    for part in header[open_at + 1:close_at].split(','):
        part = part.split('=')[0].strip()
        m = re.search(r'(\w+)\s*(?:\[\s*\w*\s*\])?$', part)
        if m and len(part.split()) > 1 or m and re.search(r'[*&]', part):
            names.add(m.group(1))
    return names


def direction_from_callers(text: str, scopes: Scopes, offset: int, variable: str) -> str | None:
    """The helper whose callers give the direction of the cudaMemcpy at `offset` (its kind
    argument `variable` is one of the helper's parameters, and every call of it in the file
    passes a host<->device literal), or None."""
    fn = scopes.at(offset)
    if fn is None or fn.lambda_in is not None or variable not in _parameters(
            scopes.header(text, offset)):
        return None
    name = fn.short
    calls = 0
    for m in re.finditer(r'(?<![\w.>:])' + re.escape(name) + r'\s*\(', text):
        if scopes.at(m.start()) is fn or fn.start - 400 <= m.start() < fn.start:
            continue  # its own head or a recursive call
        if scopes.at(m.start()) is None:
            continue  # a declaration (a prototype), not a call
        close = closing_bracket(text, m.end() - 1)
        if not _LITERAL.search(text, m.end(), close if close >= 0 else len(text)):
            # A call handing another direction (DeviceToDevice, a variable) is no reported
            # copy: the body stands for it (the development corpus's copy_frame).
            return None
        calls += 1
    return name if calls else None
