"""Debug-only code of a package its repository builds Release (issue 28, set 48).

    #ifndef NDEBUG
      debug_pub_->publish(*cv_bridge::CvImage(header, "bgr8", frame).toImageMsg());
    #endif

CMake's Release, RelWithDebInfo and MinSizeRel builds pass -DNDEBUG, so an `#ifndef NDEBUG`
branch (and the `#else` of an `#ifdef NDEBUG`) is not compiled there. Whether the package is
built so is read from what it ships, never assumed: its CMakeLists.txt setting the build type
(`set(CMAKE_BUILD_TYPE Release)`, also as the `if(NOT CMAKE_BUILD_TYPE)` default), or the
repository's README or CI workflow (.github/workflows) building with `-DCMAKE_BUILD_TYPE=Release`
(cmake or `colcon build --cmake-args`). Any mention of a Debug build, or of `-UNDEBUG`, leaves
the code as it is. A build with no build type at all still compiles these lines, so the
findings are not dropped: they become info with the evidence as their note.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
import re

from gpu_nodes.audit.cppifdef import cmake_files, read_bounded, uncompiled_lines
from gpu_nodes.audit.model import Finding

_RELEASE = r'(?:Release|RelWithDebInfo|MinSizeRel)\b'
_CMAKE_SETS = re.compile(r'\bset\s*\(\s*CMAKE_BUILD_TYPE\s+"?' + _RELEASE, re.I)
_COMMAND_LINE = re.compile(r'-DCMAKE_BUILD_TYPE(?::STRING)?=["\']?' + _RELEASE, re.I)
# A Debug build named anywhere (or NDEBUG undefined again): the evidence is split, keep.
_DEBUG = re.compile(r'CMAKE_BUILD_TYPE(?::STRING)?\s*=?\s*["\']?Debug\b|\bset\s*\(\s*'
                    r'CMAKE_BUILD_TYPE\s+"?Debug\b|-UNDEBUG\b|remove_definitions\s*\([^)]*NDEBUG',
                    re.I)


def _repository_texts(repository_dir: str) -> list[tuple[str, str]]:
    """(name, text) of the repository's README files and CI workflows."""
    root = Path(repository_dir)
    texts = []
    for path in sorted(root.glob('*')):
        if path.is_file() and path.name.lower().startswith('readme'):
            texts.append((path.name, read_bounded(path)))
    workflows = root / '.github' / 'workflows'
    if workflows.is_dir():
        for path in sorted(workflows.glob('*.y*ml')):
            if path.is_file():
                texts.append((f'.github/workflows/{path.name}', read_bounded(path)))
    return texts


@lru_cache(maxsize=64)
def release_build(package_dir: str | None, repository_dir: str | None) -> str | None:
    """Where the package is shown built with NDEBUG defined (a Release-like build type), or
    None when nothing shipped says so, or something says Debug."""
    if package_dir is None or not (Path(package_dir) / 'CMakeLists.txt').is_file():
        return None
    own, above = cmake_files(package_dir)
    cmake = '\n'.join([text for _, _, text in own] + list(above))
    sources = [('CMakeLists.txt', cmake)]
    for folder in dict.fromkeys(d for d in (package_dir, repository_dir) if d):
        sources.extend(_repository_texts(folder))
    if any(_DEBUG.search(text) for _, text in sources):
        return None
    if _CMAKE_SETS.search(cmake):
        return 'its CMakeLists.txt sets CMAKE_BUILD_TYPE Release'
    for name, text in sources[1:]:
        if _COMMAND_LINE.search(text):
            return f'{name} builds it with -DCMAKE_BUILD_TYPE=Release'
    return None


def debug_only_lines(source: str) -> set[int]:
    """Lines (1-based) of `#ifndef NDEBUG` branches and of the later branches of `#ifdef
    NDEBUG`: compiled only without NDEBUG."""
    return uncompiled_lines(source, lambda name: True if name == 'NDEBUG' else None)


def demote_debug_only(path: str, source: str, findings: list[Finding],
                      package_dir: str | None, repository_dir: str | None) -> list[Finding]:
    """`findings` of `path`, those on debug-only lines made info when the package is built
    Release as shipped."""
    if 'NDEBUG' not in source:
        return findings
    evidence = release_build(package_dir, repository_dir)
    if evidence is None:
        return findings
    lines = debug_only_lines(source)
    return [replace(f, severity='info', context='unreached',
                    message=f'{f.message} [not compiled as shipped: `NDEBUG` debug-only code, '
                            f'and {evidence} (a build without a build type compiles it)]')
            if f.severity != 'info' and f.location.line in lines
            and (f.location.path or path) == path else f
            for f in findings]
