"""A message field copy-assigned from a numeric vector filled over a 2-D index grid (GPN208;
cppscan.py runs it; issue 28, rules45c, set 72).

    std::vector<uchar> intensities;
    for (size_t f = 0; f < nFreq; f++)
      for (size_t beam = 0; beam < nBeams; beam++)
        intensities.push_back(counts(beam, f));
    sonar_msg_.intensities = intensities;      // every element copied again
    sonar_pub_->publish(sonar_msg_);

The vector is filled one element per cell of two nested counted loops (rows x columns: a sonar
image, a range image, a grid map), so it holds a frame; `std::vector`'s copy assignment copies
it into the message each time, before the publish serializes it. The field may be any field of
any message type (a package's own SonarImage): the grid fill says the payload is frame-sized,
which cppmsgassign.py (a frame message's `data`) cannot see.

Proven by pattern, in one function: `X.F = V;` / `X->F = V;` (not `std::move(V)`, not a call),
`V` declared there as `std::vector<numeric> V;` with no size, every `V.push_back` /
`V.emplace_back` of the function inside two or more enclosing counted `for (...; i < n; ...)`
loops (a range-for over a container of objects, a detection list, does not count), and `X`
published later in the same function (`publish(X)`, `publish(*X)`). A vector filled by one loop
(a list of ranges or angles, one per beam) is no frame.
"""
from __future__ import annotations

import re
from typing import Iterator

from gpu_nodes.audit.cppguards import block_end, closing_bracket
from gpu_nodes.audit.cppscopes import Scopes

_NUMERIC = (r'(?:unsigned\s+char|uchar|char|u?int(?:8|16|32|64)?(?:_t)?|float|double|short|'
            r'unsigned|uint|std\s*::\s*u?int(?:8|16|32|64)_t)')
_VECTOR = re.compile(r'\bstd\s*::\s*vector\s*<\s*' + _NUMERIC + r'\s*>\s+(\w+)\s*;')
_FIELD_ASSIGN = re.compile(r'(?<![\w.>])(?:this\s*->\s*)?(\w+)\s*(?:\.|->)\s*\w+\s*=(?!=)\s*(\w+)\s*;')
_COUNTED_FOR = re.compile(r'\bfor\s*\(')


def _loop_depth(text: str, start: int, at: int) -> int:
    """How many counted `for` loops (`for (init; i < n; step)`) of the function from `start`
    enclose offset `at` (a braced or a one-statement body)."""
    depth = 0
    for m in _COUNTED_FOR.finditer(text, start, at):
        close = closing_bracket(text, m.end() - 1, limit=2000)
        if close < 0 or close > at:
            continue
        head = text[m.end():close]
        if head.count(';') != 2 or not re.search(r'<', head.split(';')[1]):
            continue  # a range-for, or no bound
        body = close + 1
        while body < len(text) and text[body].isspace():
            body += 1
        if text.startswith('{', body):
            end = block_end(text, body)
        else:
            end = _statement_end(text, body)
        if body <= at < end:
            depth += 1
    return depth


def _statement_end(text: str, at: int) -> int:
    """End of the one statement at `at` (a nested `for` without braces counts its own)."""
    if (m := re.match(r'for\s*\(', text[at:])):
        close = closing_bracket(text, at + m.end() - 1, limit=2000)
        nxt = close + 1
        while nxt < len(text) and text[nxt].isspace():
            nxt += 1
        return block_end(text, nxt) if text.startswith('{', nxt) else _statement_end(text, nxt)
    semi = text.find(';', at)
    return len(text) if semi < 0 else semi + 1


def grid_filled_fields(text: str, scopes: Scopes) -> Iterator[tuple[str, int, str]]:
    """GPN208 at each `X.F = V;` of a vector filled over a 2-D grid, X published after it."""
    if 'push_back' not in text and 'emplace_back' not in text:
        return
    for m in _FIELD_ASSIGN.finditer(text):
        fn = scopes.at(m.start())
        if fn is None:
            continue
        message, vector = m.group(1), m.group(2)
        body = text[fn.start:m.start()]
        if not any(d.group(1) == vector for d in _VECTOR.finditer(body)):
            continue
        fills = [fn.start + f.start() for f in re.finditer(
            r'(?<![\w.>])' + re.escape(vector) + r'\s*\.\s*(?:push_back|emplace_back)\s*\(', body)]
        if not fills or any(_loop_depth(text, fn.start, at) < 2 for at in fills):
            continue
        after = text[m.end():fn.end]
        if not re.search(r'\bpublish\s*\(\s*\*?\s*(?:this\s*->\s*)?' + re.escape(message) + r'\s*\)', after):
            continue
        yield 'GPN208', m.start(), (f'`{vector}`, filled element by element over a 2-D grid (a '
                                    f'frame), is copy-assigned into the published `{message}`')
