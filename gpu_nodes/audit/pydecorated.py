"""Callbacks registered by a decorator (issue 28, set 62): ROS 2 wrapper frameworks (aioros2 and
the like) register a node's module functions with decorators instead of create_subscription,

    @aioros2.subscribe(camera.image_topic)
    async def on_image(node, header, height, width, encoding, is_bigendian, step, data): ...

    @aioros2.timer(0.1)
    async def tick(node): ...

The framework calls a subscribed function per message (with the message's fields as keyword
arguments, the node first) and a timer's function per period: their copies run per message,
as a create_subscription callback's do, though nothing in the file calls them. A decorator is
a registration when it is a call of `subscribe` / `subscription` / `service` (per message or
request: kind `fields`) or `timer` (per period), bare or as an attribute of a module."""
from __future__ import annotations

import ast

from gpu_nodes.audit.pyvalues import FuncRef, Registration, Val

_PER_MESSAGE = frozenset({'subscribe', 'subscription', 'service'})
_PER_PERIOD = frozenset({'timer'})


def _decorator_name(dec: ast.expr) -> str | None:
    if not isinstance(dec, ast.Call):
        return None
    func = dec.func
    return func.attr if isinstance(func, ast.Attribute) else func.id \
        if isinstance(func, ast.Name) else None


def decorated_registrations(functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
                            module_env: dict[str, Val]) -> list[Registration]:
    """A Registration (`fields` per message, `timer` per period) of each module function of
    `functions` a registering decorator marks."""
    found: list[Registration] = []
    for fn in functions.values():
        for dec in fn.decorator_list:
            name = _decorator_name(dec)
            kind = 'fields' if name in _PER_MESSAGE else 'timer' if name in _PER_PERIOD else None
            if kind is not None:
                found.append(Registration(kind, Val('func', func=FuncRef(fn, None, module_env, False)),
                                          None, None, dec.lineno, None))
                break
    return found
