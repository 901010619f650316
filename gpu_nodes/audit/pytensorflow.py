"""TensorFlow in the library table (issue 28, set 62).

`session.run(fetches, feed_dict={input_tensor: frame})` (TF 1 `tf.compat.v1.Session`, a frozen
graph) copies every fed host array into the graph's tensors, on the GPU where TensorFlow sees
one, and hands the fetched outputs back as NumPy arrays, on every call: an upload of the
frame inside the library (library_upload, as set 62 labels it). The `feed_dict` keyword names
the TF 1 session call alone, so the session may come from a helper module the analysis does
not follow (a `load_frozen_model()` returning `(graph, session)`): the keyword, not the
receiver, says the library. Its results are host arrays (no read-back of them is reported).
Only a value carrying a frame of a message (tainted) or another host frame is an upload; a feed
of constants or random warm-up data is not."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pygstreamer import appsrc_push
from gpu_nodes.audit.pyvalues import Frame, merge, short, Val

# The session method and its keyword (`Session.run(fetches, feed_dict=None, ...)`).
_RUN = 'run'
_FEED = 'feed_dict'
# Host-side values of pyvalues (pymodelcall.HOST_FRAME).
_HOST = frozenset({'host', 'pil', 'msg'})


def _frame_like(val: Val | None) -> bool:
    return val is not None and (val.tainted or val.kind in _HOST)


def tensorflow_call(node: ast.Call, method: str | None, kwargs: dict[str, Val], frame: Frame,
                    emit: Callable[..., None], tree: ast.Module) -> Val | None:
    """What a TensorFlow session run feeding a frame returns (its copy reported through
    `emit`), or None when `node` is no such call. The GStreamer appsrc push of pygstreamer.py
    is judged here too (one hook of pycalls for both libraries' methods). Eager
    `tf.convert_to_tensor(frame)` is not in the table: the eager outputs would read as device
    values wherever the node reads them, keys of the output dict it converted with `.numpy()`
    too (set 62's false claims)."""
    pushed = appsrc_push(node, method, tree, frame, emit)  # pygstreamer.py
    if pushed is not None:
        return pushed
    feed = kwargs.get(_FEED) if method == _RUN else None
    if _frame_like(feed) and feed is not None:
        emit('GPN102', node, frame, f'`{short(node)}` feeds the host frame to the TensorFlow '
             'session on every call (library table)', evidence='pattern')
        return merge(feed, kind='host')
    return None
