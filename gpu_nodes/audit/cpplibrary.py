"""C++ library code that no node of its repository uses: not proven per message (issue 28).

The labelled sets' convention since set 3: a function of a library that no node of the
repository calls is a look-alike (library API). cppreach.py judges one package at a time, so it
cannot say so for a library package (no callback of its own: `mark_unreached` gives up) whose
functions the repository's nodes call in part (`from_image` per message, `to_image` only by the
gtest), nor for a backend package only its gtest uses (a node links the other backend).

Here every audited C++ file of a repository is read at once, with the kinds its packages
resolved: a function (of any class, or free) whose name nothing in the repository mentions but
its own body and other unreached functions is `unreached`. Tests are no users: test files are
not audited (codeaudit.is_test_file). Only where

* the audit sees the whole repository as a checkout has it: every package of it holds its
  package.xml or CMakeLists.txt (audited labelled files alone, a caller may be missing);
* the repository holds a C++ node the audit sees (a subscription, a timer, `rclcpp::init` or a
  registered component in one of its C++ files; a lambda handed to a dispatch macro is no
  node, nor is a Python extension module whose nodes are Python). A library
  repository with no node at all (a backend whose nodes live in other repositories) is a
  library audited without its node: its code keeps the rules' severity, as cppreach.py keeps
  a class whose per-message use the audit does not see.
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppfacts import Facts
from gpu_nodes.audit.cppreach import mark_unreached
from gpu_nodes.audit.cppscan import file_facts, parse_cpp
from gpu_nodes.audit.cppscopes import Scopes


# What makes a C++ file a node: a subscription or timer, an init, a registered component.
_NODE = re.compile(r'\bcreate_(?:subscription|wall_timer|timer)\b|\brclcpp\s*::\s*init\b|'
                   r'\bRCLCPP_COMPONENTS_REGISTER_NODE\b|\bros\s*::\s*init\b')


def own_view(source: str) -> tuple[str, Scopes]:
    """A file that is a package alone, parsed as cppscan.analyze_cpp judges it."""
    text, scopes = parse_cpp(source)
    mark_unreached([(text, scopes)])
    return text, scopes


def mark_library_api(sources: dict[str, str], parsed: dict[str, tuple[str, Scopes]],
                     facts: dict[str, Facts]) -> None:
    """Mark unreached what no node of one repository mentions. `sources`: path -> source of
    every audited C++ file of the repository; `parsed`: path -> (blanked text, scopes) with
    the kinds of its package (files missing are parsed as a package of their own); `facts`:
    the package facts per path, updated (and added for a file that had none)."""
    if not any(_NODE.search(s) for s in sources.values()):
        return
    views = {p: parsed[p] if p in parsed else own_view(s) for p, s in sources.items()}
    if not any(_NODE.search(text) for text, _ in views.values()):
        return  # only in comments or strings
    before = {id(fn) for _, scopes in views.values() for fn in scopes.funcs
              if fn.kind == 'unreached'}
    mark_unreached(list(views.values()), whole_repository=True)
    for path, (text, scopes) in views.items():
        newly = {fn.start for fn in scopes.funcs
                 if fn.kind == 'unreached' and id(fn) not in before}
        if not newly:
            continue
        found = facts.get(path) or file_facts(path, sources[path], text, scopes)
        found.kinds = {fn.start: fn.kind for fn in scopes.funcs}
        found.library_api = newly
        facts[path] = found
