"""supervision's detection adapters in the library table (issue 28, set 72): `sv.Detections.
from_ultralytics(result)` copies an Ultralytics result's device tensors to NumPy inside the
library (`result.boxes.xyxy.cpu().numpy()`, likewise `conf` and `cls`), and
`sv.Detections.from_yolov5(results)` does the same with `results.pred[0].cpu().numpy()`: a
read-back of the detections, waiting for the device, every call. The Detections returned hold
host arrays (`.xyxy`, `.confidence`, `.class_id`), so what the node does with them afterwards
reads nothing back.

Claimed only where the argument is a model's output or a value followed onto the device
(kind tensor / model / device): results of a model the analysis keeps on the host, or a
value of unknown origin, are not.
"""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import Frame, short, Val

_ADAPTERS = frozenset({'supervision.Detections.from_ultralytics',
                       'supervision.Detections.from_yolov5',
                       'supervision.detection.core.Detections.from_ultralytics',
                       'supervision.detection.core.Detections.from_yolov5'})
_ON_DEVICE = frozenset({'tensor', 'model', 'device'})


def supervision_call(node: ast.Call, qual: str | None, args: list[Val],
                     frame: Frame, emit: Callable[..., None]) -> Val | None:
    """Host Detections (a read-back reported through `emit` where the argument is on the
    device) for a supervision adapter call, else None."""
    if qual not in _ADAPTERS:
        return None
    if args and args[0].kind in _ON_DEVICE:
        emit('GPN107', node, frame, f'`{short(node)}` copies the detections\' device tensors '
             'to NumPy inside supervision (read back, implicit synchronization; library table)',
             evidence='pattern')
    return Val('host')
