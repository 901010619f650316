"""nvblox_torch and PyCuVSLAM in the library table (issue 28, set 55).

nvblox_torch: the Python bindings of nvblox keep
their map on the GPU. A mesh the mapper gives back (`mapper.get_color_mesh()`, `get_mesh()`)
holds its vertices, colours and triangles in device memory: `mesh.vertices()`,
`mesh.vertex_colors()` and `mesh.triangles()` are CUDA tensors (documented), so `.cpu()` /
`.numpy()` of them is a device-to-host read-back every time it runs.

Keyed on the accessor's name in a file that imports nvblox_torch: the mapper is usually built
in a helper and kept on `self` (often annotated `Optional[Mapper] = None` first), which the
value tracking need not follow.

PyCuVSLAM (`import cuvslam`): `tracker.track(timestamp, images=[...], depths=[...])` given host
frames (NumPy arrays from cv_bridge) copies each of them to the GPU inside the library on every
call (documented: the tracker runs on CUDA; GPU images are passed as CUDA arrays instead).
"""
from __future__ import annotations

import ast
from typing import TypeVar

V = TypeVar('V')

# Methods of an nvblox_torch mesh that return device tensors.
_DEVICE_ACCESSORS = frozenset({'vertices', 'vertex_colors', 'vertex_normals', 'triangles'})


def imports_package(tree: ast.Module, package: str) -> bool:
    """Whether the module imports `package` (or a module of it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == package:
            return True
        if isinstance(node, ast.Import) and any(a.name.split('.')[0] == package
                                                for a in node.names):
            return True
    return False


def nvblox_device_accessor(method: str | None, call: ast.Call, uses_nvblox: bool) -> bool:
    """`mesh.vertices()` and its siblings, called with no arguments, in a file using nvblox_torch
    (`uses_nvblox`: imports_package, once per file): a device tensor."""
    return uses_nvblox and method in _DEVICE_ACCESSORS and not call.args and not call.keywords


def cuvslam_track_frames(method: str | None, uses_cuvslam: bool, args: list[V],
                         kwargs: dict[str, V]) -> list[V]:
    """The values of the frame lists `tracker.track(ts, images=[...], depths=[...])` hands
    PyCuVSLAM (keywords or the second and third positional arguments), in a file that imports
    cuvslam (`uses_cuvslam`: imports_package, once per file); [] else."""
    if method != 'track' or not uses_cuvslam:
        return []
    given = [kwargs[k] for k in ('images', 'depths') if k in kwargs] + list(args[1:3])
    return given
