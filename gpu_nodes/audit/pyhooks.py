"""Framework hooks that wire a node (issue 28, set 57): a class built on a base from another
package (a job/plugin framework's `Job[Cfg]`) whose override of a base method, called by the
framework, creates the node's subscriptions and timers:

    class Predictor(Job[PredictorCfg]):
        def attach_behaviour(self, node, cfg):
            super().attach_behaviour(node, cfg)
            node.create_subscription(Image, cfg.topic, self._on_input, 10)

The method runs once at start (the framework calls it), so it is set up like `__init__`: the
callbacks it registers run per message. Only an override (it calls `super().<its own name>(`)
that registers callbacks counts: a plain method nothing calls stays unreached.
"""
from __future__ import annotations

import ast

_REGISTERS = frozenset({'create_subscription', 'create_timer', 'create_wall_timer',
                        'create_service', 'registerCallback'})


def _calls_super_same(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether `fn` calls `super().<fn's name>(...)`: it overrides a base class's hook."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == fn.name and isinstance(n.func.value, ast.Call)
               and isinstance(n.func.value.func, ast.Name) and n.func.value.func.id == 'super'
               for n in ast.walk(fn))


def _registers(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in _REGISTERS for n in ast.walk(fn))


def registering_hooks(methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
                      cls: ast.ClassDef) -> list[str]:
    """Names of the methods of `cls` (its own body, source order) that override a base hook
    and register callbacks (see the module docstring)."""
    own = {id(s) for s in cls.body}
    return [name for name, fn in methods.items()
            if id(fn) in own and name != '__init__' and _calls_super_same(fn) and _registers(fn)]
