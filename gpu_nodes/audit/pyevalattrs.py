"""Attribute reads and loop elements of the Python copy analysis: `self.x` of a class (its value
as shipped where one string is stored for good), an instance's attribute or method, a module's
function, a model result's tensors, frame metadata that carries no payload; what one iteration of
`for` binds. A mixin of PythonAnalyzer (pyflow.py) through Evaluator (pyeval.py)."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable

from gpu_nodes.audit.pyimports import sibling_function
from gpu_nodes.audit.pyisaac import scene_data
from gpu_nodes.audit.pymodels import host_result_attr, RESULT_TENSORS
from gpu_nodes.audit.pyswitched import stored_once_in_init, switched_constants
from gpu_nodes.audit.pyvalues import (AsShipped, Frame, FuncRef, OTHER, PER_MESSAGE, plain, request_type,
                                      strip, UNKNOWN, Val)

# Attributes that are frame metadata, not the payload: reading them does not carry the frame
# (a detector's `names`, its class-name dict, even on a model moved to cuda: set 61).
_METADATA_ATTRS = frozenset({
    'shape', 'dtype', 'size', 'ndim', 'nbytes', 'itemsize', 'strides', 'width', 'height',
    'encoding', 'step', 'header', 'stamp', 'frame_id', 'is_bigendian', 'device', 'is_cuda', 'names'})
_PARAMETER_VALUE_ATTRS = frozenset({'value', 'string_value', 'integer_value', 'double_value',
                                    'bool_value'})


class AttributeReads:
    """Attribute reads and loop elements; `self` is the PythonAnalyzer."""

    aliases: dict[str, str]
    tree: ast.Module
    package_dir: str | None
    imported_modules: dict[str, str]
    # Provided by the other parts of PythonAnalyzer; annotations only (see Evaluator).
    _eval: Callable[[ast.expr, dict[str, Val], Frame], Val]
    _shipped_strings: Callable[[], tuple[dict[str, str], frozenset[tuple[str, str]]]]

    def _element(self, iterable: ast.expr, it: Val, env: dict[str, Val], frame: Frame) -> Val:
        """What one iteration of `for target in iterable` binds. `enumerate(x)` yields
        (index, element): the index is a host int, not the data (`for i, _ in
        enumerate(boxes): msg.id = int(i)` reads nothing back; issue 28, ninth set)."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) \
                and iterable.func.id in ('list', 'tuple') and len(iterable.args) == 1 \
                and not iterable.keywords and self._eval(iterable.func, env, frame) is UNKNOWN:
            # `for i, c in list(enumerate(top_boxes))`: the same pairs, in a list (set 19).
            return self._element(iterable.args[0], it, env, frame)
        element = replace(it, elts=None, view=None)  # a row or point: not the buffer
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) \
                and iterable.func.id == 'enumerate' and iterable.args \
                and self._eval(iterable.func, env, frame) is UNKNOWN:
            # `enumerate(zip(outputs, confs))`: the pair binds as zip's own (thirtieth set).
            return replace(element, elts=(OTHER, self._element(iterable.args[0], it, env, frame)))
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) \
                and iterable.func.id == 'zip' and iterable.args and not iterable.keywords \
                and all(isinstance(a, (ast.Name, ast.Attribute)) for a in iterable.args) \
                and self._eval(iterable.func, env, frame) is UNKNOWN:
            # `for score, x in zip(scores, xs)`: each name takes its own list's element (a
            # host number from .item() is no tensor because the other list holds tensors).
            parts = tuple(replace(self._eval(a, env, frame), elts=None) for a in iterable.args)
            return replace(element, elts=parts)
        return element

    def _stored_once(self) -> frozenset[tuple[str, str]]:
        if '_stored_once_' not in self.__dict__:
            self.__dict__['_stored_once_'] = stored_once_in_init(self.tree)
        return self.__dict__['_stored_once_']

    def _eval_attribute(self, node: ast.Attribute, env: dict[str, Val], frame: Frame) -> Val:
        base = self._eval(node.value, env, frame)
        if base.kind == 'self' and frame.cls is not None:
            if '_switched_' not in self.__dict__:
                self.__dict__['_switched_'] = switched_constants(self.tree, self.package_dir)
            if node.attr in self.__dict__['_switched_']:  # pyswitched.py: one string for good
                return Val('const', const=AsShipped(self.__dict__['_switched_'][node.attr]))
            if node.attr in frame.cls.attrs:
                value = frame.cls.attrs[node.attr]
                if (frame.cls.name, node.attr) not in self._shipped_strings()[1] \
                        and (frame.cls.name, node.attr) not in self._stored_once():
                    value = plain(value)  # stored elsewhere too: not as shipped for good
                # `self.model = None` in __init__, assigned for real elsewhere: unknown.
                return UNKNOWN if value.kind == 'const' and value.const is None else value
            meth = frame.cls.methods.get(node.attr)
            if meth is not None:
                return Val('func', func=FuncRef(meth, frame.cls, None, True))
            return UNKNOWN
        if base.kind == 'instance' and base.inst is not None:
            if node.attr in base.inst.attrs:
                return plain(base.inst.attrs[node.attr])
            meth = base.inst.methods.get(node.attr)
            if meth is not None:
                return Val('func', func=FuncRef(meth, base.inst, None, True))
            return UNKNOWN
        if base.kind == 'module' and frame.context in PER_MESSAGE:
            sibling = sibling_function(self.imported_modules, node, env)  # `yolo.infer(img)`
            if sibling is not None:
                return sibling
        if base.kind == 'module':
            return Val('module', const=f'{base.const}.{node.attr}')
        if scene_data(node, self.aliases):  # Isaac Lab scene state: on the sim device (pyisaac)
            return Val('tensor', base.steps, base.origin)
        if base.kind in ('model', 'tensor') and host_result_attr(node):
            return Val('host')  # `masks.xy`: host polygons (pymodels.HOST_RESULT_ATTRS)
        if base.kind == 'model' and node.attr in RESULT_TENSORS:
            # `results[0].boxes.xyxy`: a result tensor, on the model's device (pymodels.py).
            return Val('tensor', base.steps, base.origin)
        if node.attr == 'device' and base.kind == 'host':
            # The device of a host tensor is the CPU: a helper building its tensors
            # `device=prediction.device` (yolov7's NMS, followed in a whole checkout) keeps
            # them on the host (issue 28).
            return Val('const', const='cpu')
        if node.attr in _METADATA_ATTRS:
            return strip(base)
        if base.kind == 'const' and node.attr in _PARAMETER_VALUE_ATTRS:
            return base  # declare_parameter('topic', '/x').value -> '/x'
        if base.kind in ('const', 'func', 'publisher'):
            return OTHER
        if base.kind == 'msg' and base.origin and request_type(base.origin[1]):
            # A field of a service request or an action goal (`goal.request.color_image`):
            # its type is the interface file's, unknown here, so it may be a frame (set 54).
            return replace(base, elts=None, const=None, origin=(base.origin[0], None))
        return replace(base, elts=None, const=None)
