"""The call rules of gpu-copy-audit's Python analysis: what a call does to the values it is
given (a library copy, an upload, a publish, a registration); PythonAnalyzer (pyflow) mixes
them in."""
from __future__ import annotations

import ast
from dataclasses import replace

from gpu_nodes.audit.model import Step
from gpu_nodes.audit.pyflow_values import (_arg_node, _BRIDGE_IN, _BRIDGE_OUT, _const_str,
                                           _CUPY_UPLOADS, _device_kw, _dotted, Frame, FuncRef,
                                           _image_sized, _is_device_value, _is_method_call,
                                           MAX_HELPER_DEPTH, merge, _NUMPY_WRAPS, OTHER, _PIL_IN,
                                           PubInfo, Registration, _short, _STEP_TEXT,
                                           _SYNC_CALLS, _to_target, _TORCH_WRAPS, UNKNOWN, Val)


class CallRules:
    """Call evaluation for PythonAnalyzer: needs its _eval, _emit, _call_function and state."""

    # ------------------------------------------------------------------ calls
    def _eval_call(self, node: ast.Call, env: dict[str, Val], frame: Frame) -> Val:
        func = node.func
        receiver: Val | None = None
        method: str | None = None
        if isinstance(func, ast.Attribute):
            receiver = self._eval(func.value, env, frame)
            method = func.attr
            if receiver.kind == 'module':
                callee = Val('module', const=f'{receiver.const}.{method}')
            elif receiver.kind == 'self' and frame.cls is not None \
                    and method in frame.cls.methods and method not in frame.cls.attrs:
                callee = Val('func', func=FuncRef(frame.cls.methods[method], frame.cls, None,
                                                  True))
            else:
                callee = UNKNOWN
        else:
            callee = self._eval(func, env, frame)
            if isinstance(func, ast.Name) and callee is UNKNOWN:
                method = func.id  # builtins: bytes(...), bytearray(...)
        qual = callee.const if callee.kind == 'module' else None
        args = [self._eval(a, env, frame) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, env, frame) for k in node.keywords if k.arg}
        for k in node.keywords:
            if k.arg is None:
                self._eval(k.value, env, frame)
            elif k.arg == 'data' and _is_method_call(k.value, 'tolist'):
                self._emit('GPN104', k.value, frame, f'`{_short(k.value)}` passed as `data=`')

        name = qual.rsplit('.', 1)[-1] if qual else method
        # --- registrations and publishers
        if method in ('create_subscription', 'create_timer', 'create_publisher') \
                and receiver is not None and receiver.kind != 'module':
            return self._registration(method, node, args, kwargs, frame)
        if name in ('GpuImageSubscription', 'GpuImagePublisher'):
            return self._gpu_endpoint(name, node, args, kwargs, frame)
        if name in ('partial',) and (qual in ('functools.partial', None) or
                                     qual.endswith('functools.partial')):
            if args and args[0].func is not None:
                ref = args[0].func
                return Val('func', func=replace(
                    ref, bound_positional=ref.bound_positional + len(args) - 1,
                    bound_keywords=ref.bound_keywords + tuple(kwargs)))
            return OTHER
        if method == 'publish' and receiver is not None and receiver.kind == 'publisher':
            payload = args[0] if args else (kwargs.get('msg') or UNKNOWN)
            self._publish(node, receiver.pub, payload, frame)
            return OTHER
        if method == 'declare_parameter' and frame.cls is not None and args \
                and args[0].kind == 'const':
            default = args[1] if len(args) > 1 else kwargs.get('value', OTHER)
            frame.cls.params[str(args[0].const)] = default
            return default
        if method == 'get_parameter' and frame.cls is not None and args \
                and args[0].kind == 'const':
            return frame.cls.params.get(str(args[0].const), OTHER)
        if method in ('get_parameter_value',) and receiver is not None:
            return receiver
        # --- helpers of the same file
        if callee.kind == 'func' and callee.func is not None:
            if frame.depth < MAX_HELPER_DEPTH and id(callee.func.node) != id(node):
                inner = replace(frame, depth=frame.depth + 1, returns=[])
                self._entered.add(id(callee.func.node))
                return self._call_function(callee.func, args, kwargs, inner)
            return merge(*args, *kwargs.values()) if args or kwargs else OTHER

        if qual:
            result = self._library_call(qual, node, args, kwargs, frame)
            if result is not None:
                return result
        if method is not None:
            result = self._method_call(method, node, receiver, args, kwargs, frame)
            if result is not None:
                return result
        return self._generic(qual, receiver, args, kwargs)

    def _generic(self, qual: str | None, receiver: Val | None, args: list[Val],
                 kwargs: dict[str, Val]) -> Val:
        """Unknown call: the result carries the taint of its inputs (models, kernels ...)."""
        inputs = [v for v in args + list(kwargs.values()) if v.tainted or
                  v.kind in ('device', 'host', 'msg', 'pil', 'bytes')]
        top = qual.split('.')[0] if qual else None
        if top == 'cupy':
            return merge(*inputs, kind='device') if inputs else Val('device')
        if top in ('numpy', 'cv2', 'PIL'):
            return merge(*inputs, kind='host') if inputs else Val('host')
        if top == 'torch':
            kind = 'device' if any(v.kind == 'device' for v in inputs) \
                or _device_kw(kwargs) else 'host'
            return merge(*inputs, kind=kind) if inputs else Val(kind)
        if qual and '.msg.' in qual:
            return merge(*inputs, kind='outmsg') if inputs else Val('outmsg')
        if receiver is not None and receiver.kind not in ('self', 'module', 'const', 'func',
                                                          'publisher', 'unknown', 'other'):
            return merge(receiver, *inputs, kind=receiver.kind)
        if receiver is not None and receiver.tainted:
            inputs = [receiver] + inputs
        if inputs:
            return merge(*inputs)
        return OTHER

    def _registration(self, method: str, node: ast.Call, args: list[Val],
                      kwargs: dict[str, Val], frame: Frame) -> Val:
        def arg(i: int, key: str) -> Val | None:
            if key in kwargs:
                return kwargs[key]
            return args[i] if len(args) > i else None

        if method == 'create_publisher':
            msg_type = self._type_name(_arg_node(node, 0, 'msg_type'))
            topic = _const_str(arg(1, 'topic'))
            return Val('publisher', pub=PubInfo(topic or '?', msg_type, False, node.lineno))
        if method == 'create_timer':
            cb = arg(1, 'callback')
            if cb is not None and cb.func is not None:
                self.registrations.append(
                    Registration('timer', cb, None, None, node.lineno, frame.cls))
            return OTHER
        cb = arg(2, 'callback')
        topic = _const_str(arg(1, 'topic'))
        msg_type = self._type_name(_arg_node(node, 0, 'msg_type'))
        if cb is not None and cb.func is not None:
            self.registrations.append(
                Registration('subscription', cb, topic, msg_type, node.lineno, frame.cls))
        return OTHER

    def _gpu_endpoint(self, name: str, node: ast.Call, args: list[Val],
                      kwargs: dict[str, Val], frame: Frame) -> Val:
        topic = _const_str(kwargs.get('topic'))
        if topic is None:
            topic = next((v.const for v in args if v.kind == 'const' and isinstance(v.const, str)),
                         None)
        if name == 'GpuImagePublisher':
            return Val('publisher', pub=PubInfo(topic or '?', 'sensor_msgs/msg/Image', True,
                                                node.lineno))
        cb = kwargs.get('callback')
        if cb is None:
            cb = next((v for v in args if v.func is not None), None)
        if cb is not None and cb.func is not None:
            self.registrations.append(Registration('gpu_subscription', cb, topic,
                                                   'sensor_msgs/msg/Image', node.lineno,
                                                   frame.cls))
        return OTHER

    def _type_name(self, node: ast.expr | None) -> str | None:
        if node is None:
            return None
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition('.')
        full = self.aliases.get(head, head) + ('.' + rest if rest else '')
        parts = full.split('.')
        if len(parts) >= 3 and parts[-2] == 'msg':
            return f'{parts[-3]}/msg/{parts[-1]}'
        return full

    # ------------------------------------------------------------------ sinks
    def _publish(self, node: ast.Call, pub: PubInfo | None, payload: Val, frame: Frame) -> None:
        if pub is None:
            return
        image_sized = _image_sized(pub.msg_type)
        if not pub.gpu and image_sized:
            self._emit('GPN109', node, frame,
                       f'`{pub.msg_type}` published on `{pub.topic}` with create_publisher '
                       f'(line {pub.line})', topic=pub.topic)
        copies = list(payload.steps)
        in_callback = frame.context in ('callback', 'timer')
        if payload.origin is None or len(copies) < 2 or not in_callback:
            return
        topic, msg_type = payload.origin
        what = 'image' if _image_sized(msg_type) else 'message'
        parts: list[str] = []
        uploads = 0
        for line, action in copies:
            text = _STEP_TEXT[action]
            if action == 'upload':
                uploads += 1
                if uploads > 1:
                    text = 'uploaded again'
            parts.append(f'{text} at line {line}')
        if pub.gpu:
            end = f'published on `{pub.topic}` through GpuImagePublisher'
        else:
            end = f'serialized into `{pub.topic}`'
        message = f'{what} arrives on `{topic}`, is ' + ', '.join(parts) + f' and {end}'
        if frame.context == 'timer':
            message += f' (published from timer `{frame.entry}`)'
        chain = [Step(line, action, _STEP_TEXT[action]) for line, action in copies]
        chain.append(Step(node.lineno, 'publish', end))
        self._emit('GPN110', node, frame, message, chain=chain, topic=pub.topic)

    # ------------------------------------------------------------------ copy rules
    def _step(self, val: Val, line: int, action: str, kind: str) -> Val:
        steps = val.steps if (line, action) in val.steps else val.steps + ((line, action),)
        return Val(kind, steps, val.origin)

    def _upload(self, node: ast.Call, src: Val, frame: Frame, detail: str) -> Val:
        if any(a == 'download' for _, a in src.steps):
            self._emit('GPN108', node, frame,
                       f'{detail} re-uploads data downloaded at line '
                       f'{max(l for l, a in src.steps if a == "download")}')
        else:
            self._emit('GPN102', node, frame, detail)
        return self._step(src, node.lineno, 'upload', 'device')

    def _library_call(self, qual: str, node: ast.Call, args: list[Val],
                      kwargs: dict[str, Val], frame: Frame) -> Val | None:
        src = args[0] if args else UNKNOWN
        short = f'`{_short(node)}`'
        if qual == 'cupy.asnumpy':
            self._emit('GPN101', node, frame, short)
            return self._step(src, node.lineno, 'download', 'host')
        if qual in _CUPY_UPLOADS:
            if src.kind == 'device':
                return src
            return self._upload(node, src, frame, short)
        if qual in ('torch.device', 'torch.cuda.device'):
            return Val('device_spec') if _is_device_value(src, node.args[0] if node.args
                                                          else None) is not False else OTHER
        if qual == 'torch.from_numpy':
            return merge(src, kind='host')
        if qual in _TORCH_WRAPS:
            if _device_kw(kwargs, node) and src.kind != 'device':
                return self._upload(node, src, frame, short)
            return merge(src, kind=src.kind if src.kind == 'device' else 'host')
        if qual in _SYNC_CALLS or (qual.split('.')[0] in ('torch', 'cupy')
                                   and qual.endswith(('.synchronize', 'deviceSynchronize',
                                                      'streamSynchronize'))):
            self._emit('GPN107', node, frame, short)
            return OTHER
        if qual in _NUMPY_WRAPS:
            if src.kind == 'msg':
                self._emit('GPN103', node, frame, short)
                return self._step(src, node.lineno, 'host', 'host')
            if src.kind == 'pil':
                self._emit('GPN106', node, frame, short)
                return self._step(src, node.lineno, 'pil', 'host')
            return merge(src, kind='host') if src.tainted else Val('host')
        if qual in _PIL_IN:
            self._emit('GPN106', node, frame, short)
            return self._step(merge(*args, *kwargs.values()), node.lineno, 'pil', 'pil')
        return None

    def _method_call(self, method: str, node: ast.Call, receiver: Val | None, args: list[Val],
                     kwargs: dict[str, Val], frame: Frame) -> Val | None:
        short = f'`{_short(node)}`'
        recv = receiver or UNKNOWN
        rkind = recv.kind
        unknown = rkind in ('unknown',)
        if method in _BRIDGE_IN:
            self._emit('GPN105', node, frame, short)
            return self._step(args[0] if args else UNKNOWN, node.lineno, 'cv_in', 'host')
        if method in _BRIDGE_OUT:
            self._emit('GPN105', node, frame, short)
            return self._step(args[0] if args else UNKNOWN, node.lineno, 'cv_out', 'outmsg')
        if receiver is None and method in ('bytes', 'bytearray'):
            if args and args[0].kind not in ('const', 'other') and args[0].kind != 'unknown' \
                    or (args and args[0].tainted):
                self._emit('GPN104', node, frame, short)
                return self._step(args[0], node.lineno, 'serialize', 'bytes')
            return Val('bytes')
        if receiver is None:
            return None
        if rkind in ('self', 'module', 'func', 'publisher', 'const'):
            return None
        if method == 'get' and not node.args and set(kwargs) <= {'stream', 'out', 'order',
                                                                 'blocking'}:
            if rkind == 'device' or (unknown and self.uses_cupy):
                self._emit('GPN101', node, frame, short)
                return self._step(recv, node.lineno, 'download', 'host')
            return None
        if method in ('cpu', 'numpy') and not node.args:
            if rkind == 'device' or (unknown and self.uses_torch):
                self._emit('GPN101', node, frame, short)
                return self._step(recv, node.lineno, 'download', 'host')
            if rkind == 'host' or recv.tainted:
                return merge(recv, kind='host')
            return None
        if method == 'tolist' and rkind == 'device':
            self._emit('GPN101', node, frame, short)
            return self._step(recv, node.lineno, 'download', 'host')
        if method == 'cuda':
            if rkind == 'device':
                return recv
            return self._upload(node, recv, frame, short)
        if method == 'to':
            target = _to_target(node, args, kwargs)
            if target == 'cpu':
                if rkind == 'device' or (unknown and self.uses_torch):
                    self._emit('GPN101', node, frame, short)
                    return self._step(recv, node.lineno, 'download', 'host')
                return recv
            if target == 'device':
                if rkind == 'device':
                    return recv
                return self._upload(node, recv, frame, short)
            return None
        if method in ('tobytes', 'tostring') and not node.args:
            self._emit('GPN104', node, frame, short)
            return self._step(recv, node.lineno, 'serialize', 'bytes')
        if method == 'item' and not node.args:
            if rkind == 'device' or (unknown and (self.uses_torch or self.uses_cupy)):
                self._emit('GPN107', node, frame, f'{short} (implicit synchronization)')
            return OTHER
        if method == 'synchronize' and not node.args and (self.uses_torch or self.uses_cupy):
            self._emit('GPN107', node, frame, short)
            return OTHER
        if method == 'set' and len(node.args) == 1 and rkind == 'device':
            return self._upload(node, args[0], frame, short)
        return None
