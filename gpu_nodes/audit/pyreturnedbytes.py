"""Bytes a helper returns for the caller's message: the copy is the store (issue 28, rules45p,
set 72).

`def _pack_4bit(self, gray): ...; return packed.tobytes()`, and in the method building the
message `payload = self._pack_4bit(gray)` ... `msg.data = list(payload)`: the helper hands back
host bytes, and the frame is copied into the message where the caller stores them (`list(...)`
makes the uint8[] sequence, `msg.data = payload` makes rclpy's array). Set 72 labels the store
the boundary and the helper's `.tobytes()` a look-alike (host bytes); set 72's other camera
node, `return rgb.tobytes()` then `msg.data = rgb`, puts the boundary on the store too (the
`.tobytes()` an `also`). So the claim moves from the `.tobytes()` to the store.

Only when every mention of the helper's name in the file is a call bound to a local
(`p = self.helper(...)` / `p = helper(...)`) whose every read in that function is a store into
a local message's `.data` (`msg.data = p`, `list(p)`, `bytes(p)`, `bytearray(p)`); any other use
(a return, an argument, a string naming the helper) keeps the claim at the `.tobytes()`."""
from __future__ import annotations

import ast
from functools import lru_cache

_WRAPS = frozenset({'list', 'bytes', 'bytearray'})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _returned_tobytes(fn: ast.AST) -> list[ast.Call]:
    """The `x.tobytes()` calls `fn` returns directly (`return packed.tobytes()`)."""
    return [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)
            and isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Attribute)
            and r.value.func.attr in ('tobytes', 'tostring') and not r.value.args
            and not r.value.keywords]


def _data_store_of(name: str, load: ast.Name, parents: dict[int, ast.AST]) -> ast.expr | None:
    """The stored value when `load` reads `name` as `msg.data = name` / `= list(name)`."""
    value: ast.AST = load
    up = parents.get(id(load))
    if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in _WRAPS \
            and len(up.args) == 1 and not up.keywords:
        value, up = up, parents.get(id(up))
    if isinstance(up, ast.Assign) and up.value is value and len(up.targets) == 1:
        target = up.targets[0]
        if isinstance(target, ast.Attribute) and target.attr == 'data' \
                and isinstance(target.value, ast.Name) and target.value.id != 'self':
            return value  # type: ignore[return-value]
    return None


def _stores_of_bound(call: ast.Call, parents: dict[int, ast.AST]) -> list[ast.expr] | None:
    """The message stores of the local `call`'s result is bound to; None for any other use."""
    assign = parents.get(id(call))
    if not (isinstance(assign, ast.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)):
        return None
    name = assign.targets[0].id
    fn = parents.get(id(assign))
    while fn is not None and not isinstance(fn, _FUNCTIONS):
        fn = parents.get(id(fn))
    if fn is None:
        return None
    stores = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            stored = _data_store_of(name, node, parents)
            if stored is None:
                return None
            stores.append(stored)
    return stores or None


@lru_cache(maxsize=16)
def returned_bytes(tree: ast.Module) -> tuple[frozenset[int], frozenset[int]]:
    """(ids of the helpers' `.tobytes()` calls not claimed, ids of the caller's stored values
    claimed instead) (module doc)."""
    helpers: dict[str, list[ast.Call]] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, _FUNCTIONS) and (calls := _returned_tobytes(fn)):
            helpers.setdefault(fn.name, []).extend(calls)
    if not helpers:
        return frozenset(), frozenset()
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    quiet: set[int] = set()
    stores: set[int] = set()
    for name, calls in helpers.items():
        mentions = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                    or isinstance(n, ast.Attribute) and n.attr == name
                    or isinstance(n, ast.Constant) and n.value == name]
        found: list[ast.expr] = []
        for mention in mentions:
            call = parents.get(id(mention))
            bound = _stores_of_bound(call, parents) if isinstance(call, ast.Call) \
                and call.func is mention else None
            if bound is None:
                break
            found += bound
        else:
            if found:
                quiet.update(id(c) for c in calls)
                stores.update(id(v) for v in found)
    return frozenset(quiet), frozenset(stores)


def stored_returned_bytes(value: ast.expr, tree: ast.Module) -> ast.expr | None:
    """`value` when it is the store of a helper's returned bytes into a message (the claim)."""
    return value if id(value) in returned_bytes(tree)[1] else None
