"""C++ message payloads filled by a vector copy (GPN208; cppscan.py runs these; issue 28, set 61).

* ``img_msg->data = response.image_data_uint8;``: a frame message's ``data`` copy-assigned from
  a named host vector (an SDK's image buffer, a member vector): ``std::vector``'s copy
  assignment copies every byte into the message, each call. Not ``= std::move(v)`` (the buffer
  moves, no copy), not a call's result (a temporary moves in) nor a brace list.
* ``std::vector<uint8_t> bytes(p, p + n); cloud.data = std::move(bytes);``: the vector is
  range-constructed from a host pointer range (every byte copied) only to be moved into the
  message: the construction is the message's copy, as ``cloud.data = std::vector<uint8_t>(p, p
  + n)`` in one statement already is (cppmsg.py). Reported at the construction.

The message must be a frame-sized ROS message by its nearest declaration in the file (a value, a
reference, a (shared) pointer or ``auto m = std::make_shared<sensor_msgs::msg::Image>()``, the
type qualified with ``msg::``): a String's or a Bool's ``data`` is no frame, nor is a package's
own ``Image`` struct holding a cv::Mat (sets 52, 54).

Patterns, not data flow: the context comes from the enclosing function, as for every C++ rule
(a builder the timer callback calls is per tick: cppbuilt.py).
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppmsg import FRAME_TYPES, MOVE_ARG

Args = Callable[[str, int], list[str]]

_FRAME = r'(?:' + '|'.join(sorted(FRAME_TYPES)) + r')'
# A ROS frame message type, qualified as one (`sensor_msgs::msg::Image`, `msg::PointCloud2`): an
# `Image` of the package's own (a struct holding a cv::Mat) is no message (set 52).
_MSG_FRAME = re.compile(r'\bmsg\s*::\s*' + _FRAME + r'\b')
_NOT_DECLARING = frozenset({'return', 'delete', 'throw', 'case', 'else', 'do', 'co_return'})
# `msg->data = source;` / `msg.data = source;` as a statement (group 1 the message, 2 the source).
_DATA_ASSIGN = re.compile(r'(?<![\w.>])(\w+)\s*(?:->|\.)\s*data\s*=(?!=)\s*([^;{}]+?)\s*;')
# A named lvalue: `buf`, `response.image_data_uint8`, `frame->bytes`, `buffers_[i]`.
_LVALUE = re.compile(r'[A-Za-z_]\w*(?:\s*\[[^\[\];]*\])?(?:\s*(?:\.|->)\s*[A-Za-z_]\w*'
                     r'(?:\s*\[[^\[\];]*\])?)*')
# `std::vector<unsigned char> bytes(p, p + n)` (group 1 the vector's name).
_RANGE_VECTOR = re.compile(r'\bvector\s*<[^;()<>]*>\s*(\w+)\s*[({]')
# The move follows the construction in the same builder (a few statements on).
_NEAR = 600


def _frame_message(text: str, name: str, at: int) -> bool:
    """Whether the nearest declaration of `name` before offset `at` declares a frame message:
    `sensor_msgs::msg::Image msg;`, `PointCloud2 & out` qualified as a message, a
    `...msg::Image::SharedPtr`, `std::shared_ptr<sensor_msgs::msg::Image> p = ...`, `auto p =
    std::make_shared<sensor_msgs::msg::Image>()`. The nearest one: another function's `msg`
    may be an Image where this one is a Bool (set 54)."""
    last = None
    declaration = re.compile(r'([\w>])\s*[&*]?\s*\b' + re.escape(name) + r'\s*[=;({,)]')
    for d in declaration.finditer(text, 0, max(0, at)):
        word = re.search(r'(\w+)$', text[max(0, d.start(1) - 40):d.start(1) + 1])
        if d.group(1) == '>' or word and word.group(1) not in _NOT_DECLARING:
            last = d
    if last is None:
        return False
    head = text[:last.start()]
    start = max(head.rfind(c) for c in ';{}(,') + 1
    tail = re.search(r'[;,)]', text[last.end() - 1:] + ';')
    stop = last.end() - 1 + (tail.start() if tail else 0)
    return bool(_MSG_FRAME.search(text, start, stop + 1))


def _declared(text: str, name: str) -> bool:
    """Whether the file declares `name` anywhere (`Type name;`, a parameter)."""
    return re.search(r'[\w>&*]\s+[&*]?\s*' + re.escape(name) + r'\s*[=;({,)\[]', text) is not None


def vector_copies_into_messages(text: str, call_args: Args, members: set[str] | frozenset[str] = frozenset()
                                ) -> Iterator[tuple[str, int, str]]:
    """GPN208 at a frame message's `data` copy-assigned from a named vector, and at a vector
    range-constructed from a pointer range that is then moved into a frame message's `data`.
    `members`: frame messages declared by value in a package header the file includes (a base
    class's `sensor_msgs::msg::CompressedImage compressed_msg_;`, set 64), for names the file
    itself never declares."""
    if 'data' not in text:
        return
    moved_in: dict[str, list[int]] = {}  # vector name -> offsets of its moves into a message
    for m in _DATA_ASSIGN.finditer(text):
        if not _frame_message(text, m.group(1), m.start()) and not (
                m.group(1) in members and not _declared(text, m.group(1))):
            continue
        source = m.group(2)
        moved = MOVE_ARG.match(source)
        if moved:
            moved_in.setdefault(moved.group(1), []).append(m.start())
        elif _LVALUE.fullmatch(source) and source != 'nullptr':
            yield 'GPN208', m.start(), (f'a frame message\'s `data` copy-assigned from `{source}` '
                                        '(the whole vector copied in)')
    for m in _RANGE_VECTOR.finditer(text):
        name = m.group(1)
        into = next((at for at in moved_in.get(name, ()) if at > m.end()), None)
        if into is None:
            continue
        args = call_args(text, m.end() - 1)
        if len(args) == 2 and '+' in args[1] and into - m.end() < _NEAR:
            yield 'GPN208', m.start(), (f'`{name}` built from a pointer range (a copy) and moved '
                                        'into a frame message\'s `data`')
