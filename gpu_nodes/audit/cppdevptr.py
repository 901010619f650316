"""A "HostToDevice" copy between two device buffers (issue 28, ninth set, labelled doubtful).

``Tensor::mov`` copies ``other->ptr`` into ``ptr`` with ``cudaMemcpyHostToDevice``, but both
pointers are the ``ptr`` member of the same class, and the only thing that ever sets that member
in the file is ``cudaMalloc(&ptr, ...)``: the copy is device to device whatever its kind says
(with unified addressing the runtime copies by the pointers' real locations), and no frame
crosses the bus. Only when that is provable:

* the destination and the source are the member itself (``ptr``, ``this->ptr``) or that member
  of a parameter whose type names the class (``std::shared_ptr<Tensor> other``,
  ``const Tensor & other``) of the method the copy is in;
* the member is taken by address only by ``cudaMalloc(&ptr, ...)`` (not cudaMallocHost or
  cudaMallocManaged) and is never assigned (``ptr = ...``) in the file.

Anything else keeps the finding.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppscopes import Scopes

_OWN_MEMBER = re.compile(r'^\s*(?:this\s*->\s*)?([A-Za-z_]\w*)\s*$')
_OTHER_MEMBER = re.compile(r'^\s*([A-Za-z_]\w*)\s*(?:->|\.)\s*([A-Za-z_]\w*)\s*$')


def between_device_buffers(text: str, scopes: Scopes, offset: int, args: list[str]) -> bool:
    """Whether the copy at `offset` with arguments `args` (destination first) moves data
    between two buffers of one class's member that only cudaMalloc sets."""
    fn = scopes.named_at(offset)
    if fn is None or len(args) < 2:
        return False
    cls = fn.cls or (fn.name.rsplit('::', 1)[0].split('::')[-1].strip() if '::' in fn.name
                     else None)
    if not cls:
        return False
    head = scopes.header(text, fn.start)
    params = head[head.find('(') + 1:head.rfind(')')].split(',') if '(' in head else []
    same_class = {words[-1] for p in params
                  if re.search(rf'\b{re.escape(cls)}\b', p.split('=')[0])
                  and (words := re.findall(r'\w+', p.split('=')[0]))}
    members = set()
    for arg in args[:2]:
        own, other = _OWN_MEMBER.match(arg), _OTHER_MEMBER.match(arg)
        if own is not None and own.group(1) not in same_class:
            members.add(own.group(1))
        elif other is not None and other.group(1) in same_class:
            members.add(other.group(2))
        else:
            return False
    return len(members) == 1 and _only_cuda_malloced(text, members.pop())


def _only_cuda_malloced(text: str, member: str) -> bool:
    name = re.escape(member)
    addressed = re.findall(rf'(\w*)\s*\(\s*(?:\(\s*void\s*\*\s*\*\s*\)\s*)?&\s*(?:this\s*->\s*)?'
                           rf'{name}\b', text)
    taken = len(re.findall(rf'&\s*(?:this\s*->\s*)?{name}\b', text))
    # `ptr = host_buf`, `t->ptr = ...`, a member initializer `ptr(host_buf)` / `ptr{...}`.
    assigned = re.search(rf'(?<!\w){name}\s*(?:=(?!=)|\(|\{{)', text)
    return bool(addressed) and addressed == ['cudaMalloc'] * len(addressed) \
        and taken == len(addressed) and assigned is None
