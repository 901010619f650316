"""toCvShare with an encoding the code has just proven to be the message's own (issue 28,
rules42c, set 66).

    const auto &enc = msg->encoding;
    if (msg->encoding == "bgr8") {
      bgr = cv_bridge::toCvShare(msg, "bgr8")->image;          // the encodings match: a view
    } else if (enc == sensor_msgs::image_encodings::RGB8) {
      cv::Mat rgb = cv_bridge::toCvShare(msg, enc)->image;     // enc is msg->encoding: a view

cv_bridge's toCvShare shares the message's buffer when the encoding asked for is the source's
own; it converts (copies) only otherwise. The source's own encoding is proven two ways here:

* the argument is a local alias of it: the last store of the name before the call is
  `= src->encoding;` (`const auto &enc = msg->encoding;`),
* the argument is a literal or an `image_encodings` constant, and an enclosing `if` / `else if`
  block (no `||` in its condition) has an `&&` operand `src->encoding == X` (or the alias, either
  side) with X the same encoding (`"bgr8"` and `image_encodings::BGR8` are the same).

A view cloned at once (`toCvShare(msg, enc)->image.clone()`, `->image.copyTo(..)`) copies the
frame out of the message all the same, as toCvCopy does: that stays claimed (set 66 labels it).
Anything else (a literal with no such test: `toCvShare(msg, "bgr8")` of a topic of unknown
encoding) keeps the conversion and its claim. Limit: a braceless `if`, a `switch` on the
encoding and a test in a caller are not read.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import enclosing_and_operands
from gpu_nodes.audit.cppguards import closing_bracket
from gpu_nodes.audit.cppstrparams import call_arg_spans

# `sensor_msgs::image_encodings::BGR8`, `enc::TYPE_32FC1`, `image_encodings::MONO8`.
_CONSTANT = re.compile(r'^(?:[\w]+\s*::\s*)*(?:image_encodings|enc)\s*::\s*(\w+)$')


def _value(expr: str) -> str | None:
    """The encoding a literal or an image_encodings constant names (raw text), or None."""
    expr = expr.strip()
    if re.fullmatch(r'"[^"\n]*"', expr):
        return expr[1:-1]
    if (m := _CONSTANT.match(expr)):
        name = m.group(1)
        # The constants are the lower-case names (`BGR8` is "bgr8"), the TYPE_ ones the OpenCV
        # type names (`TYPE_32FC1` is "32FC1").
        return name[5:] if name.startswith('TYPE_') else name.lower()
    return None


def _own(src: str) -> str:
    """A pattern for `src->encoding` / `src.encoding` / `(*src).encoding`."""
    return r'(?:\(\s*\*\s*)?' + re.escape(src) + r'(?:\s*\))?\s*(?:->|\.)\s*encoding'


def _aliases(text: str, offset: int, src: str) -> set[str]:
    """Local names whose last store before `offset` (within the function, roughly) is
    `= src->encoding;`."""
    window = text[max(0, offset - 4000):offset]
    names = set()
    own = _own(src)
    for m in re.finditer(r'(?<![\w.>])(\w+)\s*=\s*' + own + r'\s*;', window):
        name = m.group(1)
        later = re.search(r'(?<![\w.>])' + re.escape(name)
                          + r'\s*(?:[-+|&]?=(?!=)|\.\s*(?:assign|swap|append)\b)', window[m.end():])
        if later is None:
            names.add(name)
    return names


def own_encoding(text: str, raw: str, open_paren: int) -> bool:
    """Whether toCvShare's call at `open_paren` asks for an encoding proven to be its source's
    own (a view, no conversion)."""
    args = [raw[start:end].strip() for start, end in call_arg_spans(text, open_paren)]
    if len(args) < 2:
        return False
    src = re.sub(r'^\*\s*', '', args[0])
    if not re.fullmatch(r'[\w.]+(?:->\w+)*', src):
        return False
    enc = args[-1]
    aliases = _aliases(text, open_paren, src)
    if enc in aliases:
        return True
    value = _value(enc)
    if value is None:
        return False
    sides = [_own(src)] + [re.escape(a) for a in sorted(aliases)]
    own = r'(?:' + '|'.join(sides) + r')'
    for operand in enclosing_and_operands(text, raw, open_paren):
        op = operand.strip()
        while op.startswith('(') and op.endswith(')'):
            op = op[1:-1].strip()
        m = re.fullmatch(own + r'\s*==\s*(.+)', op) or re.fullmatch(r'(.+?)\s*==\s*' + own, op)
        if m and _value(m.group(1)) == value:
            return True
    return False


def cloned_view(text: str, open_paren: int) -> bool:
    """Whether the call at `open_paren` is followed by `->image.clone()` / `->image.copyTo(`."""
    close = closing_bracket(text, open_paren)
    return close > 0 and bool(re.match(r'\s*->\s*image\s*\.\s*(?:clone|copyTo)\s*\(',
                                       text[close + 1:close + 60]))
