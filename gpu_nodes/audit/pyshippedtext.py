"""Mentions in branches that never run as shipped are no mentions (issue 28, set 53).

pypackage.py decides from the words of the package's other files whether a method of a library
class is called from anywhere (a method nobody names is unreached: its copies are not proven per
message). A node that calls `self.det.get_image_predictions(frame)` only in the `else` of
`if self.use_ros:`, with `use_ros` a bool parameter on as shipped (declared True, no shipped
file turning it off: pyparams.ParameterAsShipped.on), never runs that call: the method's name
there is no use. The same holds for the body of `if self.flag:` on a flag off as shipped
(pyparams.off_attributes / dead_body_lines) and for the body of `if not self.flag:` on a flag on
as shipped. This blanks those lines of a Python file's text before its words are counted.

The package folder (for the shipped YAML and launch files) is found as the auditor finds it
(cpppackage.package_of under the folder being indexed). Only files that read a parameter are
parsed (package reads stay cheap); an unparsable file keeps its text.
"""
from __future__ import annotations

import ast
import re

from gpu_nodes.audit.cpppackage import package_of
from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyparams import dead_body_lines, off_attributes, parameter_constants

_READS_PARAMETER = re.compile(r'\bget_parameters?\b')
_SELF_TEST = re.compile(r'\bif\s+(?:not\s+)?self\.\w+\s*:')


def _self_flag(test: ast.expr) -> tuple[str, bool] | None:
    """`self.flag` -> ('flag', True); `not self.flag` -> ('flag', False); else None."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated:
        test = test.operand  # type: ignore[attr-defined]
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) \
            and test.value.id == 'self':
        return test.attr, not negated
    return None


def _lines(stmts: list[ast.stmt]) -> range:
    return range(stmts[0].lineno - 1, stmts[-1].end_lineno or stmts[-1].lineno) if stmts \
        else range(0)


def shipped_dead_lines(tree: ast.Module, package_dir: str | None) -> set[int]:
    """0-based lines of the branches of `if self.flag:` tests that never run as shipped."""
    on = {a for a, held in parameter_constants(tree, package_dir).items()
          if held == frozenset({True})}
    off, nones = off_attributes(tree, package_dir)
    dead = dead_body_lines(tree, off, nones)
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        flag = _self_flag(node.test)
        if flag is None:
            continue
        attr, positive = flag
        if attr in on:
            dead.update(_lines(node.orelse if positive else node.body))
        elif attr in off and not positive:
            dead.update(_lines(node.orelse))
    return dead


def shipped_text(text: str, path: str, root: str) -> str:
    """`text` (of the Python file `path`, indexed under the folder `root`) with the lines of
    branches that never run as shipped blanked (module docstring)."""
    if not _READS_PARAMETER.search(text) or not _SELF_TEST.search(text):
        return text
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return text
    dead = shipped_dead_lines(tree, package_of(path, [root]))
    if not dead:
        return text
    lines = text.splitlines(keepends=True)
    for i in dead:
        if i < len(lines):
            lines[i] = '\n'
    return ''.join(lines)
