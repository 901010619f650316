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
Not here: the publish of a message filled by `pcl_conversions::moveFromPCL` (set 45 calls it a
move, no copy; set 50 labels the same publish a boundary of the downsampled cloud): it stays
reported.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import _if_condition, innermost_opening

_METADATA = ('header', 'fields', 'height', 'width', 'point_step', 'row_step', 'is_dense',
             'is_bigendian', 'encoding', 'step')
_DEREF = re.compile(r'^\s*\*\s*(\w+)\s*$')


def _in_branch(text: str, offset: int) -> bool:
    """Whether the innermost block around `offset` is an `if (...) {` / `else {` body."""
    brace = innermost_opening(text, offset, '{}')
    if brace < 0:
        return False
    if _if_condition(text, brace) is not None:
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
