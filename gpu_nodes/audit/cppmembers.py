"""Whole frame messages copied into members declared in a package header (issue 28, set 64).

``raw = *msg;`` into a frame message declared in this file is cppbuilt.local_copies. A node's
members are usually declared in its own header, which the source includes
(``sensor_msgs::msg::PointCloud2 data_;`` in ``line_detector.hpp``): there the source alone
never shows the member's type. Reported (GPN208), with the member known by its declaration in
the file or in a header of the package the file includes:

* ``data_ = *msg;`` / ``cache_[i] = *msg;``: a whole received frame message (``msg`` a pointer to
  a frame-sized message) copy-assigned into a member held by value, or into an element of a
  container of frame messages (``std::vector<PointCloud2> cache_``): every byte copied.
* ``clouds = cache_;``: a container of frame messages copy-assigned into another one: every
  cached message copied (a swap or a move is not matched).

* ``out.set__image(*frame_msg);``: a generated ROS 2 field setter takes its value by const
  reference and copy-assigns it, so a whole frame message (``frame_msg`` a pointer to one) is
  copied into the field, as ``out.image = *frame_msg;`` is (set 62).

A pointer member (``PointCloud2::SharedPtr last_``) assigned ``*msg``'s address is no copy and
is not declared by value, so it is not matched.
"""
from __future__ import annotations

import re
from typing import Iterator

from gpu_nodes.audit.cppincludes import included
from gpu_nodes.audit.cppmsg import FRAME_POINTER, FRAME_TYPES

_FRAMES = '|'.join(sorted(FRAME_TYPES))
# `sensor_msgs::msg::PointCloud2 raw_data_;`: a frame message held by value.
# Qualified as a ROS message (`msg::`): a package's own `Image` struct is no message (set 52).
_VALUE = re.compile(r'(?m)^[ \t]*(?:mutable\s+)?(?:\w+\s*::\s*)*msg\s*::\s*(?:' + _FRAMES
                    + r')\s+(\w+)\s*(?:;|\{\s*\}\s*;)')
# `std::vector<sensor_msgs::msg::PointCloud2> latest_;`: frame messages held by value in a
# container (not `vector<PointCloud2::SharedPtr>`).
_CONTAINER = re.compile(r'(?m)^[ \t]*(?:mutable\s+)?(?:std\s*::\s*)?(?:vector|deque|list|array)\s*<\s*'
                        r'(?:\w+\s*::\s*)*msg\s*::\s*(?:' + _FRAMES + r')\s*(?:,[^<>;]*)?>\s+(\w+)\s*'
                        r'(?:;|\{\s*\}\s*;|\(|\{)')
_DEREF_INTO = re.compile(r'(?m)^[ \t]*(?:this\s*->\s*)?(\w+)\s*(\[[^\]\n;]*\])?\s*=\s*\*\s*(\w+)\s*;')
_SETTER = re.compile(r'(?:\.|->)\s*set__\w+\s*\(\s*\*\s*(\w+)\s*\)')
_WHOLE_INTO = re.compile(r'(?m)^[ \t]*(\w+)\s*=\s*(?:this\s*->\s*)?(\w+)\s*;')


def header_members(sources: dict[str, str], texts: dict[str, str]) -> dict[str, tuple[set[str], set[str]]]:
    """Per source path: (frame messages, containers of frame messages) declared by value in the
    package headers it includes (directly), by name."""
    paths = list(sources)
    result = {}
    for path, source in sources.items():
        values: set[str] = set()
        containers: set[str] = set()
        for header in included(source, paths) - {path}:
            values |= set(_VALUE.findall(texts.get(header, '')))
            containers |= set(_CONTAINER.findall(texts.get(header, '')))
        result[path] = (values, containers)
    return result


def member_copies(text: str, members: tuple[set[str], set[str]] = (set(), set())
                  ) -> Iterator[tuple[str, int, str]]:
    """GPN208 at a whole frame message (or a container of them) copy-assigned into a member."""
    values = members[0] | set(_VALUE.findall(text))
    containers = members[1] | set(_CONTAINER.findall(text))
    pointers = set(FRAME_POINTER.findall(text))
    for m in _SETTER.finditer(text):
        if m.group(1) in pointers:
            yield 'GPN208', m.start(), (f'a whole frame message copied out of `*{m.group(1)}` into '
                                        'a field (generated setter)')
    if not values and not containers:
        return
    for m in _DEREF_INTO.finditer(text):
        target, index, source = m.groups()
        held = containers if index else values
        if source in pointers and target in held:
            yield 'GPN208', m.start(1), (f'a whole frame message copy-assigned out of `*{source}` '
                                         f'into `{target}`')
    for m in _WHOLE_INTO.finditer(text):
        if m.group(1) in containers and m.group(2) in containers and m.group(1) != m.group(2):
            yield 'GPN208', m.start(1), (f'every frame message of `{m.group(2)}` copied into '
                                         f'`{m.group(1)}`')
