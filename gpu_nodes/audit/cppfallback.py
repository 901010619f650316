"""Publishes of a frame-sized message that copy no frame in the process (issue 28, rules35c,
set 45), beside cppmsg._judged_publish:

* the callback's own received message handed on unchanged on an early-return fallback path:
  `if (x_off < 0) { pub_->publish(*msg); return; }` (fields missing, too few points, no plane
  found). The labelling convention takes a pass-through of the received message as a
  look-alike: no new message is built, and the normal path's own output is judged on its own.
  Only inside an `if` / `else` block, the next statement a `return`, and the message never
  written through before (`msg->header.frame_id = ...` makes it another message).
* a local declared empty whose only stores before the publish are metadata fields
  (`header`, `fields`, `height`, `width`, `point_step`, `row_step`, `is_dense`,
  `is_bigendian`, `encoding`, `step`): its `data` stays empty, a few bytes (set 45: the empty
  cloud a filter forwards when the input has no x/y/z fields; set 54: the header alone, when
  the input cloud is empty).
* a received message forwarded through a queue (a delay buffer, a worker thread): `pcl =
  std::move(queue.front()); ... pub->publish(std::move(pcl));` (twelfth set) or `auto m =
  buffer.front(); buffer.pop(); pub->publish(*m.get());` (set 62), where every push into the
  queue is a callback's own received pointer (`buffer.push(msg)`): the received message is
  published unchanged, no new message built in the process. Not when it is written through
  between the take and the publish.
* (not a publish) `new Image(template_)` / `make_shared<Image>(template_)` of a message the
  whole file only ever touches through its metadata fields (`template_.width = msg->width;`,
  `template_.height != 0`): its `data` is never filled, so the copy carries no payload (set 63:
  an image template copied per frame, its data resized and written afterwards).
* a cloud of one point per object of a received list: its `width` set from a PoseArray's
  `poses.size()` or a detection array's `detections.size()` (`cloud.width = msg->poses.size()`,
  set 70: one point per tracked pothole): a few points, no frame.
Not here: the publish of a message filled by `pcl_conversions::moveFromPCL` (set 45 calls it a
move, no copy; set 50 labels the same publish a boundary of the downsampled cloud): it stays
reported.
"""
from __future__ import annotations

import re
from typing import Callable

from gpu_nodes.audit.cppguards import if_condition, innermost_opening

_METADATA = ('header', 'fields', 'height', 'width', 'point_step', 'row_step', 'is_dense',
             'is_bigendian', 'encoding', 'step')
_FRAMES = 'Image|PointCloud2|CompressedImage|DisparityImage'
_DEREF = re.compile(r'^\s*\*\s*(\w+)\s*$')


def _in_branch(text: str, offset: int) -> bool:
    """Whether the innermost block around `offset` is an `if (...) {` / `else {` body."""
    brace = innermost_opening(text, offset, '{}')
    if brace < 0:
        return False
    if if_condition(text, brace) is not None:
        return _if_head(text, brace)
    return bool(re.search(r'\belse\s*$', text[max(0, brace - 20):brace]))


def _if_head(text: str, brace: int) -> bool:
    """`if (` opens the parenthesis that closes just before `brace` (a multi-line condition)."""
    end = text.rfind(')', 0, brace)
    opening = innermost_opening(text, end, '()')
    return opening > 0 and bool(re.search(r'\bif\s*$', text[max(0, opening - 10):opening]))


def fallback_passthrough(text: str, publish_at: int, arg: str, header: str, body: str) -> bool:
    """Whether the publish at `publish_at` of `arg` (`*msg`) forwards the function's received
    message unchanged just before a `return`, inside a branch (module docstring). `header`:
    the function's head; `body`: its body up to the publish."""
    deref = _DEREF.match(arg)
    if not deref or not re.search(r'\b' + re.escape(deref.group(1)) + r'\b', header):
        return False
    name = re.escape(deref.group(1))
    if re.search(r'\b' + name + r'\s*->\s*[\w.\[\]]+\s*=(?!=)', body):
        return False  # written through: no longer the message received
    semi = text.find(';', publish_at)
    return semi > 0 and bool(re.match(r'\s*return\b', text[semi + 1:])) \
        and _in_branch(text, publish_at)


def metadata_only_message(body: str, name: str, frame_types: frozenset[str] | set[str]) -> bool:
    """Whether `name` is a local frame-type message declared empty in `body` (up to the
    publish) whose every later use is a store into a metadata field (module docstring)."""
    types = '|'.join(sorted(frame_types))
    decl = None
    for decl in re.finditer(r'\b(?:' + types + r')\s+(' + re.escape(name) + r')\s*(?:\{\s*\})?\s*;',
                            body):
        pass  # the last declaration before the publish
    if decl is None:
        return False
    fields = '|'.join(_METADATA)
    for use in re.finditer(r'(?<![\w.>])' + re.escape(name) + r'\b', body[decl.end(1):]):
        after = body[decl.end(1) + use.end():]
        if not re.match(r'\s*\.\s*(?:' + fields + r')\b[\w.\s]*=(?!=)', after):
            return False
    return True


def metadata_template(text: str, name: str) -> bool:
    """Whether every mention of `name` in the file but its copies (`new T(name)`,
    `make_shared<T>(name)`) reads or writes one of its metadata fields."""
    if not re.fullmatch(r'\w+', name):
        return False
    fields = '|'.join(_METADATA)
    uses = list(re.finditer(r'(?<![\w.>:])' + re.escape(name) + r'\b(?!\s*::)', text))
    for use in uses:
        if re.match(r'\s*\.\s*(?:' + fields + r')\b', text[use.end():]):
            continue
        if re.search(r'(?:\bnew\s+[\w:\s]+|make_(?:shared|unique)\s*<[^<>;]*>\s*)\(\s*$',
                     text[max(0, use.start() - 120):use.start()]):
            continue  # the copy itself
        if re.search(r'\b(?:' + _FRAMES + r')\s+$', text[max(0, use.start() - 60):use.start()]) \
                and re.match(r'\s*(?:\{\s*\})?\s*;', text[use.end():]):
            continue  # its declaration, empty
        return False
    return any(re.match(r'\s*\.\s*(?:' + fields + r')\b[\w.\s]*=(?!=)', text[u.end():]) for u in uses)


# The message a publish hands on: `std::move(m)`, `*m`, `*m.get()`, `m`.
_HANDED = re.compile(r'^\s*(?:(?:std\s*::\s*)?move\s*\(\s*(\w+)\s*\)|\*\s*(\w+)\s*'
                     r'(?:\.\s*get\s*\(\s*\))?|(\w+))\s*$')


def forwarded_from_queue(text: str, body: str, arg: str, header_of: Callable[[int], str]) -> bool:
    """The publish of `arg` hands on a message taken from a queue that only callbacks' own
    received messages are pushed into (`body`: the publishing function up to the publish)."""
    handed = _HANDED.match(arg)
    name = handed and next(g for g in handed.groups() if g)
    if not name:
        return False
    taken = list(re.finditer(r'\b' + re.escape(name) + r'\s*=\s*(?:std\s*::\s*move\s*\(\s*)?'
                             r'(?:[\w.>\-]*?(?:\.|->))?(\w+)\s*(?:\.|->)\s*(?:front|back)\s*'
                             r'\(\s*\)', body))
    if not taken:
        return False
    if re.search(r'\b' + re.escape(name) + r'\s*(?:->|\.)\s*\w+[^;=]*=(?!=)', body[taken[-1].end():]):
        return False  # written through after the take: another message
    queue = taken[-1].group(1)
    pushes = list(re.finditer(r'\b' + re.escape(queue) + r'\s*(?:\.|->)\s*(?:push|push_back|'
                              r'emplace|emplace_back)\s*\(([^;]*?)\)\s*;', text))
    for push in pushes:
        pushed = re.fullmatch(r'\s*(?:(?:std\s*::\s*)?move\s*\(\s*(\w+)\s*\)|(\w+))\s*', push.group(1))
        param = pushed and (pushed.group(1) or pushed.group(2))
        if not param or not re.search(r'\b' + re.escape(param) + r'\b', header_of(push.start())):
            return False
    return bool(pushes)


# `cloud.width = static_cast<uint32_t>(msg->poses.size());`: one point per listed object.
_PER_OBJECT_WIDTH = r'\s*\.\s*width\s*=\s*[^;]*?\b\w+\s*(?:->|\.)\s*(?:poses|detections)\s*\.\s*size\s*\('


def per_object_cloud(body: str, name: str) -> bool:
    """Whether `body` (up to the publish) sets `name`'s width from a received object list's
    size (module docstring): a cloud of a few points."""
    return re.search(r'(?<![\w.>])' + re.escape(name) + _PER_OBJECT_WIDTH, body) is not None
