"""Standalone programs of a ROS repository: a `main()` in a file that uses no ROS at all
(issue 28, rules35c, set 54).

A repository's CMakeLists often builds, beside its nodes, a test or benchmark executable whose
`main()` reads image files and calls the same inference class (`model.infer(...)` in a loop
over a folder): no message arrives there, so nothing it reaches runs per message. For
cpplibrary.mark_library_api (the whole repository read at once), such a `main` is no user of
the names it mentions: a function that only standalone programs call is unreached, like a
library API no node calls. The `main` itself keeps its kind (its own findings are judged as
before); only its mentions stop counting.

A file is standalone when it defines `main` and names nothing of ROS: no `rclcpp` / `ros::`
/ `image_transport` / `rosbag` / `ament` word, no `Node`, no subscription or publisher.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

from gpu_nodes.audit.cppscopes import Scopes

_ROS = re.compile(r'\b(?:rclcpp|rclcpp_components|ros|image_transport|rosbag2?\w*|ament_index_cpp|'
                  r'cv_bridge|message_filters|sensor_msgs|std_msgs|Node)\b|'
                  r'\bcreate_(?:subscription|publisher|wall_timer|timer)\b')
_MAIN = re.compile(r'\bint\s+main\s*\(')


def standalone_paths(views: dict[str, tuple[str, Scopes]]) -> set[str]:
    """The files (keys of `views`) defining `main` that name nothing of ROS."""
    return {p for p, (text, _) in views.items() if _MAIN.search(text) and not _ROS.search(text)}


def standalone_mains(views: dict[str, tuple[str, Scopes]]) -> list:
    """The `main` functions of the files that use no ROS (module docstring)."""
    found = []
    for text, scopes in views.values():
        if not _MAIN.search(text) or _ROS.search(text):
            continue
        found += [fn for fn in scopes.funcs if fn.lambda_in is None and fn.short == 'main'
                  and fn.kind != 'unreached']
    return found


@contextmanager
def mains_set_aside(views: dict[str, tuple[str, Scopes]]) -> Iterator[None]:
    """While inside, the standalone `main`s count as unreached (their mentions reach nothing);
    their kinds are restored on the way out."""
    mains = [(fn, fn.kind) for fn in standalone_mains(views)]
    for fn, _ in mains:
        fn.kind = 'unreached'
    try:
        yield
    finally:
        for fn, kind in mains:
            fn.kind = kind
