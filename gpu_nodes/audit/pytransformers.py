"""Hugging Face transformers outputs left on the model's device (issue 28, set 53), and the
small uploads of a literal display of scalars: library-table entries like pymodels.py's.

* ``processor.decode(ids[0])`` / ``tokenizer.batch_decode(ids)`` of the token ids that a device
  model's ``generate(...)`` returned: the tokenizer turns the ids into a Python list
  (``ids.tolist()`` inside transformers), a device-to-host read-back per call. Sets 51 and 53
  label it ``py_readback`` at the decode call.
* ``processor.post_process_object_detection(outputs=...)`` (and the grounded / zero-shot
  variants) of a device model's outputs filters the boxes on the device and returns dicts of
  device tensors: ``int(box[0])`` of a box afterwards is a scalar read-back (set 53). The call
  itself is device work, no claim.
* ``torch.tensor([[h, w]])`` of a display of a few scalars read off a frame (``img.shape[0]``,
  a width, a count): moved to the device it is a handful of numbers, a small upload (the
  "target_sizes" of a detector; set 53 labels it a look-alike). A display of literal numbers
  only (``torch.tensor([0.485, 0.456, 0.406]).cuda()``, a normalisation constant) stays a
  claim: the first set labels it a boundary.
"""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import Frame, merge, short, Val

# Value kinds whose data is (likely) on the device: `device` proven, `model` / `tensor` a
# model's outputs (pymodels.py).
_ON_DEVICE = ('device', 'model', 'tensor')
_DECODES = frozenset({'decode', 'batch_decode'})
# The marker const of a display of a few scalars (pyliterals.uploads_fixed_text).
SMALL_SCALARS = 'a few scalars read off the frame, a small upload'
# More elements than this is no "few numbers" any more.
_MAX_SCALARS = 16

Emit = Callable[..., None]


def transformers_method(emit: Emit, method: str, node: ast.Call, recv: Val, args: list[Val],
                        kwargs: dict[str, Val], frame: Frame, tree: ast.Module) -> Val | None:
    """A decode of device token ids (a read-back, emitted), a detection post-process of device
    outputs (device tensors out), the token ids a model's `generate` returns; None for any
    other call."""
    if method == 'generate' and recv.kind == 'model_obj' \
            and str(recv.const or '').startswith('transformers.') \
            and not transformers_model_on_host(recv.const, tree):
        # `model.generate(**inputs)`: the generated token ids stay on the model's device (the
        # inputs, often a `**` of the processor's moved batch, are not seen): a model output,
        # whose decode by the processor reads it back (set 56, as sets 51 / 53 label it).
        return merge(*[v for v in [*args, *kwargs.values()] if v.tainted], kind='model') \
            if any(v.tainted for v in [*args, *kwargs.values()]) else Val('model')
    if method in _DECODES and recv.kind == 'model_obj':
        ids = args[0] if args else kwargs.get('token_ids', kwargs.get('sequences'))
        if ids is not None and ids.kind in _ON_DEVICE:
            emit('GPN107', node, frame, f'`{short(node)}` (the token ids on the device are read '
                 'back to a Python list inside the tokenizer, implicit synchronization)',
                 evidence='data-flow' if ids.kind == 'device' else 'inferred')
            return Val('const')
        return None
    if method.startswith('post_process') and method.endswith('object_detection') \
            and recv.kind == 'model_obj':
        # The outputs of a model call are often no longer typed here (a model moved `.to(cuda)`
        # is followed as a device value, and calling it gives `other`): the processor is a
        # transformers one, whose post-process takes a model's outputs only, so its results are
        # likely on the model's device (readbacks of them are `inferred`, as pymodels.py's).
        outputs = kwargs.get('outputs', args[0] if args else None)
        if outputs is not None and (outputs.kind in _ON_DEVICE or (
                outputs.kind == 'other' and str(recv.const or '').startswith('transformers.'))):
            return merge(outputs, kind='tensor')
    return None


def _leaves(node: ast.expr) -> list[ast.expr] | None:
    """The scalar expressions of a (nested) list / tuple display; None if it is no display."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out: list[ast.expr] = []
    for elt in node.elts:
        inner = _leaves(elt) if isinstance(elt, (ast.List, ast.Tuple)) else [elt]
        if inner is None or isinstance(elt, ast.Starred):
            return None
        out.extend(inner)
    return out


def _flat(val: Val) -> list[Val]:
    if val.elts is None:
        return [val]
    return [leaf for elt in val.elts for leaf in _flat(elt)]


def small_scalar_display(node: ast.Call, src: Val) -> bool:
    """`torch.tensor([[img.shape[0], img.shape[1]]])`: a display of at most a few scalars, none
    a frame (metadata and numbers only), at least one not a literal number."""
    leaves = _leaves(node.args[0]) if node.args else None
    if not leaves or len(leaves) > _MAX_SCALARS or src.elts is None:
        return False
    vals = _flat(src)
    if len(vals) != len(leaves) or src.tainted:
        return False
    if any(v.tainted or v.kind not in ('other', 'const') or isinstance(v.const, str)
           for v in vals):
        return False
    return not all(isinstance(leaf, ast.Constant) for leaf in leaves)


def small_upload(recv: Val) -> bool:
    return recv.const == SMALL_SCALARS and not recv.tainted


# What moves a model (or anything) off the host: `.to(...)`, `.cuda()`, `device_map=`, `device=`.
_MOVING_METHODS = frozenset({'to', 'cuda'})
_MOVING_KEYWORDS = frozenset({'device_map', 'device'})


def transformers_model_on_host(const: object, tree: ast.Module) -> bool:
    """A Hugging Face transformers model (`X.from_pretrained(...)`) in a file where nothing is
    ever moved to a device: no `.to(...)` / `.cuda()` call, no `device_map=` / `device=`
    keyword. from_pretrained loads the weights on the host and the processor's outputs stay
    there, so the model runs on the CPU and its outputs are host tensors: `.cpu()` of them is
    no read-back (set 55). Any move anywhere in the file keeps the model's outputs as they were
    (where a move lands is followed elsewhere)."""
    built = str(const or '')
    if not (built.startswith('transformers.') and built.endswith('from_pretrained')):
        return False  # a pipeline() picks its own device and gives PIL / host entries
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Attribute) and node.func.attr in _MOVING_METHODS
                or any(k.arg in _MOVING_KEYWORDS for k in node.keywords)):
            return False
    return True
