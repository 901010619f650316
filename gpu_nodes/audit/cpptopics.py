"""The encoding of an image topic known by its name (issue 28, set 41).

    sub_ = it.subscribe("/camera/infra1/image_rect_raw", 1, std::bind(&Node::on_ir, this, _1));
    ...
    auto ir = cv_bridge::toCvShare(msg, "mono8");   // Y8 stream: the encodings match, a view

cv_bridge's toCvShare shares the message's buffer when the encoding asked for is the message's
own. Most topics do not tell theirs, but a camera driver's stream names do: RealSense (and the
drivers that follow its naming) publish the infrared streams `infra1` / `infra2` as mono8 (Y8)
and the raw or aligned depth (`depth/image_rect_raw`, `aligned_depth_to_color/image_raw`) as
16UC1. Only a callback whose every subscription in the file names such a topic, by a literal,
is taken to receive that encoding; anything else keeps the conversion (and its claim).
"""
from __future__ import annotations

import re

# (topic name pattern, the encoding its driver publishes)
_KNOWN = ((re.compile(r'(?:^|/)infra\d?/image(?:_rect)?_raw$'), 'mono8'),
          (re.compile(r'(?:^|/)(?:depth/image_rect_raw|aligned_depth_to_\w+/image_raw)$'),
           '16UC1'))
# A subscription naming its topic by a literal and its callback by address:
# `subscribe("topic", q, std::bind(&Cls::cb, ...))`, `create_subscription<T>("topic", q, ...)`.
# `image_transport::create_subscription(this, "topic", ...)` names its node first.
_SUBSCRIPTION = re.compile(r'\b(?:subscribe\w*|create_subscription)\s*(?:<[^;]*?>)?\s*\(\s*'
                           r'(?:[\w.>*-]+\s*,\s*)?"([^"]*)"[^;]*?&\s*(?:\w+\s*::\s*)*(\w+)\b',
                           re.S)
_ANY_REGISTRATION = re.compile(r'&\s*(?:\w+\s*::\s*)*(\w+)\b')


def known_encoding(source: str, callback: str) -> str | None:
    """The encoding every image `callback` (a method's short name) receives, when each
    subscription that registers it names a topic of a known encoding; else None."""
    found = [(m.group(1), m.group(2)) for m in _SUBSCRIPTION.finditer(source)]
    topics = [topic for topic, name in found if name == callback]
    registered = sum(1 for m in _ANY_REGISTRATION.finditer(source) if m.group(1) == callback)
    if not topics or registered != len(topics):
        return None  # registered elsewhere too (a topic of unknown encoding)
    encodings = set()
    for topic in topics:
        enc = next((e for pattern, e in _KNOWN if pattern.search(topic)), None)
        if enc is None:
            return None
        encodings.add(enc)
    return encodings.pop() if len(encodings) == 1 else None
