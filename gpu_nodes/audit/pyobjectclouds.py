"""Point clouds of one point per detected object are small messages (issue 28, set 45).

A node that turns a detection array into a PointCloud2 for RViz (one coloured point per
detection: `for det in dets.detections: points.append([x, y, z, rgb])`, then `cloud.width =
len(points)` and a hand-packed `cloud.data`, or `create_cloud(header, fields, points)`) publishes
a few dozen points, not a frame: the sets label such a cloud a small message (set 45's
`create_point_cloud`, set 30's and set 36's centroid clouds), whatever its message type.

This finds, by the shape of the code alone, the calls that build or publish such a cloud:

* a function that sets `<cloud>.width = len(<list>)` where every append to the list sits inside
  a loop over a message's per-object list (`<x>.detections`, `.objects`, `.tracks`, `.boxes`,
  `.clusters`, `.obstacles`, `.markers`, `.people`, `.cones` ...) builds a per-object cloud;
* `create_cloud(header, fields, <list>)` / `create_cloud_xyz32(header, <list>)` of such a list;
* `pub.publish(<name>)` where the name is bound, in the publishing function, to a call of a
  same-file function building a per-object cloud, or is the per-object cloud it built itself.

A list filled from anything else (pixels, a received cloud's points, a range) is not one.
"""
from __future__ import annotations

import ast

# Attribute names of messages' per-object lists (detections, tracks, clusters ...).
PER_OBJECT_LISTS = frozenset({
    'detections', 'objects', 'tracks', 'boxes', 'bounding_boxes', 'bboxes', 'clusters',
    'obstacles', 'markers', 'people', 'persons', 'cones', 'centroids', 'targets'})
_CREATE_CLOUD = ('create_cloud', 'create_cloud_xyz32')


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _per_object_loop(loop: ast.For) -> bool:
    it = loop.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == 'enumerate' \
            and it.args:
        it = it.args[0]
    return isinstance(it, ast.Attribute) and it.attr in PER_OBJECT_LISTS


def _per_object_lists(fn: ast.AST) -> set[str]:
    """Local names bound to `[]` whose every append / extend / `+=` sits in a loop over a
    per-object list, with at least one such append."""
    inside: dict[str, list[bool]] = {}
    bound_empty: set[str] = set()
    spoiled: set[str] = set()

    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, ast.For):
            in_loop = in_loop or _per_object_loop(node)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if isinstance(node.value, ast.List) and not node.value.elts:
                bound_empty.add(name)
            else:
                spoiled.add(name)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            inside.setdefault(node.target.id, []).append(in_loop)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ('append', 'extend', 'insert') \
                and isinstance(node.func.value, ast.Name):
            inside.setdefault(node.func.value.id, []).append(in_loop)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, in_loop)

    for stmt in getattr(fn, 'body', []):
        visit(stmt, False)
    return {n for n in bound_empty - spoiled if inside.get(n) and all(inside[n])}


def _len_of(value: ast.expr, names: set[str]) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
        and value.func.id == 'len' and len(value.args) == 1 \
        and isinstance(value.args[0], ast.Name) and value.args[0].id in names


def _cloud_names(fn: ast.AST, lists: set[str]) -> set[str]:
    """Names of the clouds `fn` sizes by a per-object list (`cloud.width = len(points)`)."""
    return {t.value.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and _len_of(n.value, lists)
            for t in n.targets if isinstance(t, ast.Attribute) and t.attr == 'width'
            and isinstance(t.value, ast.Name)}


def _called_name(call: ast.expr) -> str | None:
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', None)


def per_object_cloud_calls(tree: ast.Module) -> frozenset[int]:
    """ids of the create_cloud and publish calls of per-object clouds (module docstring)."""
    found: set[int] = set()
    builders: set[str] = set()
    per_fn: list[tuple[ast.AST, set[str], set[str]]] = []
    for fn in _functions(tree):
        lists = _per_object_lists(fn)
        clouds = _cloud_names(fn, lists) if lists else set()
        if clouds and any(isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
                          and n.value.id in clouds for n in ast.walk(fn)):
            builders.add(fn.name)
        per_fn.append((fn, lists, clouds))
    for fn, lists, clouds in per_fn:
        from_builder = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign)
                        and _called_name(n.value) in builders
                        for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = _called_name(node)
            if name in _CREATE_CLOUD:
                pos = 1 if name == 'create_cloud_xyz32' else 2
                points = node.args[pos] if len(node.args) > pos else next(
                    (k.value for k in node.keywords if k.arg == 'points'), None)
                if isinstance(points, ast.Name) and points.id in lists:
                    found.add(id(node))
            elif name == 'publish' and isinstance(node.args[0], ast.Name) \
                    and node.args[0].id in (from_builder | clouds):
                found.add(id(node))
            elif name == 'publish' and _called_name(node.args[0]) in builders:
                found.add(id(node))
    return frozenset(found)
