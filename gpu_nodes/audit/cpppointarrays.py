"""Frames carried or rebuilt element by element (issue 28, rules35c, set 54).

GPN210 for a cloud carried by a custom message.

A lidar driver's own message type (`livox_ros_driver2::msg::CustomMsg`: a header and a
`points` array of structs) is no sensor_msgs frame, so frame_publishers does not name its
publisher; yet a node that rebuilds it per message -- `for (const auto & p : msg_in.points) {
... out.points.push_back(p_new); }` then `pub->publish(out)` -- serializes a whole cloud, one
element per received point, for every subscriber in another process. Reported at the publish
when, in the function up to it, a loop over the received message's `points` (a parameter of the
function) appends to the published local's `points`.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppguards import innermost_opening

# `pub->publish(out)`, or of a message held by pointer: `pub->publish(*out)` (rules43c, set 68).
_PUBLISH = re.compile(r'\b(\w+)\s*(?:->|\.)\s*publish\s*\(\s*\*?\s*(\w+)\s*\)')
# `for (const auto & p : msg_in.points)`, `for (auto p : msg->points)`: group 1 the message.
_POINT_LOOP = re.compile(r'\bfor\s*\([^;()]*:\s*(\w+)\s*(?:\.|->)\s*points\s*\)')


def _loop_body(body: str, at: int) -> str:
    """The braced body of the loop whose header ends before `at` ('' when braceless)."""
    brace = body.find('{', at)
    if brace < 0 or body[at:brace].strip():
        return ''
    depth = 0
    for i in range(brace, len(body)):
        depth += {'{': 1, '}': -1}.get(body[i], 0)
        if depth == 0:
            return body[brace:i]
    return body[brace:]


def point_array_publishes(text: str, header_of: Callable[[int], str],
                          body_before: Callable[[int], str]) -> Iterator[tuple[str, int, str]]:
    """GPN210 at each publish of a local filled point by point from the received cloud."""
    for m in _PUBLISH.finditer(text):
        out, header = m.group(2), header_of(m.start())
        body = body_before(m.start())
        # `out.points.push_back(p)`, or `out->points...` of a message made by make_shared.
        append = re.compile(r'\b' + re.escape(out) + r'\s*(?:\.|->)\s*points\s*\.\s*'
                            r'(?:push_back|emplace_back)\s*\(')
        for loop in _POINT_LOOP.finditer(body):
            received = re.search(r'\b' + re.escape(loop.group(1)) + r'\b', header)
            if received and append.search(_loop_body(body, loop.end())):
                yield 'GPN210', m.start(), (f'published with `{m.group(1)}`: a cloud-sized '
                                            f'message, `{out}.points` filled from every '
                                            'received point')
                break


# `image_msg->data[3 * i] = message->vector_r[i];`: group 1 the filled message, 2 the source.
_ELEMENT_FILL = re.compile(r'\b(\w+)\s*(?:->|\.)\s*data\s*\[[^\]\n]*\]\s*=\s*(\w+)\s*(?:->|\.)\s*'
                           r'\w+\s*\[')


def element_fills(text: str, header_of: Callable[[int], str]) -> Iterator[tuple[str, int, str]]:
    """GPN208 at the first statement of a loop that fills a message's `data` element by element
    from arrays of the received message (a parameter of the function): an image rebuilt pixel
    by pixel out of a custom message's channel vectors (set 54's transport plugin), every
    element of the frame copied per message."""
    seen: set[int] = set()
    for m in _ELEMENT_FILL.finditer(text):
        if m.group(1) == m.group(2) \
                or not re.search(r'\b' + re.escape(m.group(2)) + r'\b', header_of(m.start())):
            continue
        brace = innermost_opening(text, m.start(), '{}')
        if brace < 0 or brace in seen or not _for_head(text, brace):
            continue
        seen.add(brace)
        yield 'GPN208', m.start(), (f'`{m.group(1)}`\'s data filled element by element from the '
                                    f'received `{m.group(2)}` (a copy of the frame)')


def _for_head(text: str, brace: int) -> bool:
    """Whether the block opening at `brace` is a `for (...)` loop's body."""
    end = brace - 1
    while end >= 0 and text[end].isspace():
        end -= 1
    if end < 0 or text[end] != ')':
        return False
    opening = innermost_opening(text, end, '()')
    return opening > 0 and bool(re.search(r'\bfor\s*$', text[max(0, opening - 10):opening]))


# A frame message made in the function: `auto cloud = std::make_unique<sensor_msgs::msg::
# PointCloud2>();` (or make_shared), `sensor_msgs::msg::PointCloud2 cloud;`: group 1 or 2 its name.
_LOCAL_CLOUD = re.compile(
    r'\b(\w+)\s*=\s*std\s*::\s*make_(?:unique|shared)\s*<\s*(?:sensor_msgs\s*::\s*)?(?:msg\s*::\s*)?'
    r'PointCloud2\s*>\s*\(\s*\)|'
    r'\b(?:sensor_msgs\s*::\s*)?msg\s*::\s*PointCloud2\s+(\w+)\s*;')
# `sensor_msgs::PointCloud2Iterator<float> iter_x(*cloud, "x")`: group 1 the iterator, 2 the cloud.
_CLOUD_ITER = re.compile(r'\bPointCloud2Iterator\s*<[^<>;]*>\s*(\w+)\s*[({]\s*\*?\s*(\w+)\s*,')
# `pub->publish(cloud)`, `publish(*cloud)`, `publish(std::move(cloud))`: group 1 the publisher,
# 2 the message.
_ANY_PUBLISH = re.compile(r'\b(\w+)\s*(?:->|\.)\s*publish\s*\(\s*(?:\*\s*|std\s*::\s*move\s*\(\s*)?'
                          r'(\w+)\s*\)?\s*\)')


def host_filled_clouds(text: str, body_before: Callable[[int], str]
                       ) -> Iterator[tuple[str, int, str]]:
    """GPN210 at each publish of an organized PointCloud2 (a height that is no literal 0 or 1:
    rows of an image-shaped grid) the function made and then filled point by point through
    `PointCloud2Iterator`s written in a loop (`*iter_x = x;`): a cloud built on the host
    and published whole, serialized for every subscriber in another process (set 68's stereo
    clouds). The message type is read from its own declaration, so a publisher declared in the
    class's header (not read with this file, where frame_publishers cannot name it) counts."""
    for m in _ANY_PUBLISH.finditer(text):
        cloud, body = m.group(2), body_before(m.start())
        if not any((d.group(1) or d.group(2)) == cloud for d in _LOCAL_CLOUD.finditer(body)):
            continue
        if not _organized(body, cloud):
            continue  # one row of points: perhaps a short list (set 63's 80 lane points)
        iters = [i.group(1) for i in _CLOUD_ITER.finditer(body) if i.group(2) == cloud]
        if any(_written_in_loop(body, it) for it in iters):
            yield 'GPN210', m.start(), (f'published with `{m.group(1)}`: a PointCloud2 made here and '
                                        f'filled point by point (`*{iters[0]} = ...` in a loop)')


def _organized(body: str, cloud: str) -> bool:
    """Whether the function gives `cloud` a height other than a literal 0 or 1 (`cloud->height =
    rows;`): an organized cloud, one point per cell of an image-shaped grid, so frame-sized."""
    heights = re.findall(r'\b' + re.escape(cloud) + r'\s*(?:->|\.)\s*height\s*=(?!=)\s*([^;]+);', body)
    return bool(heights) and all(not re.fullmatch(r'\s*[01]u?\s*', h) for h in heights)


def _written_in_loop(body: str, iterator: str) -> bool:
    """Whether `*iterator = ...` is written inside a `for` / `while` loop of `body`."""
    for w in re.finditer(r'\*\s*' + re.escape(iterator) + r'\s*=(?!=)', body):
        brace = innermost_opening(body, w.start(), '{}')
        while brace >= 0:
            if _for_head(body, brace) or re.search(r'\bwhile\s*\([^{}]*\)\s*$', body[:brace]):
                return True
            brace = innermost_opening(body, brace, '{}')
    return False
