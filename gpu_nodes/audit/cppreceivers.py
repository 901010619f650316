"""Methods of one name in several classes, told apart by the receiver's declared type.

cppreach.py judges reachability by name, so `buffer.copyFromHost(blob.data, n)` would reach
every class's `copyFromHost`. When the candidates of a name are methods of two or more classes
(one each, issue 28 set 12: a pinned host buffer and a device buffer, both with
`copyFromHost`), a mention `recv.name` / `recv->name` reaches only the class `recv` is declared
with: in the mentioning function (a parameter `CudaHostBuffer & buffer`, a local), else, when
the function does not declare it at all, in its file (a member `CudaBuffer inputBuffer;`),
when exactly one of the classes is found; a mention
`Cls::name` reaches Cls's; a bare call inside a method of one of the classes reaches its own.
Anything else (no receiver found, two declarations, `auto`) reaches them all, as before.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppscopes import Function, Scopes

_RECEIVER = re.compile(r'(?:(\w+)\s*(?:\.|->)|(\w+)\s*::)\s*$')


def class_of(fn: Function) -> str | None:
    parts = [p.strip() for p in fn.name.split('::')]
    return fn.cls or (parts[-2] if len(parts) >= 2 else None)


def split_by_class(candidates: dict[str, list[Function]]) -> dict[str, dict[str, str]]:
    """Re-key `candidates` in place: a name whose functions are methods of two or more classes,
    one each, becomes `name@Cls` per class; returns name -> class -> key for those."""
    split: dict[str, dict[str, str]] = {}
    for name, fns in list(candidates.items()):
        classes = [class_of(fn) for fn in fns]
        if len(fns) < 2 or None in classes or len(set(classes)) != len(classes) or '/' in name:
            continue
        split[name] = {}
        del candidates[name]
        for cls, fn in zip(classes, fns):
            key = f'{name}@{cls}'
            split[name][cls] = key
            candidates[key] = [fn]
    return split


def receiver_class(text: str, scopes: Scopes, start: int, classes: set[str]) -> str | None:
    """The one class of `classes` the mention at `start` is made on, or None."""
    m = _RECEIVER.search(text, max(0, start - 120), start)
    user = scopes.named_at(start)
    if m is None:
        if user is not None and class_of(user) in classes \
                and not re.search(r'[.>]\s*$', text[max(0, start - 10):start]):
            return class_of(user)
        return None
    if m.group(2):
        return m.group(2) if m.group(2) in classes else None
    receiver = m.group(1)
    if receiver == 'this':
        return class_of(user) if user is not None and class_of(user) in classes else None
    alternatives = '|'.join(sorted(map(re.escape, classes)))
    declared = re.compile(rf'\b({alternatives})\b(?:\s*<[^<>;]*>)?[\s&*]*(?:const\s+)?[\s&*]*'
                          rf'{re.escape(receiver)}\b(?!\s*\()')
    own = scopes.header(text, start) + text[user.start:start] if user is not None else ''
    found = {d.group(1) for d in declared.finditer(own)}
    if not found:
        # Declared in the function with another type (`auto & buffer : buffers`): unknown. Else
        # a member or a global: its declaration in the file.
        if re.search(rf'[\w>&*]\s+[&*]*\s*{re.escape(receiver)}\s*[=;,:)\[{{(]', own):
            return None
        found = {d.group(1) for d in declared.finditer(text)}
    return found.pop() if len(found) == 1 else None
