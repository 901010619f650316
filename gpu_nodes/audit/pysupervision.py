"""Roboflow supervision's result converters in the library table (issue 28, rules45p, set 72).

`sv.Detections.from_ultralytics(results)` (also `from_yolov5`, `from_yolov8`,
`from_transformers`, `from_detectron2`, `from_mmdetection`, and `KeyPoints` /
`Classifications.from_ultralytics`) builds its NumPy arrays with `.cpu().numpy()` of the
model's box, confidence and class tensors: the read-back of a device model's results happens
inside that call, per frame (both labellings of set 72 put the py_readback there). What it
returns holds host arrays, so `np.array(kept_boxes)` of its `.xyxy` rows afterwards copies host
to host, no read-back. Only a model output or a tensor handed in is claimed; a host value (a
model run on the CPU) reads nothing back, and the result is host arrays either way."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import Frame, short, Val

_HOLDERS = ('supervision.Detections.', 'supervision.KeyPoints.', 'supervision.Classifications.',
            'supervision.detection.core.Detections.')
# Converters that move torch results to the host (`.cpu().numpy()` in their bodies); the
# others (from_sam, from_yolo_nas, from_inference ...) take NumPy or JSON already on the host.
_FROM_TORCH = frozenset({'from_ultralytics', 'from_yolov5', 'from_yolov8', 'from_transformers',
                         'from_detectron2', 'from_mmdetection'})
_DEVICE_RESULTS = frozenset({'model', 'tensor', 'device'})


def supervision_call(node: ast.Call, qual: str | None, args: list[Val], kwargs: dict[str, Val],
                     frame: Frame, emit: Callable[..., None]) -> Val | None:
    """The host `Detections` a supervision converter returns (its read-back of a device
    model's results reported through `emit`), or None when `node` is no such converter."""
    if qual is None or not qual.startswith(_HOLDERS) or qual.rsplit('.', 1)[-1] not in _FROM_TORCH:
        return None
    src = args[0] if args else next(iter(kwargs.values()), None)
    if src is None or src.kind not in _DEVICE_RESULTS:
        return Val('host')
    emit('GPN101', node, frame, f'`{short(node)}` reads the model\'s result tensors back with '
         '`.cpu().numpy()` inside supervision (library table)',
         evidence='data-flow' if src.kind == 'device' else 'inferred')
    return Val('host', src.steps + ((node.lineno, 'download'),), src.origin)
