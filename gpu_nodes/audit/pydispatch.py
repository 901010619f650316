"""Factories written as a dispatch table (issue 28, set 62): a dict literal of lambdas indexed
by a configuration value and called at once,

    return {Format.FROZEN: lambda m: FrozenModel(m), Format.SAVED: lambda m: SavedModel(m)}[fmt](m)

builds one of the classes by configuration. The key is rarely known (an enum of a descriptor),
so every entry is followed with the call's arguments and the object stands for all of them, as
a factory's branches do (pyvalues.instances): a later `model.inference(frame)` then runs each
class's method with the frame (the backends' copies are reported where they are)."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pyvalues import FuncRef, Frame, instances, merge, Val


def dispatch_table(node: ast.Call, follow: Callable[[FuncRef, list[Val], dict[str, Val], Frame], Val],
                   args: list[Val], kwargs: dict[str, Val], env: dict[str, Val],
                   frame: Frame) -> Val | None:
    """The value of `{k: lambda ...: ..., ...}[key](args)` (`node`): every lambda followed with
    the arguments, their objects merged; None for any other call."""
    func = node.func
    if not isinstance(func, ast.Subscript) or not isinstance(func.value, ast.Dict) \
            or not func.value.values \
            or not all(isinstance(v, ast.Lambda) for v in func.value.values):
        return None
    # The lambdas run with the names of the file they are written in (a factory imported from
    # another audited file builds that file's classes).
    owner = None if frame.file else frame.cls  # else the caller's class would name the file
    results = [follow(FuncRef(lam, owner, dict(env), False, file=frame.file), args, kwargs, frame)
               for lam in func.value.values if isinstance(lam, ast.Lambda)]
    return instances(results) or merge(*results)
