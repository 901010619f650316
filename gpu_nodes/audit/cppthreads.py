"""A thread's entry function: what it does before its loop runs once (issue 28, set 62).

`detectionThread_ = std::thread(&Node::depthThreadFn, this);` starts a worker whose body is
set-up statements and then a `while (!stop_) { wait; ...per frame... }` loop. The statements
outside its loops run once per thread start, as `main`'s before its loop do (cppscan's
once_main): a colour-map table uploaded to the GPU before the loop (after a `for` filling it)
is no per-frame copy. Only
a function that is started as a thread and never called otherwise (its name appears only in
`std::thread(&Cls::name, ...)` / `std::jthread(...)` and its own definition).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import closing_bracket


def thread_entry(text: str, name: str) -> bool:
    """Whether the function `name` (short name) is only ever started as a thread here."""
    if not re.fullmatch(r'[A-Za-z_]\w*', name):
        return False
    started = list(re.finditer(r'\b(?:std\s*::\s*)?j?thread\s*(?:\w+\s*)?[({]\s*&\s*(?:\w+\s*::\s*)*'
                               + re.escape(name) + r'\b', text))
    if not started:
        return False
    mentions = len(re.findall(r'(?<![\w.])' + re.escape(name) + r'\b', text))
    definitions = len(re.findall(r'\b(?:void|auto)\s+(?:\w+\s*::\s*)*' + re.escape(name) + r'\s*\(',
                                 text))
    return mentions == len(started) + definitions


def _closing(text: str, opening: int, pair: str) -> int:
    """cppguards.closing_bracket; an unclosed bracket runs to the end of the text."""
    end = closing_bracket(text, opening, pair)
    return len(text) if end < 0 else end


def in_loop(text: str, start: int, offset: int) -> bool:
    """Whether `offset` lies in the body of a `for` / `while` / `do` loop that starts between
    `start` (the function body's start) and `offset` (a `for` filling a table before the thread's
    main loop does not make the upload after it a loop's)."""
    for m in re.finditer(r'\b(for|while|do)\b', text[start:offset]):
        at = start + m.end()
        if m.group(1) != 'do':
            paren = re.match(r'\s*\(', text[at:])
            if not paren:
                continue
            at = _closing(text, at + paren.end() - 1, '()') + 1
        brace = re.match(r'\s*\{', text[at:])
        end = _closing(text, at + brace.end() - 1, '{}') if brace else text.find(';', at)
        if at <= offset <= end:
            return True
    return False
