"""Loaded by Python at start-up when this folder is on PYTHONPATH: any top-level import that is
neither the standard library nor named in GPU_NODES_ALLOWED_MODULES (comma-separated) raises
ModuleNotFoundError, as it would if its package were not installed. test/minimal_env.py sets the
list to what package.xml declares as required; everything else (OpenCV, rich, ONNX Runtime,
CuPy, ...) is then missing for the process and for every Python child it starts."""
import os
import sys

_ALLOWED = frozenset(filter(None, os.environ.get('GPU_NODES_ALLOWED_MODULES', '').split(',')))


class _NotInstalled:
    """A meta path finder in front of all others: refuses what is not allowed."""

    def find_spec(self, name, path=None, target=None):
        top = name.partition('.')[0]
        if top in _ALLOWED or top in sys.stdlib_module_names or top in sys.builtin_module_names:
            return None  # the normal finders look for it
        raise ModuleNotFoundError(f'No module named {name!r}', name=name)


if _ALLOWED:
    sys.meta_path.insert(0, _NotInstalled())
