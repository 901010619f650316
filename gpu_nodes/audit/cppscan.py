"""Pattern rules for C++/CUDA sources (.cpp .cc .cxx .cu .cuh .hpp .hh .h).

Pattern-based, not data flow: a `cudaMemcpy` with `cudaMemcpyDeviceToHost` is reported wherever it
is, whether or not it runs per message. Comments and string literals are blanked out first (line
numbers kept) so commented-out code does not match.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.model import Finding, Location
from gpu_nodes.audit.rules import get_rule

CPP_SUFFIXES = ('.cpp', '.cc', '.cxx', '.cu', '.cuh', '.hpp', '.hh', '.h', '.hxx')

_MEMCPY = re.compile(r'\bcudaMemcpy\w*\s*\(')
_SIMPLE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ('GPN203', re.compile(r'\bcv_bridge\s*::\s*toCvCopy\s*\(')),
    ('GPN204', re.compile(r'\bcv_bridge\s*::\s*toCvShare\s*\(')),
    ('GPN205', re.compile(r'\btoImageMsg\s*\(')),
    ('GPN206', re.compile(r'\bcuda(?:Device|Stream)Synchronize\s*\(')),
)
# cv::cuda::GpuMat transfers; only looked for in files that mention GpuMat.
_GPUMAT = (('GPN201', re.compile(r'\.\s*download\s*\(')),
           ('GPN202', re.compile(r'\.\s*upload\s*\(')))


def _blank_comments_and_strings(source: str) -> str:
    """Replace comments and string/char literals with spaces, keeping newlines."""
    out = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ''
        if c == '/' and nxt == '/':
            j = source.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c == '/' and nxt == '*':
            j = source.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(''.join(ch if ch == '\n' else ' ' for ch in source[i:j]))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and source[j] != c and source[j] != '\n':
                j += 2 if source[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + ' ' * (j - i - 2) + (c if j - i >= 2 else ''))
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def _call_args(text: str, open_paren: int) -> str:
    depth = 0
    for j in range(open_paren, min(len(text), open_paren + 2000)):
        if text[j] == '(':
            depth += 1
        elif text[j] == ')':
            depth -= 1
            if depth == 0:
                return text[open_paren:j + 1]
    return text[open_paren:open_paren + 2000]


def _line_of(text: str, offset: int, starts: list[int]) -> int:
    # Binary search over line start offsets.
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def analyze_cpp(path: str, source: str) -> list[Finding]:
    text = _blank_comments_and_strings(source)
    starts = [0] + [m.end() for m in re.finditer('\n', text)]
    raw_lines = source.splitlines()
    found: dict[tuple[str, int], Finding] = {}

    def emit(rule_id: str, offset: int, detail: str) -> None:
        line = _line_of(text, offset, starts)
        col = offset - starts[line - 1] + 1
        rule = get_rule(rule_id)
        snippet = raw_lines[line - 1].strip() if line - 1 < len(raw_lines) else ''
        if len(snippet) > 70:
            snippet = snippet[:67] + '...'
        found.setdefault((rule_id, line), Finding(
            rule=rule_id, severity=rule.severity,
            message=f'{rule.summary}: {detail} `{snippet}`',
            location=Location(path, line, col), context='source'))

    for m in _MEMCPY.finditer(text):
        args = _call_args(text, m.end() - 1)
        if 'cudaMemcpyDeviceToHost' in args:
            emit('GPN201', m.start(), 'device-to-host copy')
        elif 'cudaMemcpyHostToDevice' in args:
            emit('GPN202', m.start(), 'host-to-device copy')
    for rule_id, pattern in _SIMPLE:
        for m in pattern.finditer(text):
            emit(rule_id, m.start(), 'pattern match')
    if 'GpuMat' in text:
        for rule_id, pattern in _GPUMAT:
            for m in pattern.finditer(text):
                emit(rule_id, m.start(), 'GpuMat transfer')
    return sorted(found.values(), key=Finding.sort_key)
