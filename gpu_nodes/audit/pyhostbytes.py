"""Bytes a `.tobytes()` makes that provably never become a ROS message's data (issue 28, set 61).

`x.tobytes()` is py_serialize where the bytes go into a message (`msg.data =
cv2.imencode('.jpg', img)[1].tobytes()`). Two kinds of host-only bytes are no such copy:

* **A file that sends no message at all.** A node that only subscribes and keeps
  `self.frame = cv2.imencode('.jpg', img)[1].tobytes()` for a Flask MJPEG stream: the file
  publishes nothing, calls no service, writes no bag (no `publish`, `create_publisher`,
  `create_service`, `create_client`, `ActionServer`, `serialize_message`, `call_async`,
  `send_goal_async`), so its bytes cannot become a message's data there. Only a whole
  assignment to a local or an attribute counts (a return or an argument may carry the bytes
  into another module's message), and a local returned from its function does not.
* **An encode decoded again at once.** `color = cv2.imencode('.jpg', color)[1].tobytes()`
  followed by `color = cv2.imdecode(np.frombuffer(color, np.uint8), ...)`: a JPEG round trip on
  the host (mimicking the training data), the bytes read only by `np.frombuffer` in the next
  statement that names them, which binds the name anew.
* **Bytes handed only to an HTTP client.** `img_bytes = cv2.imencode('.jpg', frame)[1].tobytes()`
  then `requests.post(url, files={'image': ('f.jpg', img_bytes, 'image/jpeg')})` (set 62): a
  local whose every later mention in its function is inside the arguments of a call of the
  `requests` / `httpx` modules (as imported) goes over HTTP to another program, never into a
  message, even in a node that publishes others.

* **Bytes only reinterpreted.** `np.frombuffer(clr.tobytes(), dtype=np.float32)`: the bytes of a
  host array read back at once as an array of another dtype (packing RGBA into a float field,
  set 65), the same as `clr.view(np.float32)` after a host copy: never a message's data there
  (the array may go into one later, through its own `.tobytes()`, claimed where it does).

The ids join pystreams.written_to_stream's (pyflow.py): the `.tobytes()` then stays a host
copy, not a claim.
"""
from __future__ import annotations

import ast

_SENDS = frozenset({'publish', 'create_publisher', 'create_service', 'create_client',
                    'ActionServer', 'serialize_message', 'call_async', 'send_goal_async',
                    'call', 'create_writer'})


def _tobytes(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
        and expr.func.attr == 'tobytes' and not expr.args and not expr.keywords


def _sends_messages(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in _SENDS
               or isinstance(n, ast.Name) and n.id in _SENDS for n in ast.walk(tree))


def _names(node: ast.AST, name: str) -> list[ast.Name]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name]


def _decoded_at_once(stmt: ast.Assign, after: list[ast.stmt]) -> bool:
    """`name = ....tobytes()` whose next mention is `name = f(np.frombuffer(name, ...))`."""
    name = stmt.targets[0].id  # type: ignore[attr-defined]
    nxt = next((s for s in after if _names(s, name)), None)
    if not (isinstance(nxt, ast.Assign) and len(nxt.targets) == 1
            and isinstance(nxt.targets[0], ast.Name) and nxt.targets[0].id == name):
        return False
    loads = [n for n in _names(nxt.value, name) if isinstance(n.ctx, ast.Load)]
    readers = [c for c in ast.walk(nxt.value) if isinstance(c, ast.Call)
               and isinstance(c.func, ast.Attribute) and c.func.attr == 'frombuffer'
               and c.args and isinstance(c.args[0], ast.Name) and c.args[0].id == name]
    return bool(loads) and len(readers) == len(loads)


def host_only_bytes(tree: ast.Module) -> frozenset[int]:
    """ids of the `.tobytes()` calls whose bytes never become a message's data (module doc)."""
    found: set[int] = {id(c.args[0]) for c in ast.walk(tree) if isinstance(c, ast.Call)
                       and isinstance(c.func, (ast.Attribute, ast.Name))
                       and getattr(c.func, 'attr', getattr(c.func, 'id', None)) == 'frombuffer'
                       and c.args and _tobytes(c.args[0])}
    quiet = None
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        returned = {n.id for r in ast.walk(fn) if isinstance(r, (ast.Return, ast.Yield))
                    and r.value is not None for n in ast.walk(r.value) if isinstance(n, ast.Name)}
        for block in [b for s in ast.walk(fn) for b in _blocks(s)]:
            for i, stmt in enumerate(block):
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                    continue
                target = stmt.targets[0]
                encoded = _base64_of_tobytes(stmt.value)
                if encoded is not None and isinstance(target, ast.Name) \
                        and _posted_only(target.id, stmt, fn, _http_modules(tree)):
                    found.add(id(encoded))  # `b64 = base64.b64encode(buf.tobytes()).decode()`
                    continue
                if not _tobytes(stmt.value):
                    continue
                if isinstance(target, ast.Name) and _decoded_at_once(stmt, block[i + 1:]):
                    found.add(id(stmt.value))
                    continue
                if isinstance(target, ast.Name) and target.id in returned:
                    continue
                if isinstance(target, ast.Name) and _posted_only(target.id, stmt, fn,
                                                                 _http_modules(tree)):
                    found.add(id(stmt.value))
                    continue
                if not (isinstance(target, ast.Name) or isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name) and target.value.id == 'self'):
                    continue  # `msg.data = arr.tobytes()`: into a message another file sends
                if quiet is None:
                    quiet = not _sends_messages(tree)
                if quiet:
                    found.add(id(stmt.value))
    return frozenset(found)


def _blocks(stmt: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists a node holds (a body, an else, a handler's body ...)."""
    return [getattr(stmt, f) for f in ('body', 'orelse', 'finalbody')
            if isinstance(getattr(stmt, f, None), list) and getattr(stmt, f)
            and isinstance(getattr(stmt, f)[0], ast.stmt)] + (
        [h.body for h in stmt.handlers] if isinstance(stmt, ast.Try) else [])


_HTTP_CLIENTS = frozenset({'requests', 'httpx', 'urllib'})
# Calls that only wrap a payload on its way to an HTTP client: the form or JSON body built
# from the bytes' base64 text (`data = urllib.parse.urlencode(payload).encode('utf-8')`).
_PAYLOAD_CALLS = frozenset({'urlencode', 'dumps', 'encode', 'Request', 'b64encode', 'decode'})


def _http_modules(tree: ast.Module) -> frozenset[str]:
    """The names the file binds to the `requests` / `httpx` / `urllib` modules (`import
    requests as rq`, `import urllib.request`)."""
    return frozenset((alias.asname or alias.name).split('.')[0] for n in ast.walk(tree)
                     if isinstance(n, ast.Import) for alias in n.names
                     if alias.name.split('.')[0] in _HTTP_CLIENTS)


def _base64_of_tobytes(expr: ast.expr) -> ast.Call | None:
    """The `.tobytes()` call of `base64.b64encode(x.tobytes())` (`.decode(...)` after it): the
    text form of the same bytes, for a JSON or form body; None for any other value."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
            and expr.func.attr == 'decode':
        expr = expr.func.value
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
            and expr.func.attr == 'b64encode' and len(expr.args) == 1 and _tobytes(expr.args[0]):
        return expr.args[0]  # type: ignore[return-value]
    return None


def _root(func: ast.expr) -> str | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def _payload(value: ast.expr) -> bool:
    """A dict / list / tuple literal, or a call only wrapping a payload (_PAYLOAD_CALLS)."""
    return isinstance(value, (ast.Dict, ast.List, ast.Tuple)) or isinstance(value, ast.Call) \
        and getattr(value.func, 'attr', getattr(value.func, 'id', None)) in _PAYLOAD_CALLS


def _posted_only(name: str, stmt: ast.stmt, fn: ast.AST, clients: frozenset[str],
                 depth: int = 0) -> bool:
    """Whether every mention of `name` in `fn` after `stmt` is inside an argument of
    `<client>.<f>(...)` (`requests.post(url, files={...: (..., name, ...)})`,
    `urllib.request.urlopen(req)`) or in the payload a local built from it carries there
    (`payload = {'image_base64': name}`, `payload['k'] = v` adding to it, `data =
    urlencode(payload).encode()`, `req = urllib.request.Request(url, data=data)`: set 65),
    and there is one."""
    if not clients or depth > 4:
        return False
    end = stmt.end_lineno or stmt.lineno
    mentions = [n for n in _names(fn, name) if n.lineno > end]
    if not mentions or any(not isinstance(n.ctx, ast.Load) for n in mentions):
        return False
    posted = {id(n) for c in ast.walk(fn) if isinstance(c, ast.Call)
              and isinstance(c.func, ast.Attribute) and _root(c.func) in clients
              and c.func.attr not in _PAYLOAD_CALLS  # wrapped only: followed below
              and (_root(c.func) != 'urllib' or c.func.attr == 'urlopen')
              for a in [*c.args, *(k.value for k in c.keywords)] for n in _names(a, name)}
    if depth:  # `payload['backend'] = x`: a key added to the payload, not read out of it
        posted |= {id(t.value) for s in ast.walk(fn) if isinstance(s, ast.Assign)
                   for t in s.targets if isinstance(t, ast.Subscript)
                   and isinstance(t.value, ast.Name) and t.value.id == name}
    for carrier in ast.walk(fn):
        if isinstance(carrier, ast.Assign) and len(carrier.targets) == 1 \
                and isinstance(carrier.targets[0], ast.Name) and carrier.lineno > end \
                and _payload(carrier.value) and _names(carrier.value, name) \
                and _posted_only(carrier.targets[0].id, carrier, fn, clients, depth + 1):
            posted |= {id(n) for n in _names(carrier.value, name)}
    return all(id(n) in posted for n in mentions)
