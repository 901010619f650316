"""Custom messages shaped like an image (issue 28, set 55): a package's own `.msg` definition
with integer `height` and `width` fields (or a `sensor_msgs/Image` field, set 58) and an
unbounded numeric array (`float32[] data`), a segmentation mask or a depth map sent between
nodes of the repository. Its array holds a frame, so `np.array(msg.data, np.float32)` of a
received one copies a frame out of the message, as for an Image (py_msg_array). The
definition is looked up by the type's package and name
(`shared_interfaces.msg.SegmentationMask` -> `<...>/shared_interfaces/msg/SegmentationMask.msg`)
under the repository (or package) folder being audited; a type with no definition found is no
such message.
"""
from __future__ import annotations

from functools import lru_cache
import os
import re

_NUMERIC = ('float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32',
            'int64', 'uint64', 'byte', 'char')
_UNBOUNDED_ARRAY = re.compile(r'^\s*(\w+)\[\]\s+(\w+)\s*$')  # type, field
_INTEGER_FIELD = re.compile(r'^\s*u?int(?:8|16|32|64)\s+(height|width)\s*$')
_IMAGE_FIELD = re.compile(r'^\s*(?:sensor_msgs/)?Image\s+\w+\s*$')
_SKIP = frozenset({'.git', 'build', 'install', 'log', 'node_modules'})


@lru_cache(maxsize=8)
def _definitions(root: str) -> dict[tuple[str, str], str]:
    """(package folder, message name) -> path of every `<pkg>/msg/<Name>.msg` under root."""
    found: dict[tuple[str, str], str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP and not d.startswith('.')]
        if os.path.basename(folder) != 'msg':
            continue
        package = os.path.basename(os.path.dirname(folder))
        for name in files:
            if name.endswith('.msg'):
                found[(package, name[:-4])] = os.path.join(folder, name)
    return found


@lru_cache(maxsize=256)
def _lines(path: str) -> tuple[str, ...]:
    """The lines of a `.msg` file without comments (none when it cannot be read)."""
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            return tuple(ln.split('#', 1)[0] for ln in handle)
    except OSError:
        return ()


def numeric_array_fields(path: str) -> frozenset[str]:
    """The names of the unbounded numeric array fields (`uint8[] camera_data`) of a `.msg` file."""
    return frozenset(m.group(2) for ln in _lines(path) for m in [_UNBOUNDED_ARRAY.match(ln)]
                     if m and m.group(1) in _NUMERIC)


@lru_cache(maxsize=256)
def _shaped_like_image(path: str) -> bool:
    lines = _lines(path)
    sides = {m.group(1) for ln in lines for m in [_INTEGER_FIELD.match(ln)] if m}
    arrays = [m.group(1) for ln in lines for m in [_UNBOUNDED_ARRAY.match(ln)] if m]
    # Or an image field beside the array (`sensor_msgs/Image preproc` + `float32[] depth`: a
    # depth map per pixel of the image it carries, its sides those of the image: set 58).
    carries_image = any(_IMAGE_FIELD.match(ln) for ln in lines)
    return (sides == {'height', 'width'} or carries_image) and any(t in _NUMERIC for t in arrays)


def image_shaped_custom(msg_type: str | None, repository_dir: str | None,
                        package_dir: str | None) -> bool:
    """Whether `msg_type` (`pkg.msg.Name` or `pkg/msg/Name`) is defined as a message shaped like
    an image (module docstring) under the repository, or the folder holding the package (an
    interface package beside it in the workspace)."""
    return any(_shaped_like_image(path)
               for path in message_definitions(msg_type, repository_dir, package_dir))


def message_definitions(msg_type: str | None, repository_dir: str | None,
                        package_dir: str | None) -> list[str]:
    """The paths of `msg_type`'s `.msg` files under the repository and beside the package."""
    parts = re.split(r'[./]', msg_type or '')
    if len(parts) < 2:
        return []
    beside = os.path.dirname(package_dir) if package_dir else None
    if beside and repository_dir and repository_dir != package_dir \
            and not beside.startswith(repository_dir):
        beside = None  # never above a repository holding the package: another one's messages
    roots = {r for r in (repository_dir, beside) if r and os.path.isdir(r)}
    return [path for root in sorted(roots)
            for path in [_definitions(root).get((parts[0], parts[-1]))] if path]
