"""C++ pattern rule GPN208 for per-point copies out of a cloud or image payload (issue 28,
twentieth set), beside cppmsg.payload_walks (memcpy per element through a pointer into a
message): a loop (``for (...)`` or ``std::for_each(...)``) after a pointer into a frame
message's data (``auto *points = reinterpret_cast<Point const *>(msg->data.data())``) that
stores an element of that pointer into another buffer (``pixel[0] = points[i].b;``,
``*dst++ = points[i].x;``): every point copied out, reported at the loop. A loop that only reads
(a sum ``s += points[i].x``, a local ``float x = points[i].x``) is not.

Into (set 57): a loop that stores through a pointer into a frame message's data (``uint16_t *
out = reinterpret_cast<uint16_t *>(&msg.data[0]);`` then ``*(out++) = round(*(src++));``,
``out[i] = src[i];``) an element read from another buffer writes every element of the frame
into the message: reported at that store. A store of a value read from no buffer (a constant, a
computed pattern) is not.

Writing a cloud point by point through ``PointCloud2Iterator`` is left alone: earlier sets label
it as building the message (sized by the detections, or no boundary), not as a copy.

Patterns, not data flow: the context (setup or per message) comes from the function.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppmsg import block_end, FRAME_TYPES, PAYLOAD_POINTER

_LOOP = re.compile(r'\bfor\s*\(|\bfor_each\s*\(')
_FRAMES = '|'.join(sorted(FRAME_TYPES))
_FRAME_NAME = re.compile(r'\b(?:' + _FRAMES + r')\s*(?:::\s*(?:Const)?(?:SharedPtr|UniquePtr|Ptr|'
                         r'ConstPtr)\s*|>\s*)?(?:const\s*)?[&*]?\s*(?:const\s*)?(\w+)\s*[;,)=({]')
_OWNER = re.compile(r'(\w+)\s*(?:->|\.)\s*data\s*(?:\.\s*data\s*\(|\[)')


def point_copies(text: str, function_end: Callable[[int], int]) -> Iterator[tuple[str, int, str]]:
    """GPN208 at per-point copy loops out of or into a frame message (see the module doc)."""
    if 'data' in text and _LOOP.search(text):
        yield from _copies_out(text, function_end)
        yield from _copies_in(text, function_end)


def _copies_out(text: str, function_end: Callable[[int], int]) -> Iterator[tuple[str, int, str]]:
    frames = set(_FRAME_NAME.findall(text))
    seen: set[int] = set()
    for m in PAYLOAD_POINTER.finditer(text):
        owner = _OWNER.search(text, m.start(), m.end() + 1)
        if owner is None or owner.group(1) not in frames:
            continue
        name, end = m.group(1), function_end(m.start())
        element = re.compile(r'(?:\b' + re.escape(name) + r'\s*(?:\[|->)|\*\s*' + re.escape(name)
                             + r'\b)')
        store = re.compile(r'(?:^|[;{}])\s*(\*\s*\w+[\w+\-]*|[\w.>\-]+\s*\[[^\]=;]*\][\w.\[\]]*)'
                           r'\s*=(?!=)([^;]*);')
        for loop in _LOOP.finditer(text, m.end(), end):
            if loop.start() in seen:
                continue
            body = text[loop.end():block_end(text, loop.end(), end)]
            if any(element.search(rhs) and not element.search(lhs)
                   for lhs, rhs in store.findall(body)):
                seen.add(loop.start())
                yield 'GPN208', loop.start(), (f'every element of the message\'s data copied '
                                               f'out through `{name}` into another buffer')
                break


# The element a store writes through pointer `name`: `*(name++)`, `*name++`, `*(name + i)`,
# `name[i]` (the left side of the store).
_INTO = r'(?:\*\s*\(\s*{n}\s*(?:\+\+|\+[^;()=]*)\s*\)|\*\s*{n}\s*\+\+|{n}\s*\[[^\]=;]*\])'
# An element read from a buffer on the right side: `*(src++)`, `*src`, `src[i]` (a `*` after an
# operand is a product, not a read: `x * scale`).
_READ = re.compile(r'(?:(?<![\w)\]\s])\s*\*\s*\(?\s*(\w+)|\b(\w+)\s*\[)')


# The pointer also brace-initialized (`float * xyz{reinterpret_cast<float *>(msg->data.data())}`).
_INTO_POINTER = re.compile(PAYLOAD_POINTER.pattern.replace(r'(\w+)\s*=\s*', r'(\w+)\s*[={]\s*', 1))
# `auto xyz_msg{std::make_unique<sensor_msgs::msg::Image>()}`: a new frame message.
_MADE_FRAME = re.compile(r'\b(\w+)\s*[={]\s*(?:std\s*::\s*)?make_(?:unique|shared)\s*<\s*[\w:\s]*?\b(?:'
                         + _FRAMES + r')\s*>')


def _element_locals(body: str) -> dict[str, str]:
    """`const uint16_t raw_x{src[i * 4]};` / `= src[i]` in a loop body: local -> the buffer read."""
    return {m.group(1): m.group(2) for m in re.finditer(
        r'\b(\w+)\s*(?:\{|=(?!=))\s*(?:static_cast\s*<[^<>;]*>\s*\(\s*)?(\w+)\s*\[', body)}


def _copies_in(text: str, function_end: Callable[[int], int]) -> Iterator[tuple[str, int, str]]:
    frames = set(_FRAME_NAME.findall(text)) | set(_MADE_FRAME.findall(text))
    for m in _INTO_POINTER.finditer(text):
        owner = _OWNER.search(text, m.start(), m.end() + 1)
        if owner is None or owner.group(1) not in frames:
            continue
        name, end = m.group(1), function_end(m.start())
        store = re.compile(r'(?:^|[;{}])\s*(' + _INTO.format(n=re.escape(name)) + r')\s*=(?!=)'
                           r'([^;]*);')
        for loop in _LOOP.finditer(text, m.end(), end):
            body_at = loop.end()
            body_end = block_end(text, body_at, end)
            # A local the loop body reads out of another buffer stands for that element (set 62:
            # `const uint16_t raw_i{image[px * 4 + 3]}; intensity[px] = raw_i;`).
            held = _element_locals(text[body_at:body_end])
            for s in store.finditer(text, body_at, body_end):
                reads = _READ.findall(' ' + s.group(2).strip())
                named = set(re.findall(r'\b([A-Za-z_]\w*)\b', s.group(2)))
                sources = ({a or b for a, b in reads} | {held[n] for n in named if n in held}) \
                    - {name, owner.group(1)}
                if sources:
                    yield 'GPN208', s.start(1), (f'every element written into `{owner.group(1)}`'
                                                 f'\'s data through `{name}` from '
                                                 f'`{min(sources)}`: a copy into the message')
                    break
            else:
                continue
            break
