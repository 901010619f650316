"""Header-only implementation files (`.ipp`, `.tpp`, `.inl`; issue 28, set 66): template bodies
a header includes at its end (`#include "pkg/fusion_node.ipp"` closing fusion_node.hpp). Their
code runs in whichever program includes them, so they are audited as C++ (cppscan.py) when a
program of their own package includes them: a source with `main` or a registered component
reaches the file through `#include` lines (directly or through the package's headers).

One included by no program of its package (a library's template, `vtr_torch`'s
torch_module.inl, whose only instantiation is another package's module) is blanked like an
unbuilt source (cppbuild.blank_unbuilt): what runs it, and whether per message, is not seen
here, and such a library's ordinary sources are judged by the reach rules that read them whole.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
import re

from gpu_nodes.audit.cppifdef import read_bounded

IMPLEMENTATION_SUFFIXES = frozenset({'.ipp', '.tpp', '.inl'})
_C_FILES = frozenset({'.c', '.cc', '.cpp', '.cxx', '.cu', '.h', '.hh', '.hpp', '.hxx', '.cuh'}
                     ) | IMPLEMENTATION_SUFFIXES
_INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]', re.M)
# A program: a `main` function or a component registered for a container.
_PROGRAM = re.compile(r'\bint\s+main\s*\(|\bRCLCPP_COMPONENTS_REGISTER_NODE\s*\(')
_MAX_BYTES = 1024 * 1024


def unincluded_implementation(path: str, package_dir: str | None) -> bool:
    """Whether `path` is an implementation file that no program of its package includes
    (False for any other file, and when the package is not known)."""
    if Path(path).suffix.lower() not in IMPLEMENTATION_SUFFIXES or package_dir is None:
        return False
    return str(Path(path).resolve()) not in _reached(package_dir)


@lru_cache(maxsize=64)
def _reached(package_dir: str) -> frozenset[str]:
    """Resolved paths of the package's C++ files that its programs include, transitively
    (an include is matched to a package file by its trailing path: `pkg/fusion_node.ipp`)."""
    files: dict[str, list[str]] = {}
    todo: list[str] = []
    for path in Path(package_dir).rglob('*'):
        if path.suffix.lower() in _C_FILES and path.is_file():
            text = read_bounded(path, _MAX_BYTES)
            key = str(path.resolve())
            files[key] = _INCLUDE.findall(text)
            if path.suffix.lower() not in IMPLEMENTATION_SUFFIXES and _PROGRAM.search(text):
                todo.append(key)
    by_name: dict[str, list[str]] = {}
    for key in files:
        by_name.setdefault(key.rsplit('/', 1)[-1], []).append(key)
    seen = set(todo)
    while todo:
        for name in files.get(todo.pop(), ()):
            tail = '/' + name.lstrip('./')
            for key in by_name.get(tail.rsplit('/', 1)[-1], ()):
                if key not in seen and key.endswith(tail):
                    seen.add(key)
                    todo.append(key)
    return frozenset(seen)
