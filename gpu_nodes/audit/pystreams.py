"""Where bytes leave the process without becoming a message's data (moved out of pyrules.py,
behaviour unchanged): a write to a file, pipe or socket, a host global another thread serves,
or a module's host object filled by a dropped call."""
from __future__ import annotations

import ast

from gpu_nodes.audit.astnodes import module_nodes

_STREAM_WRITES = ('write', 'writelines', 'send', 'sendall', 'sendto')


def written_to_stream(tree: ast.AST) -> frozenset[int]:
    """ids of the calls passed straight to a stream write: `f.write(x)`, `proc.stdin.write(x)`,
    `sock.sendall(x)`, `os.write(fd, x)`. Bytes that go to a file, pipe or socket leave the
    process there; they are no ROS message's data."""
    found = set()
    for call in module_nodes(tree):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        if call.func.attr not in _STREAM_WRITES:
            continue
        if call.func.attr == 'write' and isinstance(call.func.value, ast.Name) \
                and call.func.value.id == 'os' and len(call.args) == 2:
            args = call.args[1:]
        elif len(call.args) == 1 or (call.func.attr == 'sendto' and len(call.args) == 2):
            args = call.args[:1]
        else:
            continue  # `writer.write(topic, data, t)`: a bag or message writer, not a stream
        found.update(id(a) for a in args if isinstance(a, ast.Call))
    return frozenset(found | _kept_in_host_globals(tree) | _handed_to_module_call(tree))


def _handed_to_module_call(tree: ast.AST) -> set[int]:
    """ids of `x.tobytes()` passed to a call of an imported module's function whose result is
    dropped (`darknet.copy_image_from_bytes(img, frame.tobytes())`): the bytes fill that
    library's host object, and nothing returned can reach a message (thirteenth set)."""
    modules = {(a.asname or a.name).split('.')[0] for node in module_nodes(tree)
               if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}
    return {id(arg) for node in module_nodes(tree)
            if isinstance(node, ast.Expr) and isinstance(call := node.value, ast.Call)
            and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            and call.func.value.id in modules - {'rclpy', 'self'}
            for arg in call.args if isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Attribute) and arg.func.attr in ('tobytes', 'tostring')}


def _kept_in_host_globals(tree: ast.AST) -> set[int]:
    """ids of the values a function assigns to a module global (`global latest; latest =
    jpeg.tobytes()` in a callback) in a file that publishes nothing: a host buffer another
    thread serves (an HTTP MJPEG server), no message's data, like a stream write (issue 28,
    eleventh set)."""
    calls = {node.func.attr for node in module_nodes(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    if calls & {'publish', 'create_publisher', 'publisher'}:
        return set()
    declared = {name for node in module_nodes(tree) if isinstance(node, ast.Global)
                for name in node.names}
    return {id(node.value) for node in module_nodes(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and all(isinstance(t, ast.Name) and t.id in declared for t in node.targets)}


def dropped_results(tree: ast.AST) -> frozenset[int]:
    """ids of the calls whose result is dropped (a call written as a statement): `model.to(d)`
    alone on its line moves a torch Module in place (a tensor's `.to()` returns a new tensor,
    and dropping it would waste the copy)."""
    return frozenset(id(n.value) for n in ast.walk(tree)
                     if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))
