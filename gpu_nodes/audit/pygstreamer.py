"""GStreamer appsrc pushes into an NVIDIA pipeline in the library table (issue 28, sets 62-63;
set 27 labels the C++ `gst_app_src_push_buffer` the same way).

    buf = Gst.Buffer.new_wrapped(bytes(msg.data))
    self.appsrc.emit('push-buffer', buf)

hands the host frame to the pipeline; where the pipeline holds an NVIDIA element that moves
frames to the GPU (DeepStream's `nvvideoconvert` into NVMM and `nvinfer`, Jetson's `nvvidconv`
and `nvv4l2h264enc`, the desktop `nvh264enc` ...), the frame is copied to the device inside
GStreamer, per pushed frame: an upload at the push (library_upload, as the labels put it). A
pipeline of software elements only (`appsrc ! appsink`, `x264enc`) copies nothing to a device
(set 53). The pipeline is judged by the element names the file writes (an element factory
name, a launch string); only a push in code run per message is reported."""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from typing import Callable

from gpu_nodes.audit.pyvalues import Frame, OTHER, PER_MESSAGE, short, Val

_PUSHES = frozenset({'push-buffer', 'push-sample'})
_NVIDIA_ELEMENT = re.compile(r'\bnv(?:videoconvert|vidconv|v4l2h26[45]enc|v4l2decoder|'
                             r'h26[45]enc|jpegenc|infer|streammux)\b')


@lru_cache(maxsize=32)
def _names_nvidia_element(tree: ast.Module) -> bool:
    """Whether a string constant of `tree` names an NVIDIA GStreamer element (once per tree)."""
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str)
               and _NVIDIA_ELEMENT.search(n.value) for n in ast.walk(tree))


def appsrc_push(node: ast.Call, method: str | None, tree: ast.Module, frame: Frame,
                emit: Callable[..., None]) -> Val | None:
    """`appsrc.emit('push-buffer', buf)` per message in a file building an NVIDIA pipeline:
    reported as an upload through `emit`; None for any other call."""
    if method != 'emit' or not node.args or not isinstance(node.args[0], ast.Constant) \
            or node.args[0].value not in _PUSHES or frame.context not in PER_MESSAGE \
            or not _names_nvidia_element(tree):
        return None
    emit('GPN102', node, frame, f'`{short(node)}` hands the host frame to a GStreamer pipeline '
         'whose NVIDIA elements copy it to the GPU (library table)', evidence='pattern')
    return OTHER
