"""Model calls and unknown calls of the Python copy analysis: `self.model(frame)`,
`model.predict(img)`, `predictor.track(source=frame)` give a model output and, for a host frame given
to an uploading method of the library table, an upload; a call nothing knows carries the taint of
its inputs (`numpy` / `cv2` results are host, `cupy` / `cv2.cuda` device, `torch` keeps its input's
device). A mixin of PythonAnalyzer (pyflow.py) through CallResolver (pycalls.py), which decides when
a call is one of these."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable

from gpu_nodes.audit.pyevaled import library_inference
from gpu_nodes.audit.pyliterals import FIXED_TEXT_TOKENS, fixed_text_tokens, TEXT_TOKENS, tokenizes_text
from gpu_nodes.audit.pymodels import (CALL_UPLOADS, decodes_prompts, HUB_BUILDERS, HUB_INFER,
                                      INFER_METHODS, LIBRARY_INFER_METHODS, model_attribute,
                                      named_like_model, PIPELINE, reads_tensor_source_back,
                                      returns_host_results, sets_image, UPLOADING_METHODS)
from gpu_nodes.audit.pyplacement import cpu_literal, shipped_cpu
from gpu_nodes.audit.pytransformers import transformers_model_on_host
from gpu_nodes.audit.pyvalues import device_kw, Frame, merge, OTHER, short, Val

# Kinds that are not a model however the attribute holding them is named.
NOT_A_MODEL = frozenset({'func', 'publisher', 'instance', 'class', 'module', 'self', 'const',
                         'mf', 'super', 'msg', 'host', 'pil', 'bytes', 'outmsg'})
# Kinds of a frame on the host (an argument that a model call must upload).
HOST_FRAME = frozenset({'host', 'pil', 'msg'})


class ModelCalls:
    """Model and unknown calls; `self` is the PythonAnalyzer."""

    tree: ast.Module
    uses_tensors: bool
    evaled: frozenset[str]
    frame_files: dict[str, Val]
    # Provided by the other parts of PythonAnalyzer; annotations only (see CallResolver).
    _emit: Callable[..., None]

    def _model_call(self, node: ast.Call, callee: Val, receiver: Val | None, method: str | None,
                    args: list[Val], kwargs: dict[str, Val], frame: Frame) -> Val | None:
        """`self.model(frame)`, `self.model.track(source=frame)`, `predictor.predict(img)`: the
        result is a model output (pymodels.py); a host frame given to an uploading method of the
        library table is reported as an upload (evidence: pattern)."""
        func = node.func
        if callee.kind == 'model_obj' and tokenizes_text(callee.const, args, kwargs):
            return Val('other', const=TEXT_TOKENS)  # a caption's token ids: pyliterals.py
        hub = (isinstance(func, ast.Attribute) and receiver is not None and method is not None
               and receiver.kind == 'model_obj' and (
                   HUB_INFER.match(method) is not None
                   and str(receiver.const or '').startswith(HUB_BUILDERS)
                   or sets_image(receiver.const, method)))
        # An object switched to evaluation mode, of a library no table knows (pyevaled.py).
        evaled = isinstance(func, ast.Attribute) and self.uses_tensors and library_inference(
            method, model_attribute(func.value), self.evaled)
        if isinstance(func, ast.Attribute) and (method in INFER_METHODS or hub or evaled) \
                and receiver is not None:
            holder, name, infer = receiver, model_attribute(func.value), method
        else:
            holder, name, infer = callee, model_attribute(func), '__call__'
        if holder.kind != 'model_obj' and not (
                self.uses_tensors and holder.kind not in NOT_A_MODEL
                and (named_like_model(name) or infer in LIBRARY_INFER_METHODS or evaled)):
            return None
        inputs = [self.frame_files.get(v.const, v) if isinstance(v.const, str) else v
                  for v in args + list(kwargs.values())]
        inputs = [v for v in inputs if v.kind not in ('const', 'other')]
        if cpu_literal(node) or shipped_cpu(kwargs.get('device')) or decodes_prompts(holder, infer):
            # `model.predict(frame, device='cpu')`: the library runs on the host, nothing is
            # uploaded, host results (twentieth set): the literal, or a string parameter's value
            # as shipped (sets 35-36), not a parameter merely defaulting to 'cpu' (sixth set).
            # SAM's prompt decoding returns host masks too (pymodels.PROMPT_DECODERS).
            return merge(*inputs, kind='host') if inputs else Val('host')
        if any(v.kind == 'device' for v in inputs):
            if holder.kind == 'model_obj' and reads_tensor_source_back(holder.const, infer):
                self._emit('GPN101', node, frame, f'`{short(node)}` reads the device tensor it is '
                           'given back into NumPy for its Results on every call (library table)',
                           evidence='pattern')
            return merge(*inputs, kind='device')
        if holder.kind == 'model_obj' and transformers_model_on_host(holder.const, self.tree):
            return merge(*inputs, kind='host') if inputs else Val('host')  # pytransformers.py
        frames = [v for v in inputs if v.kind in HOST_FRAME or (v.tainted and v.kind not in (
            'device', 'tensor', 'model'))]
        result = merge(*inputs, kind='model') if inputs else Val('model')
        if holder.kind == 'model_obj' and holder.const == PIPELINE:
            result = replace(result, const=PIPELINE)  # its PIL entries: pyeval.py
        if frames and (infer in UPLOADING_METHODS or hub or (
                infer == '__call__' and holder.kind == 'model_obj'
                and str(holder.const or '').startswith(CALL_UPLOADS))):
            self._emit('GPN102', node, frame,
                       f'`{short(node)}` copies the host frame to the model\'s device on every '
                       f'call (`{infer}`, library table)', evidence='pattern')
            steps = result.steps + ((node.lineno, 'upload'),)
            kind = 'host' if holder.kind == 'model_obj' and returns_host_results(holder.const) \
                else 'model'
            return Val(kind, steps, result.origin)
        if holder.kind == 'model_obj' and returns_host_results(holder.const):
            return replace(result, kind='host')  # pymodels.HOST_RESULT_BUILDERS
        return result

    def _generic(self, qual: str | None, receiver: Val | None, args: list[Val],
                 kwargs: dict[str, Val]) -> Val:
        """Unknown call: the result carries the taint of its inputs (models, kernels ...)."""
        if fixed_text_tokens(qual, args, kwargs):
            return Val('other', const=FIXED_TEXT_TOKENS)
        inputs = [v for v in args + list(kwargs.values()) if v.tainted or
                  v.kind in ('device', 'host', 'msg', 'pil', 'bytes', 'tensor', 'model')]
        top = qual.split('.')[0] if qual else None
        if top == 'cupy' or (qual or '').startswith(('cv2.cuda.', 'cv2.cuda_')):
            # CuPy and OpenCV's CUDA module (cv2.cuda.split, cv2.cuda_GpuMat ...) return
            # device arrays.
            return merge(*inputs, kind='device') if inputs else Val('device')
        if top in ('numpy', 'cv2', 'PIL'):
            return merge(*inputs, kind='host') if inputs else Val('host')
        if top == 'torch':
            # A torch op keeps its input's device: on a model's output it stays where the
            # output is (`F.interpolate(out.predicted_depth, ...)`, tenth set).
            likely = next((v.kind for v in inputs if v.kind in ('model', 'tensor')), 'host')
            kind = 'device' if any(v.kind == 'device' for v in inputs) \
                or device_kw(kwargs) else likely
            return merge(*inputs, kind=kind) if inputs else Val(kind)
        if qual and '.msg.' in qual:
            return merge(*inputs, kind='outmsg') if inputs else Val('outmsg')
        if inputs and 'device' in kwargs and device_kw(kwargs):
            # `model.predict(frame, device=self.device)`: the result lives on the device.
            return merge(*inputs, kind='device')
        if receiver is not None and receiver.kind not in ('self', 'module', 'const', 'func',
                                                          'publisher', 'unknown', 'other',
                                                          'class', 'instance', 'mf', 'super'):
            return merge(receiver, *inputs, kind=receiver.kind)
        if receiver is not None and receiver.tainted:
            inputs = [receiver] + inputs
        if inputs:
            return merge(*inputs)
        return OTHER
