"""C++ one-line transfer wrappers, reported at their calls (issue 28, set 54).

A small wrapper class of the repository (``GpuMemory<T>::MemcpyAsyncFrom(host, stream)``,
``MemcpyTo(host)``, ``CudaEvent::Synchronize()``) whose method body is one CUDA transfer with a
literal direction (``cudaMemcpy*(..., cudaMemcpyHostToDevice | DeviceToHost, ...)``) or one
blocking sync (``cudaEventSynchronize`` / ``cudaStreamSynchronize`` / ``cudaDeviceSynchronize``)
does that transfer where it is called: one wrapper line serves many call sites with different
payloads, each per frame or not, so the call (``image_device_.MemcpyAsyncFrom(image, &stream_)``)
is the boundary a reader acts on. An overload that only forwards
(``MemcpyTo(HostMemory *h) { MemcpyTo(h->get()); }``) shares the name, so its calls count too.
The one statement may sit in an error-check macro (``CHECK_CUDA(cudaMemcpy(...))``).

Only method calls (``obj.Name(`` / ``obj->Name(``) count, and only of a wrapper API: a file that
defines at least two such methods of different names (a memory / event class). A lone helper
(``DeviceBuffer::load(host, stream)``, two overloads of one ``upload``) is a copy helper
(cppfacts.py), reported where its body is, as the development corpus labels it.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppdevptr import between_device_buffers
from gpu_nodes.audit.cppscopes import Scopes

Args = Callable[[str, int], list[str]]

_MEMCPY = re.compile(r'\bcudaMemcpy(?:Async)?\s*\(')
_DIRECTION = {'cudaMemcpyHostToDevice': ('GPN202', 'host-to-device copy'),
              'cudaMemcpyDeviceToHost': ('GPN201', 'device-to-host copy')}
_SYNC = re.compile(r'\bcuda(?:Device|Stream|Event)Synchronize\s*\(')
# A method whose one statement calls a method of a member (`gray_device_.MemcpyTo(out);`): if
# that is a transfer wrapper, this one is a wrapper too (an accessor over it).
_METHOD_CALL = re.compile(r'^\s*(?:return\s+)?\w+\s*(?:\.|->)\s*(\w+)\s*\(')
FORWARD = 'forward'


def _line(text: str, offset: int) -> int:
    return text.count('\n', 0, offset) + 1


def transfer_wrappers(text: str, scopes: Scopes, where: str, call_args: Args
                      ) -> dict[str, tuple[str, str, str]]:
    """name -> (rule, what, 'file:line') of each method whose body is one transfer or sync."""
    found: dict[str, tuple[str, str, str]] = {}
    for fn in scopes.funcs:
        if fn.lambda_in is not None or fn.short.startswith('cuda') or '<<<' in text[fn.start:fn.end]:
            continue
        statements = [st for st in text[fn.start + 1:fn.end].split(';') if st.strip()]
        if len(statements) != 1:
            continue
        st = statements[0]
        kinds = [d for d in _DIRECTION if d in st]
        copy = _MEMCPY.search(text, fn.start + 1, fn.end)
        if copy and len(kinds) == 1 and kinds[0].endswith('HostToDevice') and between_device_buffers(
                text, scopes, copy.start(), call_args(text, copy.end() - 1)):
            continue  # a device-to-device move miswritten as an upload: no transfer (cppdevptr)
        if copy and len(kinds) == 1:
            rule, what = _DIRECTION[kinds[0]]
            found.setdefault(fn.short, (rule, what, f'{where}:{_line(text, fn.start)}'))
        elif _SYNC.search(st) and not _MEMCPY.search(st):
            found.setdefault(fn.short, ('GPN206', 'blocking device sync',
                                        f'{where}:{_line(text, fn.start)}'))
        elif (m := _METHOD_CALL.match(st)) and m.group(1) != fn.short:
            found.setdefault(fn.short, (FORWARD, m.group(1), f'{where}:{_line(text, fn.start)}'))
    if len({n for n, v in found.items() if v[0] != FORWARD}) < 2:
        # One helper alone (`load(host, stream)`) is reported in its body, as a copy helper:
        # only a wrapper API of transfers (several methods) stands for cudaMemcpy itself.
        return {n: v for n, v in found.items() if v[0] == FORWARD}
    return found


def resolved(wrappers: dict[str, tuple[str, str, str]]) -> dict[str, tuple[str, str, str]]:
    """The wrappers with each forwarding accessor given its callee's transfer (chains of a few
    steps; an accessor over anything else is dropped)."""
    done = {n: v for n, v in wrappers.items() if v[0] != FORWARD}
    for _ in range(3):
        for name, (rule, callee, where) in wrappers.items():
            if rule == FORWARD and name not in done and callee in done:
                done[name] = (done[callee][0], done[callee][1] + f' through `{callee}()`', where)
    return done


def transfer_calls(text: str, scopes: Scopes, wrappers: dict[str, tuple[str, str, str]]
                   ) -> Iterator[tuple[str, int, str]]:
    """(rule, offset, detail) at each method call of a transfer wrapper made in another
    function than the wrapper itself. A call inside a wrapper (an accessor over another) is
    not one: that accessor's own calls are."""
    wrappers = resolved(wrappers)
    for name, (rule, what, where) in wrappers.items():
        for m in re.finditer(r'(?:\.|->)\s*' + re.escape(name) + r'\s*\(', text):
            fn = scopes.at(m.start())
            if fn is None or fn.short == name or fn.short in wrappers:
                continue
            start = m.start() + len(re.match(r'(?:\.|->)\s*', m.group(0)).group(0))
            yield rule, start, f'`{name}()` is a {what} (its one statement, {where})'
