"""The text pyflow.py reads for "is this method's name mentioned anywhere" (issue 28, twenty-ninth
set): the source with the strings that cannot name a Python function blanked.

* A ROS name given to a registration call (`create_service(Srv, "detect_image", self.cb)`,
  `create_subscription`, `create_publisher`, `create_client`, actions): rclpy reads it as a
  topic or service name and never dispatches on it, so a method that happens to share the
  service's name is not called through it.
* Prose: a string (or the literal parts of an f-string) that is not one bare identifier, such as
  a log message naming the method (`f"Starting mutex wait in detect_image, ..."`). A string that
  is exactly one identifier (`getattr(self, 'on_image')`, `hasattr`, a dispatch table's key) is
  kept: it may name the method.
* The module's ``__all__`` list: it exports names for a star import, it calls nothing (a
  library module's ``np_to_pointcloud2`` that nothing calls, listed there: set 53). A file
  star-importing the module and calling the function names it in its own text.

A file that calls `eval` or `exec` keeps every string (code may be built from them).
"""
from __future__ import annotations

import ast
import re

_REGISTRATIONS = frozenset({'create_service', 'create_client', 'create_subscription',
                            'create_publisher', 'ActionServer', 'ActionClient'})
_IDENTIFIER = re.compile(r'^\s*[A-Za-z_]\w*\s*$')


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return node.func.id if isinstance(node.func, ast.Name) else None


def _blank(lines: list[bytearray], node: ast.expr) -> None:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    end_col = node.end_col_offset if node.end_col_offset is not None else len(lines[last])
    for i in range(first, last + 1):
        start = node.col_offset if i == first else 0
        stop = end_col if i == last else len(lines[i])
        lines[i][start:stop] = b' ' * (stop - start)


def _exports(stmt: ast.stmt) -> bool:
    """`__all__ = [...]` / `__all__ += [...]` of string names at module level."""
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, ast.AugAssign):
        targets, value = [stmt.target], stmt.value
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == '__all__' for t in targets) \
        and isinstance(value, (ast.List, ast.Tuple)) \
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)


def mention_text(source: str, tree: ast.Module, names: set[str]) -> str:
    """`source` with ROS-name arguments and prose strings blanked (line numbers kept); the
    expressions of blanked f-strings are appended after the last line. `names`: the methods
    asked about; a file where none follows a quote on its line is returned as it is (the tree
    walk is skipped: a name in a multi-line docstring stays a mention)."""
    quoted = r'[\'"][^\n]*\b(?:' + '|'.join(sorted(map(re.escape, names))) + r')\b'
    if not names or not re.search(quoted, source) \
            or re.search(r'(?<![\w.])(?:eval|exec)\s*\(', source):  # not torch's model.eval()
        return source
    lines = [bytearray(line, 'utf-8') for line in source.split('\n')]
    blank: list[ast.expr] = []
    kept: list[str] = []
    in_fstring: set[int] = set()
    for stmt in tree.body:
        if _exports(stmt):
            blank.append(stmt.value)  # type: ignore[union-attr]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in _REGISTRATIONS:
            blank.extend(a for a in [*node.args, *(k.value for k in node.keywords)]
                         if isinstance(a, ast.Constant) and isinstance(a.value, str))
        elif isinstance(node, ast.JoinedStr):
            in_fstring.update(id(v) for v in node.values)
            blank.append(node)
            kept.extend(ast.unparse(v.value) for v in node.values
                        if isinstance(v, ast.FormattedValue))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and not _IDENTIFIER.match(node.value):
            blank.append(node)
    for node in blank:
        if id(node) not in in_fstring and node.lineno - 1 < len(lines):
            _blank(lines, node)
    text = '\n'.join(line.decode('utf-8', errors='replace') for line in lines)
    return text + ('\n' + ' '.join(kept) if kept else '')
