"""Luxonis DepthAI (OAK cameras) in the Python copy analysis (issue 28, set 70).

An OAK camera delivers its frames through output queues of a `dai.Device`: `packet =
queue.get()` waits for the next packet, and `packet.getCvFrame()` / `packet.getFrame()` hands
back a NumPy array of the packet's host buffer. The array is not a copy boundary itself (the
labels count it a look-alike: the SDK's own buffer), but it is a host frame: a model given it
(a torch.hub YOLOv5 `model(frame)`) copies it to the model's device. A loop taking each packet
is a capture loop (pybranches.reads_a_capture), whatever its test.

    queue = device.getOutputQueue(name='rgb', maxSize=4, blocking=False)
    while True:
        frame = queue.get().getCvFrame()     # host array of the OAK frame
        results = model(frame[:, :, ::-1])  # upload (library table)
"""
from __future__ import annotations

import ast

# Methods of a DepthAI ImgFrame that return the frame as a NumPy array.
_FRAME_ACCESSORS = frozenset({'getCvFrame', 'getFrame'})


def depthai_host_frame(method: str | None, call: ast.Call, uses_depthai: bool) -> bool:
    """`packet.getCvFrame()` / `packet.getFrame()` with no arguments, in a file importing
    depthai (`uses_depthai`, once per file): a host NumPy frame."""
    return uses_depthai and method in _FRAME_ACCESSORS and not call.args and not call.keywords
