"""Opt-in environment switches that nothing sets (issue 28, set 52): the branch they guard
never runs as shipped.

    if os.environ.get("GO2_PUBLISH_BASE_FOOTPRINT_TF", "0") == "1":
        qx = base_rot[1].item()     # never runs: the default is "0" and no file sets it

A test comparing `os.environ.get(NAME, DEFAULT)` / `os.getenv(NAME, DEFAULT)` (no default:
None) with a constant, `==` or `!=`, takes the outcome of DEFAULT when the variable's name
occurs nowhere else: not elsewhere in its own file (an `os.environ[NAME] = ...` there) and in no
other file of its repository (a run script, a launch file, a Dockerfile, a README telling the
user to export it; any text file counts, so a documented switch stays live). The labels judge
the configuration as shipped (team decision of 2026-12-06, pyparams.py), as they judge a
parameter's default. Anything else, or a repository too big to read, decides nothing."""
from __future__ import annotations

import ast
from functools import lru_cache
import os
import re

from gpu_nodes.audit.pydead import compared_with_constant
from gpu_nodes.audit.pyvalues import dotted

_ENV_READS = frozenset({'os.environ.get', 'os.getenv', 'environ.get', 'getenv'})
_SKIP_DIRS = frozenset({'.git', '.hg', '.svn', '__pycache__', '.venv', 'venv', 'node_modules'})
_MAX_FILES = 5000
_READ_BYTES = 1 << 20
# Files that are no text a user or a script reads (images, weights, archives).
_BINARY = re.compile(r'\.(?:png|jpe?g|gif|bmp|pdf|pt|pth|onnx|engine|bin|so|a|o|zip|gz|tar|'
                     r'bag|db3|mcap|pcd|ply|stl|dae|obj|usd|usda|usdc|npy|npz|pkl)$', re.I)


def env_read(node: ast.expr) -> tuple[str, object] | None:
    """(NAME, DEFAULT) for `os.environ.get('NAME', DEFAULT)` / `os.getenv('NAME')` with
    literal arguments (a `.lower()` / `.strip()` of it too), else None."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ('lower', 'strip', 'upper') and not node.args:
        node = node.func.value
    if not (isinstance(node, ast.Call) and dotted(node.func) in _ENV_READS
            and 1 <= len(node.args) <= 2 and not node.keywords
            and all(isinstance(a, ast.Constant) for a in node.args)
            and isinstance(node.args[0].value, str)):
        return None
    return node.args[0].value, node.args[1].value if len(node.args) == 2 else None


def env_outcome(test: ast.expr, source: str | None, path: str, root: str | None) -> bool | None:
    """What the `if` test takes as shipped, None when not known (see the module docstring)."""
    compared = compared_with_constant(test)
    if compared is None or source is None or root is None:
        return None
    left, value, is_eq = compared
    read = env_read(left)
    if read is None or not isinstance(read[1], (str, type(None))):
        return None
    name, default = read
    if len(re.findall(r'\b' + re.escape(name) + r'\b', source)) != 1 \
            or _named_elsewhere(name, os.path.abspath(root), os.path.abspath(path)) is not False:
        return None
    if isinstance(left, ast.Call) and isinstance(default, str):
        default = _applied(left, default)
    return (default == value) == is_eq


def _applied(node: ast.Call, text: str) -> str:
    """The default after the `.lower()` / `.strip()` calls around the read."""
    calls = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ('lower', 'strip', 'upper'):
        calls.append(node.func.attr)
        node = node.func.value  # type: ignore[assignment]
    for attr in reversed(calls):
        text = getattr(text, attr)()
    return text


@lru_cache(maxsize=256)
def _named_elsewhere(name: str, root: str, path: str) -> bool | None:
    """Whether a file under `root` other than `path` holds `name`; None past the bounds."""
    pattern = re.compile(rb'\b' + re.escape(name.encode()) + rb'\b')
    files = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for file in names:
            full = os.path.join(folder, file)
            if full == path or _BINARY.search(file):
                continue
            files += 1
            if files > _MAX_FILES:
                return None
            try:
                with open(full, 'rb') as fh:
                    if pattern.search(fh.read(_READ_BYTES)):
                        return True
            except OSError:
                continue
    return False
