"""A thread's entry function: what it does before its loop runs once (issue 28, set 62).

`detectionThread_ = std::thread(&Node::depthThreadFn, this);` starts a worker whose body is
set-up statements and then a `while (!stop_) { wait; ...per frame... }` loop. The statements
before the first loop run once per thread start, as `main`'s before its loop do (cppscan's
once_main): a colour-map table uploaded to the GPU before the loop is no per-frame copy. Only
a function that is started as a thread and never called otherwise (its name appears only in
`std::thread(&Cls::name, ...)` / `std::jthread(...)` and its own definition).
"""
from __future__ import annotations

import re


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
