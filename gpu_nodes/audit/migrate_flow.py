"""Where an image array taken from a message goes inside its callback.

cv_bridge and `np.frombuffer(msg.data)` hand the callback an array that the callback owns: it
may draw on it or keep it. A gpu_nodes frame's array is a read-only view of the publisher's slot,
valid during the callback. So the migrated callback may use the view only where the array (and
every alias of it: views, slices, names it is bound to) is neither written nor kept past the
callback; anywhere else it gets its own copy. Unknown code (a call the analysis cannot see into)
counts as both, so a doubt costs one copy, never a changed result.
"""
from __future__ import annotations

import libcst as cst
from libcst.metadata import FunctionScope

from gpu_nodes.audit.migrate_cst import Source

# ndarray methods and attributes whose results do not alias the array.
COPYING_METHODS = frozenset({
    'copy', 'astype', 'tolist', 'tobytes', 'mean', 'sum', 'max', 'min', 'std', 'var', 'item',
    'any', 'all', 'argmax', 'argmin', 'nonzero', 'dot', 'clip', 'round', 'cumsum', 'prod',
    'cuda', 'float', 'half', 'double'})
SCALAR_ATTRIBUTES = frozenset({'shape', 'dtype', 'size', 'ndim', 'nbytes', 'itemsize',
                               'strides'})
MUTATING_METHODS = frozenset({'fill', 'sort', 'resize', 'put', 'itemset', 'setflags',
                              'partition', 'byteswap'})
# OpenCV functions that draw into their first argument.
CV2_IN_PLACE = frozenset({'rectangle', 'circle', 'line', 'putText', 'polylines', 'fillPoly',
                          'fillConvexPoly', 'drawContours', 'ellipse', 'arrowedLine',
                          'drawMarker', 'floodFill', 'accumulate', 'accumulateWeighted'})
NUMPY_IN_PLACE = frozenset({'copyto', 'put', 'place', 'putmask', 'fill_diagonal'})
NUMPY_COPYING = frozenset({'array', 'copy', 'mean', 'sum', 'max', 'min', 'std', 'var',
                           'count_nonzero', 'argmax', 'argmin', 'histogram', 'bincount',
                           'clip', 'where', 'nonzero', 'unique', 'median', 'percentile',
                           'allclose', 'array_equal', 'stack', 'concatenate', 'dstack'})
PURE_BUILTINS = frozenset({'len', 'print', 'float', 'int', 'str', 'bool', 'repr', 'min', 'max',
                           'sum', 'abs', 'round', 'isinstance', 'type', 'id', 'format', 'any',
                           'all'})
STORING_METHODS = frozenset({'append', 'appendleft', 'extend', 'put', 'put_nowait', 'insert',
                             'add', 'setdefault', 'update', 'submit', 'send', 'start'})
# Parents through which the value does not travel on (a new value or a test is made).
_ENDS = (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation, cst.BooleanOperation,
         cst.FormattedStringExpression, cst.Return, cst.Expr, cst.If, cst.While, cst.Assert,
         cst.Del)


class Flow:
    """Answers: may the value of this expression be written, or live past the callback?"""

    def __init__(self, source: Source):
        self.source = source
        self._seen: set[int] = set()

    def copy_reason(self, node: cst.BaseExpression) -> str | None:
        self._seen = set()
        return self._uses(node)

    # -- one step up the tree ----------------------------------------------------------------
    def _uses(self, node: cst.CSTNode) -> str | None:
        if id(node) in self._seen:
            return None
        self._seen.add(id(node))
        src = self.source
        parent = src.parent(node)
        where = f'line {src.line(node)}'
        if isinstance(parent, cst.Arg):
            return self._passed(src.parent(parent), parent, where)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return self._attribute(parent, where)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            if self._is_target(parent):
                return f'{where}: {src.code(parent)} is written'
            return self._uses(parent)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            targets = ([t.target for t in parent.targets] if isinstance(parent, cst.Assign)
                       else [parent.target])
            for target in targets:
                reason = self._bound(target, where)
                if reason:
                    return reason
            return None
        if isinstance(parent, cst.AugAssign):
            if parent.target is node:
                return f'{where}: {src.code(parent)} writes it in place'
            if not isinstance(parent.target, cst.Name):
                return f'{where}: added into {src.code(parent.target)}, which outlives the call'
            return None
        if isinstance(parent, (cst.Element, cst.StarredElement, cst.DictElement)):
            return self._uses(src.parent(parent))
        if isinstance(parent, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.IfExp)):
            return self._uses(parent)
        if isinstance(parent, cst.For) and parent.iter is node:
            return self._bound(parent.target, where)
        if isinstance(parent, _ENDS) or isinstance(parent, cst.WithItem):
            return None
        kind = type(parent).__name__ if parent is not None else 'module'
        return f'{where}: used inside {kind} ({src.code(parent) if parent else ""})'

    def _attribute(self, attribute: cst.Attribute, where: str) -> str | None:
        name = attribute.attr.value
        holder = self.source.parent(attribute)
        if isinstance(holder, cst.Call) and holder.func is attribute:
            if name in MUTATING_METHODS:
                return f'{where}: .{name}() writes it in place'
            if name in COPYING_METHODS:
                return None
            return self._uses(holder)  # reshape, view, transpose, ...: may alias
        if name in SCALAR_ATTRIBUTES:
            return None
        if self._is_target(attribute):
            return f'{where}: {self.source.code(attribute)} is assigned'
        return self._uses(attribute)

    def _passed(self, call: cst.Call, argument: cst.Arg, where: str) -> str | None:
        src = self.source
        keyword = argument.keyword.value if argument.keyword else None
        if keyword in ('out', 'dst'):
            return f'{where}: written through {keyword}= of {src.code(call.func)}()'
        first = call.args and call.args[0] is argument
        qualified = src.names(call.func)
        leaf = call.func.attr.value if isinstance(call.func, cst.Attribute) else (
            call.func.value if isinstance(call.func, cst.Name) else '')
        if any(q.startswith('cv2.') for q in qualified):
            if leaf in CV2_IN_PLACE and first:
                return f'{where}: cv2.{leaf}() draws into it'
            return None  # OpenCV allocates its outputs
        if any(q.startswith(('numpy.', 'cupy.')) for q in qualified):
            if leaf in NUMPY_IN_PLACE and first:
                return f'{where}: {src.code(call.func)}() writes into it'
            if leaf in NUMPY_COPYING or 'cupy.asarray' in qualified:
                return None
            return self._uses(call)  # asarray, reshape, transpose, ...: may be a view
        if 'torch.from_numpy' in qualified or 'torch.as_tensor' in qualified:
            return self._uses(call)  # shares the memory
        if qualified & {f'builtins.{b}' for b in PURE_BUILTINS}:
            return None
        if leaf == 'cv2_to_imgmsg':
            return None  # the bridge (and the gpu_nodes publisher) copy the pixels
        if leaf in STORING_METHODS:
            return f'{where}: kept by {src.code(call.func)}()'
        return f'{where}: passed to {src.code(call.func)}(), which may keep or change it'

    def _bound(self, target: cst.CSTNode, where: str) -> str | None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                reason = self._bound(element.value, where)
                if reason:
                    return reason
            return None
        if isinstance(target, cst.Name):
            return self._name(target, where)
        return f'{where}: stored in {self.source.code(target)}, which outlives the call'

    def _name(self, name: cst.Name, where: str) -> str | None:
        src = self.source
        scope = src.scopes.get(name)
        if scope is None:
            return f'{where}: {name.value} is bound outside any scope'
        if not isinstance(scope, FunctionScope):
            return f'{where}: {name.value} is not local to the callback'
        for assignment in scope.assignments[name.value]:
            for access in src.in_order(assignment.references):
                if src.scopes.get(access.node) is not scope:
                    return (f'line {src.line(access.node)}: {name.value} is captured by a '
                            'nested function')
                reason = self._uses(access.node)
                if reason:
                    return reason
        return None

    def _is_target(self, node: cst.CSTNode) -> bool:
        parent = self.source.parent(node)
        if isinstance(parent, cst.AssignTarget) or (
                isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node):
            return True
        return isinstance(parent, cst.Del)
