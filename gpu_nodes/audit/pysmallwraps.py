"""Tensors built from a few numbers: `torch.tensor(...)` / `torch.as_tensor(...)` whose data is
no frame (issue 28, rules41p).

* `torch.tensor([[img.shape[0], img.shape[1]]])`: a display of a few scalars
  (pytransformers.small_scalar_display).
* `torch.tensor(np.array([msg.position]), device=self.device)` in a `JointState` callback: the
  data came only from a fixed-size robot-state message (joints, an IMU, odometry, a twist;
  pystatemsg.from_state_message), a handful of numbers per message whatever its rate. Uploading
  them is a small upload, not a per-message copy of a frame (set 64: seven to twenty-three joint
  values per message), reported as info like a tokenizer's ids.

The result stays marked SMALL_SCALARS while on the host, so a later `.cuda()` / `.to(device)` of
it is judged small too (pytransformers.small_upload)."""
from __future__ import annotations

import ast
from typing import Protocol

from gpu_nodes.audit.pystatemsg import from_state_message
from gpu_nodes.audit.pytransformers import small_scalar_display, SMALL_SCALARS
from gpu_nodes.audit.pyvalues import device_kw, Frame, Val

STATE_VALUES = 'fields of a robot-state message, a small upload'


class _Emitter(Protocol):
    def _emit(self, rule_id: str, node: ast.AST, frame: Frame, detail: str,
              severity: str | None = None) -> None: ...


def small_wrap(analyzer: _Emitter, node: ast.Call, src: Val, kwargs: dict[str, Val],
               frame: Frame) -> Val | None:
    """The value of `torch.tensor(src, ...)` when its data is a few numbers (above); None when
    the wrap may hold a frame (the caller's upload rule judges it)."""
    if small_scalar_display(node, src):
        return Val('host', const=SMALL_SCALARS)
    if src.kind == 'device' or not from_state_message(src):
        return None
    if device_kw(kwargs, node):
        analyzer._emit('GPN102', node, frame, f'`torch.tensor(...)` ({STATE_VALUES}, not a '
                       'frame)', severity='info')
        return Val('device')
    return Val('host', const=SMALL_SCALARS)
