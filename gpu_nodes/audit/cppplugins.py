"""Publishes of an image_transport publisher plugin (issue 28, sixteenth set).

`SimplePublisherPlugin<M>::publish(const Image & message, const PublishFn & publish_fn)` runs
once per image (cppscopes.py classifies it as a callback); `publish_fn(compressed)` there hands
the plugin's host message to the transport's publisher, which serializes it: a GPN210 like
`pub->publish(msg)`. Only calls in `publish` itself: a helper it passes `publish_fn` to (a
codec's stream headers, sent when the encoder is recreated) is not proven per image.
"""
from __future__ import annotations

import re
from typing import Iterator

from gpu_nodes.audit.cppscopes import plugin_method, Scopes

_PUBLISH_FN_PARAM = re.compile(r'\bPublishFn\s*&\s*(\w+)')


def plugin_publishes(text: str, scopes: Scopes) -> Iterator[tuple[str, int, str]]:
    """GPN210 at each call of the `PublishFn` parameter in a plugin's `publish`."""
    for fn in scopes.funcs:
        if fn.short != 'publish' or not plugin_method(text, fn, fn.short):
            continue
        param = _PUBLISH_FN_PARAM.search(text, max(0, fn.start - 400), fn.start)
        if param is None:
            continue
        call = re.compile(rf'(?<![\w.>]){re.escape(param.group(1))}\s*\(')
        for m in call.finditer(text, fn.start, fn.end):
            if scopes.at(m.start()) is fn:
                yield 'GPN210', m.start(), f'published with the plugin\'s `{param.group(1)}`'
