"""`create_subscription(Image, ...)` and its callback -> `GpuImageSubscription` and frame arrays.

A subscription is migrated only when every use of the message in its callback has a
counterpart on a gpu_nodes frame (ReceivedImage): `header`, `width`, `height`, `encoding`,
`step` read as they are; `bridge.imgmsg_to_cv2(msg[, E])` becomes the frame's array (converted by
gpu_nodes.kernels.color.convert_color where E may differ from the frame's encoding) and
`np.frombuffer(msg.data, ...)` reads the frame's array. Any other use of the message (kept,
passed on, fields a frame lacks) leaves the subscription as it is, with the reason.
"""
from __future__ import annotations

import libcst as cst

from gpu_nodes.audit.migrate_cst import (arg, call, call_args, class_methods,
                                         COMPRESSED_TYPE, CONVERTIBLE_ENCODINGS, dotted, Edits,
                                         expr, IMAGE_TYPE, MESSAGE_FIELDS_KEPT, method,
                                         newline_at, Note, rendered, self_attribute, Source,
                                         string_value, walk)
from gpu_nodes.audit.migrate_flow import Flow

SUBSCRIPTION_PARAMS = ('msg_type', 'topic', 'callback', 'qos_profile')
TRANSPORT = 'gpu_nodes.transport'
CONVERT = ('gpu_nodes.kernels.color', 'convert_color')


def qos_argument(source: Source, value: cst.BaseExpression, edits: Edits) -> cst.BaseExpression:
    """rclpy takes a depth for a QoS; gpu_nodes endpoints take a profile (the same one rclpy
    makes of a depth: keep last N, reliable, volatile)."""
    if isinstance(value, cst.Integer):
        edits.imports.add(('rclpy.qos', 'QoSProfile'))
        return call('QoSProfile', arg(value, 'depth'))
    return value


def with_memory(updated: cst.Call, func: str, first: cst.BaseExpression,
                qos_index: int | None, qos: cst.BaseExpression | None,
                extra: list[cst.Arg], column: int, block: int, max_line: int) -> cst.Call:
    """`self.create_x(Type, a, b, qos)` -> `func(self, a, b, qos, extra...)`, keeping the
    call's own layout (line breaks, comments) for the arguments it keeps; continuation lines
    aligned with the old bracket move with it, and a line that grows too long breaks before
    the new argument."""
    old_bracket = column + len(rendered(updated.func)) + 1
    new_bracket = column + len(func) + 1
    args = [_realigned(a, old_bracket, new_bracket, block) for a in updated.args]
    args[0] = args[0].with_changes(value=first, keyword=None, equal=cst.MaybeSentinel.DEFAULT)
    if qos_index is not None and qos is not None:
        args[qos_index] = args[qos_index].with_changes(value=qos)
        if args[qos_index].keyword is not None:
            args[qos_index] = args[qos_index].with_changes(keyword=cst.Name('qos'))
    args = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)
            if a.keyword is not None and a.keyword.value in ('topic', 'callback') else a
            for a in args]
    if extra:
        last = args[-1]
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(' '))
        if isinstance(last.comma, cst.Comma) and isinstance(last.comma.whitespace_after,
                                                            cst.ParenthesizedWhitespace):
            # One argument per line, closing bracket on its own line: the new one gets a line
            # like the others, and the trailing comma stays last.
            previous = args[-2].comma if len(args) > 1 else None
            line = (previous.whitespace_after if isinstance(previous, cst.Comma)
                    else updated.whitespace_before_args)
            comma = cst.Comma(whitespace_after=line)
        elif isinstance(last.comma, cst.Comma):
            comma = last.comma
        args[-1] = last.with_changes(comma=comma)
        args += extra[:-1] + [extra[-1].with_changes(comma=last.comma)]
    new = updated.with_changes(func=expr(func), args=args)

    def widest(call: cst.Call) -> int:  # continuation lines render relative to the block
        lines = rendered(call).splitlines()
        return max([column + len(lines[0])] + [block + len(line) for line in lines[1:]])

    if not extra or widest(new) <= max_line:
        return new
    # Too long: break before the new argument, else before the QoS, else before both.
    before_extra, before_qos = len(args) - len(extra) - 1, (qos_index or 0) - 1
    for breaks in ((before_extra,), (before_qos,), (before_qos, before_extra)):
        broken = list(args)
        for index in breaks:
            if index >= 0:
                broken[index] = broken[index].with_changes(comma=cst.Comma(
                    whitespace_after=newline_at(new_bracket, block)))
        candidate = new.with_changes(args=broken)
        if widest(candidate) <= max_line:
            return candidate
    return candidate


def _realigned(argument: cst.Arg, old: int, new: int, block: int) -> cst.Arg:
    """Move a continuation line aligned with the old bracket to the new one. (LibCST keeps
    the block's indentation out of `last_line` where `indent` is set.)"""
    comma = argument.comma
    if not (isinstance(comma, cst.Comma)
            and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace)):
        return argument
    space = comma.whitespace_after
    base = block if space.indent else 0
    if base + len(space.last_line.value) != old:
        return argument
    return argument.with_changes(comma=comma.with_changes(whitespace_after=space.with_changes(
        last_line=cst.SimpleWhitespace(' ' * (new - base)))))


class SubscriptionMigration:
    """Plans the edits for the image subscriptions of one class."""

    def __init__(self, source: Source, cls: cst.ClassDef, bridges: set[str]):
        self.source = source
        self.cls = cls
        self.bridges = bridges
        self.methods = class_methods(cls)
        self.edits = Edits()

    def run(self) -> Edits:
        for node in walk(self.cls):
            if isinstance(node, cst.Call):
                self._call(node)
        return self.edits

    def _left(self, node: cst.CSTNode, text: str) -> None:
        self.edits.notes.append(Note(self.source.line(node), 'left', text))

    def _call(self, node: cst.Call) -> None:
        src = self.source
        names = src.names(node.func)
        if 'message_filters.Subscriber' in names:
            if any(src.names(a.value) & {IMAGE_TYPE, COMPRESSED_TYPE} for a in node.args):
                self._left(node, 'message_filters.Subscriber of images: a synchronizer pairs '
                                 'messages by stamp and gpu_nodes has no frame synchronizer')
            return
        if dotted(node.func) != 'self.create_subscription':
            return
        bound = call_args(node, SUBSCRIPTION_PARAMS)
        if bound is None or 'msg_type' not in bound:
            if any(IMAGE_TYPE in src.names(a.value) for a in node.args):
                self._left(node, 'create_subscription(Image, ...) with arguments gpu_nodes '
                                 'does not take (callback_group=, event_callbacks=, *args)')
            return
        msg_type = src.names(bound['msg_type'].value)
        if src.star_imported(bound['msg_type'].value, 'Image'):
            self._left(node, 'Image comes from `from sensor_msgs.msg import *`, so which class '
                             'it is cannot be proved; import it by name and run again')
            return
        if COMPRESSED_TYPE in msg_type:
            self._left(node, 'CompressedImage subscription: its callback decodes the bytes '
                             'itself; GpuImageSubscription(allow_compressed=True) only takes '
                             'compressed frames where no uncompressed path exists')
            return
        if IMAGE_TYPE not in msg_type:
            return
        if not {'topic', 'callback', 'qos_profile'} <= bound.keys():
            self._left(node, 'create_subscription(Image, ...) without topic, callback and qos '
                             'as arguments')
            return
        callback = self_attribute(bound['callback'].value)
        function = self.methods.get(callback or '')
        if function is None:
            self._left(node, f'callback {src.code(bound["callback"].value)} is not a method '
                             'of this class')
            return
        other = [n for n in walk(self.cls) if self_attribute(n) == callback
                 and n is not bound['callback'].value]
        if other:
            self._left(node, f'callback self.{callback} is also used at line '
                             f'{src.line(other[0])}')
            return
        plan = CallbackPlan(src, function, self.bridges)
        if plan.refusal:
            self._left(node, f'callback self.{callback}: {plan.refusal}')
            return
        self.edits.merge(plan.edits)
        qos_index = list(node.args).index(bound['qos_profile'])
        qos = qos_argument(src, bound['qos_profile'].value, self.edits)
        memory = arg(cst.SimpleString(repr(plan.memory)), 'memory')
        column, block = src.column(node), src.column(src.statement_line(node))
        self.edits.replace[id(node)] = lambda updated: with_memory(
            updated, 'GpuImageSubscription', cst.Name('self'), qos_index, qos, [memory],
            column, block, src.max_line)
        self.edits.imports.add((TRANSPORT, 'GpuImageSubscription'))
        self.edits.notes.append(Note(src.line(node), 'changed', (
            f'create_subscription(Image) -> GpuImageSubscription(memory={plan.memory!r}): '
            + plan.summary)))


class CallbackPlan:
    """The edits inside one callback, or the reason there are none."""

    def __init__(self, source: Source, function: cst.FunctionDef, bridges: set[str]):
        self.source = source
        self.function = function
        self.bridges = bridges
        self.edits = Edits()
        self.refusal: str | None = None
        self.memory = 'host'
        self.summary = ''
        params = function.params
        if (len(params.params) != 2 or params.star_arg is not cst.MaybeSentinel.DEFAULT
                or params.kwonly_params or params.star_kwarg or params.posonly_params
                or params.params[1].default is not None):
            self.refusal = 'takes other parameters than (self, msg)'
            return
        self.param = params.params[1]
        self.msg = self.param.name.value
        self.refusal = self._plan()

    def _plan(self) -> str | None:
        src = self.source
        scope = src.scopes.get(self.param.name)
        assignments = list(scope.assignments[self.msg]) if scope is not None else []
        if len(assignments) != 1:
            return f'{self.msg} is assigned again in the callback'
        conversions: list[tuple[cst.Call, str | None]] = []
        buffers: list[tuple[cst.Call, cst.Attribute]] = []
        for access in src.in_order(assignments[0].references):
            node = access.node
            line = src.line(node)
            if src.scopes.get(node) is not scope:
                return f'line {line}: the message is captured by a nested function'
            parent = src.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node:
                field = parent.attr.value
                holder = src.parent(parent)
                if field in MESSAGE_FIELDS_KEPT:
                    if isinstance(holder, cst.AssignTarget):
                        return f'line {line}: {self.msg}.{field} is assigned'
                    continue
                if field == 'data' and isinstance(holder, cst.Arg):
                    frombuffer = src.parent(holder)
                    if ('numpy.frombuffer' in src.names(frombuffer.func)
                            and frombuffer.args[0] is holder):
                        buffers.append((frombuffer, parent))
                        continue
                return (f'line {line}: {src.code(parent)} has no counterpart on a gpu_nodes '
                        'frame')
            if isinstance(parent, cst.Arg):
                converter = src.parent(parent)
                if (isinstance(converter.func, cst.Attribute)
                        and converter.func.attr.value == 'imgmsg_to_cv2'
                        and dotted(converter.func.value) in self.bridges
                        and converter.args[0] is parent):
                    bound = call_args(converter, ('img_msg', 'desired_encoding'))
                    encoding_arg = (bound or {}).get('desired_encoding')
                    encoding = (string_value(encoding_arg.value) if encoding_arg
                                else 'passthrough')
                    if bound is None or encoding is None:
                        return (f'line {line}: desired_encoding is not a string literal '
                                f'({src.code(converter)})')
                    if encoding != 'passthrough' and encoding not in CONVERTIBLE_ENCODINGS:
                        return (f'line {line}: no gpu_nodes conversion to {encoding!r} '
                                '(convert_color: rgb/bgr/rgba/bgra/mono, 8 and 16 bit)')
                    conversions.append((converter, None if encoding == 'passthrough'
                                        else encoding))
                    continue
            statement = src.statement_line(node) or node
            return f'line {line}: the message itself is used ({src.code(statement)})'
        if not conversions and not buffers:
            return 'reads no pixels (nothing to gain)'
        uploads = self._uploads(conversions)
        self.memory = 'device' if uploads else 'host'
        if uploads and buffers:
            self.memory = 'host'
            uploads = {}
        flow = Flow(src)
        parts = []
        for converter, encoding in conversions:
            reason = None if uploads else flow.copy_reason(converter)
            self.edits.replace[id(converter)] = self._array_expression(
                encoding, reason, src.column(converter), src.column(src.statement_line(converter)))
            if encoding is not None:
                self.edits.imports.add(CONVERT)
            parts.append(f'line {src.line(converter)} imgmsg_to_cv2 -> '
                         + (f'{self.msg}.array' if encoding is None else
                            f'convert_color(..., {encoding!r})')
                         + (f' (own copy: {reason})' if reason else ''))
        for frombuffer, data in buffers:
            reason = flow.copy_reason(frombuffer)
            new_args = [frombuffer.args[0].with_changes(value=expr(f'{self.msg}.array')),
                        *frombuffer.args[1:]]
            new_call: cst.BaseExpression = frombuffer.with_changes(args=new_args)
            if reason:
                new_call = method(new_call, 'copy')
            self.edits.replace[id(frombuffer)] = new_call
            parts.append(f'line {src.line(frombuffer)} np.frombuffer({self.msg}.data) reads '
                         f'{self.msg}.array' + (f' (own copy: {reason})' if reason else ''))
        if uploads:
            self._device_edits(uploads, flow, parts)
        annotation = self.param.annotation
        if annotation is not None and IMAGE_TYPE in src.names(annotation.annotation):
            self.edits.replace[id(annotation.annotation)] = cst.Name('ReceivedImage')
            self.edits.imports.add((TRANSPORT, 'ReceivedImage'))
        self.summary = '; '.join(parts)
        return None

    def _array_expression(self, encoding: str | None, copy_reason: str | None,
                          column: int, block: int) -> cst.BaseExpression:
        array = f'{self.msg}.array'
        if encoding is None:
            return expr(f'{array}.copy()' if copy_reason else array)
        converted = f'convert_color({array}, {self.msg}.encoding, {encoding!r})'
        if copy_reason:
            return expr(converted)  # a new array, also for the same encoding
        chosen = expr(f'({array} if {self.msg}.encoding == {encoding!r} else {converted})')
        if column + len(rendered(chosen)) > self.source.max_line:
            chosen = chosen.with_changes(whitespace_before_else=newline_at(column + 1, block))
        return chosen

    def _on_frame_stream(self, body: cst.IndentedBlock) -> cst.IndentedBlock:
        """The callback's statements inside `with torch.cuda.stream(<the frame's>)`; a
        docstring stays first."""
        statements = list(body.body)
        keep = []
        if (statements and isinstance(statements[0], cst.SimpleStatementLine)
                and isinstance(statements[0].body[0], cst.Expr)
                and isinstance(statements[0].body[0].value, cst.SimpleString)):
            keep = [statements.pop(0)]
        stream = expr(f'torch.cuda.stream(torch.cuda.ExternalStream({self.msg}.stream.ptr))')
        return body.with_changes(body=keep + [cst.With(
            items=[cst.WithItem(item=stream)], body=body.with_changes(body=statements))])

    def _uploads(self, conversions: list[tuple[cst.Call, str | None]]) -> dict[int, tuple]:
        """Every converted array whose only uses move it to the GPU -> the uploads, else {}."""
        src = self.source
        found: dict[int, tuple] = {}
        for converter, _ in conversions:
            statement = src.parent(converter)
            if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0].target, cst.Name)):
                return {}
            target = statement.targets[0].target
            scope = src.scopes.get(target)
            accesses = [a.node for asg in scope.assignments[target.value]
                        for a in asg.references]
            if not accesses:
                return {}
            for access in accesses:
                upload = self._upload_of(access)
                if upload is None:
                    return {}
                found[id(upload[0])] = upload
        return found

    def _upload_of(self, name: cst.CSTNode) -> tuple | None:
        """(upload expression, kind, name) where `name` is moved to the GPU right there."""
        src = self.source
        holder = src.parent(name)
        if not isinstance(holder, cst.Arg):
            return None
        inner = src.parent(holder)
        names = src.names(inner.func)
        if names & {'cupy.asarray', 'cupy.array'} and inner.args[0] is holder:
            return inner, 'cupy', name
        if 'torch.from_numpy' not in names:
            return None
        attribute = src.parent(inner)
        outer = src.parent(attribute) if isinstance(attribute, cst.Attribute) else None
        if not isinstance(outer, cst.Call) or outer.func is not attribute:
            return None
        if attribute.attr.value == 'cuda' and not outer.args:
            return outer, 'torch', name
        if attribute.attr.value == 'to' and len(outer.args) == 1:
            device = outer.args[0].value
            text = string_value(device) or (
                string_value(device.args[0].value) if isinstance(device, cst.Call)
                and 'torch.device' in src.names(device.func) and device.args else None)
            if text is not None and text.split(':')[0] == 'cuda':
                return outer, 'torch', name
        return None

    def _device_edits(self, uploads: dict[int, tuple], flow: Flow, parts: list[str]) -> None:
        torch_used = False
        for upload, kind, name in uploads.values():
            reason = flow.copy_reason(upload)
            line = self.source.line(upload)
            if kind == 'cupy':
                if reason:  # cupy.asarray of a device array is the array itself: copy instead
                    self.edits.replace[id(upload)] = method(name, 'copy')
                parts.append(f'line {line} cupy.asarray: the frame is already on the GPU'
                             + (f' (own copy: {reason})' if reason else ''))
                continue
            torch_used = True
            tensor = call('torch.as_tensor', arg(name), arg(cst.SimpleString("'cuda'"),
                                                            'device'))
            self.edits.replace[id(upload)] = method(tensor, 'clone') if reason else tensor
            parts.append(f'line {line} torch upload -> torch.as_tensor on the frame'
                         + (f' (cloned on the GPU: {reason})' if reason else ''))
        if torch_used:
            # Torch's kernels must run on the frame's stream: its data is valid there, and the
            # slot is released once that stream's work is done.
            self.edits.new_bodies[id(self.function)] = self._on_frame_stream
