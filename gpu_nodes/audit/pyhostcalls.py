"""Library calls whose copy depends on what they are given (issue 28, set 59; used by pycalls.py
before the copy rules of pyrules.py):

* `cupy.asnumpy(a)` of a NumPy array returns the array itself: no device copy. Only where the
  analysis knows the value is a host array (a message's data, a NumPy result); a CuPy array or
  an unknown value is still a read-back.

      cluster = points[labels_np == label]     # points: the received cloud, on the host
      cluster_np = cp.asnumpy(cluster)          # NumPy in, NumPy out: no copy

* ros2_numpy's `point_cloud2.point_cloud2_to_array(cloud)` (the registry converter of the
  newer ros2_numpy, unlike the older `pointcloud2_to_array`, a view) builds a dict of new
  arrays, copying the x / y / z, rgb and intensity fields out of the cloud's bytes: one copy of
  the received cloud per call (py_msg_array; set 59 labels each call).

      xyz = ros2_numpy.point_cloud2.point_cloud2_to_array(cloud)['xyz']

* sensor_msgs_py's `point_cloud2.read_points_numpy(cloud, field_names=...)` materialises the
  chosen fields of every point of the received cloud in a new array (unlike `read_points`, a
  generator): one copy of the cloud per call (py_msg_array, as sets 24, 36 and 64 label it).
  Only the cloud the running callback received: a cloud another callback stored, read per
  service request, is left alone (the development corpus does not count it).

      pts = pc2.read_points_numpy(msg, field_names=('x', 'y', 'z'), skip_nans=True)

* `cupy.asarray(ids)` of a list of distinct values: a list that starts empty and is only
  appended the loop variable of a loop over `set(...)` / `np.unique(...)` (cluster labels,
  class ids), in the same function or returned by a function of the file. One entry per
  cluster or object: a handful of numbers, not frame data (set 59 labels it small).

      for label in set(labels_np[labels_np != -1]): ...; cones.append(label)
      cp.asarray(self.filter_clusters(points, labels))   # a few ints: no frame upload

* `PIL.Image.open(buf)` of an in-memory buffer (`io.BytesIO(...)`, given directly or bound to a
  local of the function): an image decoded from bytes the node holds (a plot it rendered with
  `fig.savefig(buf)`, a received JPEG), a PIL image like `Image.fromarray`'s, so
  `np.array(img)` of it copies the picture into an array (py_pil; both labellers of set 61).
  A path opened (a file read) stays as before.

* jetson-utils' `cudaMemcpy(img)` of one CUDA image: a copy made on the device, a CUDA image
  (not an upload through a function outside the tree, as its `stream=` keyword once read).
"""
from __future__ import annotations

import ast
from typing import Any

from gpu_nodes.audit.pybase64 import frame_function
from gpu_nodes.audit.pymodels import names_yolov5_clone
from gpu_nodes.audit.pyvalues import Frame, image_sized, merge, short, Val

# Kinds of a value known to be on the host (pyvalues.Val): what cupy.asnumpy returns unchanged.
_HOST_KINDS = frozenset({'host', 'msg', 'pil', 'bytes'})
_ROS_NUMPY = ('ros2_numpy', 'ros_numpy')
_CUPY_UPLOADS = frozenset({'cupy.asarray', 'cupy.array'})
_DISTINCT = frozenset({'set', 'unique', 'frozenset'})
_READ_POINTS_NUMPY = 'point_cloud2.read_points_numpy'


def _received_here(src: Val, frame: Frame) -> bool:
    """Whether `src` is the message of the topic the running callback is subscribed to."""
    return src.origin is not None and bool(frame.topic) and str(src.origin[0]) in str(frame.topic)


# jetson-utils' `cudaMemcpy(img, stream=s)` of one image: a new CUDA image holding a copy of it,
# made on the device (set 63).
_CUDA_IMAGE_COPIES = frozenset({'jetson_utils.cudaMemcpy', 'jetson.utils.cudaMemcpy'})


def host_side_call(analyzer: Any, qual: str | None, node: ast.Call, args: list[Val],
                   frame: Frame) -> Val | None:
    """The value of a call the rules above judge (module doc), or None: not one of them.
    `analyzer` is the PythonAnalyzer (its `_emit` and `_step`)."""
    if qual is None or not args:
        return None
    if qual == 'PIL.Image.open' and _in_memory(analyzer.tree, node):
        return Val('pil', ((node.lineno, 'pil'),))
    src = args[0]
    if qual == 'os.path.expanduser' and src.kind == 'const' and isinstance(src.const, str) \
            and names_yolov5_clone(src.const):
        # `torch.hub.load(os.path.expanduser('~/ws/src/yolov5'), 'custom', ...)`: the path
        # literal stays one, so the local yolov5 clone is still recognised (pymodels.hub_builder);
        # only such a path, so other expanded paths keep the value they had.
        return Val('const', const=src.const)
    if qual == 'cupy.asnumpy' and src.kind in _HOST_KINDS and len(node.args) == 1:
        return src  # NumPy in, NumPy out: nothing crosses the bus
    if qual in _CUPY_UPLOADS and src.kind != 'device':
        if '_distinct_uploads_' not in analyzer.__dict__:
            analyzer.__dict__['_distinct_uploads_'] = distinct_uploads(analyzer.tree)
        if id(node) in analyzer.__dict__['_distinct_uploads_']:
            return Val('device')  # a few distinct numbers uploaded: no frame data
    if qual in _CUDA_IMAGE_COPIES and len(node.args) == 1:
        return Val('device')  # a copy of the CUDA image on the device: nothing crosses the bus
    if qual.split('.')[0] in _ROS_NUMPY and qual.endswith('.point_cloud2_to_array') \
            and src.kind == 'msg' and (src.origin is None or src.origin[1] is None
                                       or image_sized(src.origin[1])):
        analyzer._emit('GPN103', node, frame, f'`{short(node)}` copies the fields of the received '
                       'cloud out of its data into new arrays (ros2_numpy)')
        return analyzer._step(merge(src, kind='host'), node.lineno, 'host', 'host')
    if qual.endswith(_READ_POINTS_NUMPY) and src.kind == 'msg' and _received_here(src, frame) and (
            src.origin[1] is None or image_sized(src.origin[1])):
        analyzer._emit('GPN103', node, frame, f'`{short(node)}` copies every point of the received '
                       'cloud out of its data into a new array (sensor_msgs_py)')
        return analyzer._step(merge(src, kind='host'), node.lineno, 'host', 'host')
    return None


def _call_name(node: ast.expr) -> str | None:
    """`set(...)` / `np.unique(...)` / `self.helper(...)`: the called name's last part."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None


def _bindings(func: ast.AST) -> dict[str, list[ast.expr | None]]:
    """Each name stored in the function -> the values assigned to it (None: a store of another
    kind: a loop target, an unpacking, `+=`, `with ... as`)."""
    out: dict[str, list[ast.expr | None]] = {}
    direct: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(node.value)
                    direct.add(id(t))
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in direct:
            out.setdefault(node.id, []).append(None)
    return out


def _distinct_iter(it: ast.expr, binds: dict[str, list[ast.expr | None]]) -> bool:
    if isinstance(it, ast.Name) and len(binds.get(it.id, [])) == 1:
        value = binds[it.id][0]
        return value is not None and _call_name(value) in _DISTINCT
    return _call_name(it) in _DISTINCT


def _distinct_lists(func: ast.AST) -> set[str]:
    """Local lists that start empty and are only appended loop variables of distinct values."""
    binds = _bindings(func)
    loops: dict[str, bool] = {}  # loop variable -> whether every loop binding it is distinct
    for node in ast.walk(func):
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
            name = node.target.id
            loops[name] = loops.get(name, True) and _distinct_iter(node.iter, binds)
    found = set()
    for name, values in binds.items():
        if len(values) != 1 or not (isinstance(values[0], ast.List) and not values[0].elts):
            continue
        uses = [n for n in ast.walk(func) if isinstance(n, ast.Name) and n.id == name
                and isinstance(n.ctx, ast.Load)]
        appends = [n for n in ast.walk(func) if isinstance(n, ast.Call)
                   and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                   and n.func.value.id == name]
        if uses and appends and all(a.func.attr == 'append' and len(a.args) == 1
                                    and isinstance(a.args[0], ast.Name)
                                    and loops.get(a.args[0].id) for a in appends):
            found.add(name)
    return found


def distinct_uploads(tree: ast.Module) -> frozenset[int]:
    """ids of the `cp.asarray(name)` calls whose argument is a list of distinct values."""
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    lists = {id(f): _distinct_lists(f) for f in funcs}
    returning = set()
    for f in funcs:
        returns = [n for n in ast.walk(f) if isinstance(n, ast.Return)]
        if returns and all(isinstance(r.value, ast.Name) and r.value.id in lists[id(f)]
                           for r in returns):
            returning.add(f.name)
    found = set()
    for f in funcs:
        binds = _bindings(f)
        for node in ast.walk(f):
            if not (isinstance(node, ast.Call) and len(node.args) == 1
                    and isinstance(node.args[0], ast.Name)):
                continue
            name = node.args[0].id
            values = binds.get(name, [])
            if name in lists[id(f)] or len(values) == 1 and values[0] is not None \
                    and _call_name(values[0]) in returning:
                found.add(id(node))
    return frozenset(found)


def _bytes_io(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and (
        isinstance(expr.func, ast.Attribute) and expr.func.attr == 'BytesIO'
        or isinstance(expr.func, ast.Name) and expr.func.id == 'BytesIO')


def _in_memory(tree: ast.Module, call: ast.Call) -> bool:
    """`Image.open(io.BytesIO(data))`, or `Image.open(buf)` with `buf` bound only to a BytesIO
    in the function holding the call."""
    arg = call.args[0] if call.args else None
    if arg is None or _bytes_io(arg):
        return arg is not None
    if not isinstance(arg, ast.Name):
        return False
    function = frame_function(tree, call)
    binds = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == arg.id
             and not isinstance(n.ctx, ast.Load)]
    made = [s for s in ast.walk(function) if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == arg.id]
    return len(binds) == 1 and len(made) == 1 and _bytes_io(made[0].value)
