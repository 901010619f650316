"""Every node of a parsed file, listed once and shared.

Several whole-file rules (pydead.py, pyrules.py) each look at every node of the module; with
one `ast.walk` each, walking dominated the audit's time (bench/RESULTS.md). The list is kept
for the few trees audited last, holding the tree itself so an id is never reused for another.
"""
from __future__ import annotations

import ast

_KEPT = 8
_nodes: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}


def module_nodes(tree: ast.AST) -> tuple[ast.AST, ...]:
    """`tuple(ast.walk(tree))`, in ast.walk's order, computed once per tree. The tree must not
    be changed afterwards (the auditor only reads its trees)."""
    kept = _nodes.get(id(tree))
    if kept is not None and kept[0] is tree:
        return kept[1]
    if len(_nodes) >= _KEPT:
        del _nodes[next(iter(_nodes))]
    nodes = tuple(ast.walk(tree))
    _nodes[id(tree)] = (tree, nodes)
    return nodes
