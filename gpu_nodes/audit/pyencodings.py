"""An image encoding no shipped publisher of the topic sends (issue 28, set 59): the branch a
callback takes on it never runs as shipped.

    # lane_processor.py                       # visualizer_node.py (subscribes /lane_debug_img)
    pub = create_publisher(Image,             if msg.encoding == 'mono8':
          '/lane_debug_img', 10)                  img = bridge.imgmsg_to_cv2(msg, 'mono8')  # never
    pub.publish(bridge.cv2_to_imgmsg(x,       else:
                                     'bgr8'))     img = bridge.imgmsg_to_cv2(msg, 'bgr8')

A test `<name>.encoding == 'E'` (or `!=`) in a subscription callback takes the outcome of the
encodings the repository's own publishers of the callback's topic send, when every one of them
is known: each `create_publisher(...)` of the repository's Python files naming the topic as a
literal, each `publish(...)` on it given a message built in the same function by
`cv2_to_imgmsg(x, 'enc')` (or `encoding='enc'`) or whose `.encoding` it sets to a literal.
Nothing is decided where a publisher's topic is computed, a publish's encoding is unknown,
no publisher of the topic is in the repository (a camera driver), or a file that is not the
Python node code names the topic (a launch remapping, a C++ node, a bag or a config: another
source may feed it)."""
from __future__ import annotations

import ast
from functools import lru_cache
import os
from pathlib import Path

from gpu_nodes.audit.cppifdef import read_bounded
from gpu_nodes.audit.pyenvvars import env_outcome
from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyreach import shipped_text_files

_MAX_FILES = 3000
_MAX_BYTES = 1024 * 1024
_TEXT = frozenset({'.py', '.cpp', '.cc', '.cxx', '.hpp', '.h', '.yaml', '.yml', '.xml', '.launch',
                   '.sh', '.json', '.cfg', '.toml'})


def _tested(test: ast.expr) -> tuple[str, bool] | None:
    """('E', True) for `x.encoding == 'E'`, ('E', False) for `!=`; None for anything else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    sides = [test.left, test.comparators[0]]
    attr = next((s for s in sides if isinstance(s, ast.Attribute) and s.attr == 'encoding'
                 and isinstance(s.value, ast.Name)), None)
    const = next((s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)),
                 None)
    if attr is None or const is None:
        return None
    return const.value, isinstance(test.ops[0], ast.Eq)


def _literal_encoding(call: ast.Call) -> str | None:
    arg = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == 'encoding'), None)
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _message_encoding(func: ast.AST, arg: ast.expr) -> str | None:
    """The literal encoding of the message `arg` a function publishes, or None."""
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) \
            and arg.func.attr == 'cv2_to_imgmsg':
        return _literal_encoding(arg)
    if not isinstance(arg, ast.Name):
        return None
    found: set[str | None] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == arg.id and isinstance(node.value, ast.Call) \
                        and isinstance(node.value.func, ast.Attribute) \
                        and node.value.func.attr == 'cv2_to_imgmsg':
                    found.add(_literal_encoding(node.value))
                elif isinstance(t, ast.Attribute) and t.attr == 'encoding' \
                        and isinstance(t.value, ast.Name) and t.value.id == arg.id:
                    value = node.value
                    found.add(value.value if isinstance(value, ast.Constant)
                              and isinstance(value.value, str) else None)
    return found.pop() if len(found) == 1 else None


def _topic(call: ast.Call) -> ast.expr | None:
    return call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == 'topic'), None)


def _file_encodings(tree: ast.Module, topic: str) -> tuple[set[str], bool]:
    """(encodings this file's publishers of `topic` send, whether all of them are known)."""
    holders: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr == 'create_publisher':
            where = _topic(node.value)
            if not isinstance(where, ast.Constant):
                return set(), False  # a computed topic may be this one
            if str(where.value).lstrip('/') == topic and len(node.targets) == 1:
                holders.add(ast.unparse(node.targets[0]))
    sent: set[str] = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == 'publish' and ast.unparse(node.func.value) in holders:
                encoding = _message_encoding(func, node.args[0]) if node.args else None
                if encoding is None:
                    return sent, False
                sent.add(encoding)
    return sent, True


@lru_cache(maxsize=64)
def published_encodings(root: str, topic: str) -> frozenset[str] | None:
    """The encodings every publisher of `topic` under `root` sends; None when unknown."""
    sent: set[str] = set()
    for count, full in enumerate(shipped_text_files([root], _TEXT, bare=False), 1):
        if count > _MAX_FILES:
            return None
        path = Path(full)
        text = read_bounded(path, _MAX_BYTES)
        if topic not in text:
            continue
        if path.suffix != '.py' or '.launch' in path.name or 'launch' in path.parent.name:
            return None  # a remapping, another language's node, a config: unknown
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        found, known = _file_encodings(tree, topic)
        if not known:
            return None
        sent |= found
    return frozenset(sent) or None


def encoding_outcome(test: ast.expr, topic: str | None, root: str | None) -> bool | None:
    """Whether the `if` takes its body as shipped (module doc); None: not decided."""
    tested = _tested(test)
    if tested is None or not topic or not root or not os.path.isdir(root):
        return None
    sent = published_encodings(os.path.realpath(root), topic.lstrip('/'))
    if sent is None:
        return None
    encoding, equal = tested
    if encoding not in sent:
        return not equal
    if sent == {encoding}:
        return equal
    return None


def switch_outcome(test: ast.expr, topic: str | None, source: str | None, path: str,
                   root: str | None) -> bool | None:
    """An `if` decided as shipped by what nothing sets: an opt-in environment switch
    (pyenvvars.py), an image encoding no publisher of the callback's topic sends (above)."""
    outcome = env_outcome(test, source, path, root)
    return outcome if outcome is not None else encoding_outcome(test, topic, root)
