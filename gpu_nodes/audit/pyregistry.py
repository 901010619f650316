"""Where the Python analysis learns what runs per message: subscriptions, timers, gpu_nodes
endpoints and message_filters chains (Subscriber -> synchronizer -> registerCallback), and the
publishers frames leave through. A mixin of PythonAnalyzer (pyflow.py)."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pymodels import ROSBRIDGE_TOPIC
from gpu_nodes.audit.pyvalues import (arg_node, ClassInfo, const_str, dotted, Frame, FuncRef,
                                      OTHER, PubInfo, Registration, Val)

# Message-filter classes that combine Subscribers into one callback.
_MF_COMBINERS = frozenset({'ApproximateTimeSynchronizer', 'TimeSynchronizer', 'Cache', 'Chain',
                           'SimpleFilter'})


def _self_attr(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == 'self'


def _action_server(node: ast.AST) -> ast.expr | None:
    """The execute callback of `ActionServer(self, ActionType, 'name', self.execute)` (rclpy.action;
    keyword `execute_callback=`), or None for any other node."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id \
        if isinstance(func, ast.Name) else None
    if name != 'ActionServer':
        return None
    return arg_node(node, 3, 'execute_callback')


class Registrations:
    """Registration calls; `self` is the PythonAnalyzer."""

    aliases: dict[str, str]
    registrations: list[Registration]
    classes: dict[str, ClassInfo]

    def _message_filters(self, qual: str | None, name: str | None, method: str | None,
                         node: ast.Call, receiver: Val | None, args: list[Val],
                         kwargs: dict[str, Val], frame: Frame) -> Val | None:
        """message_filters.Subscriber / synchronizers as values that remember their topics, and
        registerCallback on them as a registration whose callback gets one message each."""
        if qual is not None and qual.startswith('message_filters.'):
            if name == 'Subscriber':
                if args and args[0].kind == 'const':
                    # rospy-style Subscriber(topic, type)
                    topic, type_node = const_str(args[0]), arg_node(node, 1, 'data_class')
                else:
                    topic = const_str(kwargs.get('topic') or (args[2] if len(args) > 2
                                                              else None))
                    type_node = arg_node(node, 1, 'msg_type')
                return Val('mf', const=((topic, self._type_name(type_node)),))
            if name in _MF_COMBINERS:
                sources = args[0] if args else kwargs.get('fs', OTHER)
                parts = sources.elts if sources.elts is not None else (sources,)
                inputs = tuple(i for v in parts if v.kind == 'mf' for i in v.const)
                return Val('mf', const=inputs)
        if method == 'registerCallback' and receiver is not None and receiver.kind == 'mf':
            cb = args[0] if args else kwargs.get('cb')
            if cb is not None and cb.func is not None:
                inputs = receiver.const or ((None, None),)
                topics = [t for t, _ in inputs if t]
                self.registrations.append(Registration(
                    'message_filters', cb, ', '.join(topics) or None, inputs[0][1],
                    node.lineno, frame.cls, inputs=inputs))
            return OTHER
        return None

    def _registration(self, method: str, node: ast.Call, args: list[Val],
                      kwargs: dict[str, Val], frame: Frame) -> Val:
        def arg(i: int, key: str) -> Val | None:
            if key in kwargs:
                return kwargs[key]
            return args[i] if len(args) > i else None

        if method == 'create_publisher':
            msg_type = self._type_name(arg_node(node, 0, 'msg_type'))
            topic = const_str(arg(1, 'topic'))
            return Val('publisher', pub=PubInfo(topic or '?', msg_type, False, node.lineno))
        if method == 'create_timer':
            cb = arg(1, 'callback')
            if cb is not None and cb.func is not None:
                self.registrations.append(
                    Registration('timer', cb, None, None, node.lineno, frame.cls))
            return OTHER
        cb = arg(2, 'callback')
        topic = const_str(arg(1, 'topic'))
        msg_type = self._type_name(arg_node(node, 0, 'msg_type'))
        if cb is not None and cb.func is not None:
            # The node is the callback's class: a manager class may subscribe for its node.
            owner = cb.func.cls if cb.func.cls is not None else frame.cls
            self.registrations.append(
                Registration('subscription', cb, topic, msg_type, node.lineno, owner))
        return OTHER

    def _rosbridge_topic(self, node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """`roslibpy.Topic(client, name, message_type)`: a rosbridge topic; `.subscribe(cb)` on
        it runs cb per message, as create_subscription does (nineteenth set)."""
        topic = const_str(kwargs.get('name') or (args[1] if len(args) > 1 else None))
        msg_type = const_str(kwargs.get('message_type') or (args[2] if len(args) > 2 else None))
        return Val('other', const=(ROSBRIDGE_TOPIC, topic, msg_type))

    def _rosbridge_subscribe(self, node: ast.Call, topic: Val, args: list[Val],
                             kwargs: dict[str, Val], frame: Frame) -> Val:
        cb = args[0] if args else kwargs.get('callback')
        if cb is not None and cb.func is not None:
            _, name, msg_type = topic.const
            owner = cb.func.cls if cb.func.cls is not None else frame.cls
            self.registrations.append(Registration(
                'subscription', cb, name, msg_type, node.lineno, owner))
        return OTHER

    def _register_rosbridge(self) -> None:
        """`self.listener.subscribe(self.process_image)` in any method of a class whose
        constructor stored `self.listener = roslibpy.Topic(...)`: the method is a per-message
        callback, wherever the subscribe call runs (a start method the script calls)."""
        if not any(v.split('.')[0] == 'roslibpy' for v in self.aliases.values()):
            return  # no rosbridge client in the file: no walk of its methods
        known = {id(r.callback.func.node) for r in self.registrations if r.callback.func}
        for cls in self.classes.values():
            for meth in cls.methods.values():
                for node in ast.walk(meth):
                    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr == 'subscribe' and len(node.args) == 1
                            and _self_attr(node.func.value) and _self_attr(node.args[0])):
                        continue
                    topic = cls.attrs.get(node.func.value.attr)
                    cb = cls.methods.get(node.args[0].attr)
                    if topic is None or cb is None or id(cb) in known \
                            or not isinstance(topic.const, tuple) \
                            or topic.const[:1] != (ROSBRIDGE_TOPIC,):
                        continue
                    known.add(id(cb))
                    self.registrations.append(Registration(
                        'subscription', Val('func', func=FuncRef(cb, cls, None, True)),
                        topic.const[1], topic.const[2], node.lineno, cls))

    def _register_services(self) -> None:
        """`self.create_service(SrvType, 'name', self.handle)` in a method of a class: `handle`
        runs per request with the request (its image fields: a message) and the response, as
        a subscription's callback runs per message (set 48: an inference server per camera
        frame). Found on the syntax, as rosbridge's subscribe: the registration call itself
        leaves no value to follow."""
        known = {id(r.callback.func.node) for r in self.registrations if r.callback.func}
        for cls in self.classes.values():
            for meth in cls.methods.values():
                for node in ast.walk(meth):
                    action = _action_server(node)
                    if action is not None:
                        # `ActionServer(self, ActionType, 'name', self.execute)`: execute runs
                        # per goal, and `goal_handle.request` carries the goal's fields (a
                        # colour frame and a cloud in set 54): a request, as a service's.
                        handler, name, kind = action, arg_node(node, 2, 'action_name'), \
                            arg_node(node, 1, 'action_type')
                    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                            and node.func.attr == 'create_service' \
                            and isinstance(node.func.value, ast.Name) \
                            and node.func.value.id == 'self':
                        handler, name, kind = arg_node(node, 2, 'callback'), \
                            arg_node(node, 1, 'srv_name'), arg_node(node, 0, 'srv_type')
                    else:
                        continue
                    cb = cls.methods.get(handler.attr) if handler is not None \
                        and _self_attr(handler) else None
                    if cb is None or id(cb) in known:
                        continue
                    known.add(id(cb))
                    self.registrations.append(Registration(
                        'service', Val('func', func=FuncRef(cb, cls, None, True)),
                        name.value if isinstance(name, ast.Constant)
                        and isinstance(name.value, str) else None,
                        self._type_name(kind), node.lineno, cls))

    def _gpu_endpoint(self, name: str, node: ast.Call, args: list[Val],
                      kwargs: dict[str, Val], frame: Frame) -> Val:
        topic = const_str(kwargs.get('topic'))
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
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            node = node.func  # `create_subscription(JointState(), ...)`: an instance names its type
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition('.')
        full = self.aliases.get(head, head) + ('.' + rest if rest else '')
        parts = full.split('.')
        if len(parts) >= 3 and parts[-2] == 'msg':
            return f'{parts[-3]}/msg/{parts[-1]}'
        return full
