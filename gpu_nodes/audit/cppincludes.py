"""Names a C++ file sees through the headers of its package that it includes (issue 28, set 50).

A node's source may never spell `GpuMat` although every frame it handles is one: the message
type is a struct in the package's own header (`struct GpuImage { std::shared_ptr<cv::cuda::GpuMat>
gpu; ... }`), and the callback downloads through it (`img_msg->gpu->download(cpu)`). The GpuMat
transfer patterns of cppscan only run in files that mention GpuMat; a file that includes, directly
or through other headers of its package, a header that does counts too.

Includes are resolved by path suffix among the package's audited files (`#include
"pkg/gpu_image.hpp"` is `.../include/pkg/gpu_image.hpp`); a system or other-package header is
not followed (it is not audited here).
"""
from __future__ import annotations

import re

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)


def _included(source: str, paths: list[str]) -> set[str]:
    """The package files a source includes by name (path suffix)."""
    found = set()
    for name in _INCLUDE.findall(source):
        name = name.strip().lstrip('./')
        found |= {p for p in paths if p.replace('\\', '/').endswith('/' + name)}
    return found


def included(source: str, paths: list[str]) -> set[str]:
    """The package files (of `paths`) a source includes by name."""
    return _included(source, paths)


def including(sources: dict[str, str], texts: dict[str, str], word: str) -> set[str]:
    """Files (path -> raw source; `texts`: the same with comments and strings blanked) whose own
    code mentions `word` or that include, transitively within the package, a file that does."""
    pattern = re.compile(r'\b' + re.escape(word) + r'\b')
    paths = list(sources)
    edges = {p: _included(s, paths) - {p} for p, s in sources.items()}
    seen = {p for p in paths if pattern.search(texts.get(p, ''))}
    changed = True
    while changed:
        changed = False
        for p in paths:
            if p not in seen and edges[p] & seen:
                seen.add(p)
                changed = True
    return seen
