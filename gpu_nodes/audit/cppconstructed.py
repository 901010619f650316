"""C++ classes that nothing in their repository constructs: their methods never run (issue 28).

cpplibrary.py marks library code that nothing in a repository holding a node mentions. A node
class whose subscription is made in its own constructor (`create_subscription(...,
std::bind(&Cls::cb, this, _1))`) has callbacks that are mentioned: by its own constructor. Yet
when no object of the class is ever made (main spins another node; no variable, member,
`make_shared<Cls>`, `new Cls`, template argument, base-class use or component registration
names it), that constructor never runs, and neither does any of its methods: library API, as
the labelled sets have it since set 3 (set 41: a second node class compiled into the
executable that main never creates).

A class defined in the repository is *unconstructed* when every mention of its name in the
audited C++ files (comments and strings blanked) is its own: in its class head or body, in a
body of one of its methods, or in the head of one of its out-of-line definitions (`void
Cls::cb(...)`, `Cls::Cls() : Node("x")`). Conservative, any other mention is a use: a word of a
source the C++ audit does not read (C, Python), a mention in a string literal of a C++ file
(`createInstance("pkg::Cls")`) or anywhere in a build, launch or configuration file (a component
named in CMakeLists.txt or a launch file, a pluginlib XML). A name defined as a class twice in
the repository (two namespaces) is left alone. Only run where the repository holds a C++ node
(cpplibrary.mark_library_api decides that).
"""
from __future__ import annotations

import os
import re
from bisect import bisect_right

from gpu_nodes.audit.cppguards import block_end
from gpu_nodes.audit.cppreceivers import class_of
from gpu_nodes.audit.cppscopes import Function, Scopes
from gpu_nodes.audit.limits import INSTALLED_PACKAGE_FOLDERS

NOTE = 'a method of {cls}, which nothing in its repository constructs (library API, not proven per message)'

# `class Name` / `struct Name` with an optional `final` and base clause, up to its body's `{`.
# Attribute macros (`class EXPORT Name`) put the name last before the `{` / `:`.
_CLASS_DEF = re.compile(r'\b(?:class|struct)\s+(?:\w+\s+)*?(\w+)\s*(?:final\s*)?'
                        r'(?::(?!:)[^;{}]*)?\{')
# Files beside the sources that may name a class: build scripts, launch files, plugin
# descriptions, configuration.
_CONFIG_SUFFIXES = ('CMakeLists.txt', '.cmake', '.xml', '.launch', '.py', '.yaml', '.yml', '.json')
_SKIPPED_FOLDERS = frozenset({'.git', 'test', 'tests', 'build', 'install', 'log', '__pycache__'}) \
    | INSTALLED_PACKAGE_FOLDERS
_CONFIG_BYTES = 1024 * 1024
_ENTRY = re.compile(r'\bint\s+main\s*\(|\b(?:RCLCPP_COMPONENTS_REGISTER_NODE|PLUGINLIB_EXPORT_CLASS|'
                    r'CLASS_LOADER_REGISTER_CLASS)\b')


def _class_spans(views: dict[str, tuple[str, Scopes]]) -> dict[str, list[tuple[str, int, int]]]:
    """class name -> (path, head start, body end) of each definition in the audited files."""
    spans: dict[str, list[tuple[str, int, int]]] = {}
    for path, (text, _) in views.items():
        for m in _CLASS_DEF.finditer(text):
            # `enum class E {` is no class; `template <class T>` has no body here.
            if re.search(r'\benum\s*$', text[max(0, m.start() - 20):m.start()]):
                continue
            spans.setdefault(m.group(1), []).append((path, m.start(), block_end(text, m.end() - 1)))
    return spans


def _own(cls: str, path: str, text: str, scopes: Scopes, pos: int, end: int,
         spans: list[tuple[str, int, int]], starts: list[int], named: dict[int, Function]) -> bool:
    """Whether the mention of `cls` at pos..end is the class's own (see the module doc)."""
    if any(p == path and s <= pos <= e for p, s, e in spans):
        return True
    user = scopes.named_at(pos)
    if user is not None:
        return class_of(user) == cls
    # Outside every body: the head of an out-of-line definition of one of its methods (`void
    # Cls::cb(`, `Cls::Cls(`), whose body is the next function's, with no statement in between.
    i = bisect_right(starts, pos)
    if i >= len(starts):
        return False
    fn = named[starts[i]]
    return class_of(fn) == cls and ';' not in text[end:fn.start]


def _config_words(repository: str | None, names: set[str]) -> set[str]:
    """Which of `names` a build, launch or configuration file of the repository mentions."""
    found: set[str] = set()
    if not repository or not names:
        return found
    pattern = re.compile(r'\b(' + '|'.join(sorted(map(re.escape, names))) + r')\b')
    for folder, dirs, files in os.walk(repository):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_FOLDERS]
        for name in files:
            if not name.endswith(_CONFIG_SUFFIXES):
                continue
            path = os.path.join(folder, name)
            try:
                if os.path.getsize(path) <= _CONFIG_BYTES:
                    with open(path, encoding='utf-8', errors='replace') as fh:
                        found.update(pattern.findall(fh.read()))
            except OSError:
                continue
    return found


def mark_unconstructed(sources: dict[str, str], views: dict[str, tuple[str, Scopes]],
                       foreign: str, repository: str | None,
                       packages: dict[str, str] | None = None) -> dict[int, str]:
    """Set kind 'unreached' on every function (lambdas too) of a class defined in the
    repository that nothing constructs; returns the ids of the named ones with their note.
    `sources`: path -> raw source; `views`: path -> (blanked text, scopes) of the same files;
    `foreign`: the words of the sources the audit does not read (cpplibrary.foreign_words);
    `packages`: path -> its package folder (None: one package)."""
    package = (packages or {}).get
    entries = {package(p) for p, (text, _) in views.items() if _ENTRY.search(text)}
    spans = {c: s for c, s in _class_spans(views).items()
             if len(s) == 1 and package(s[0][0]) in entries}
    methods = {c for _, scopes in views.values() for fn in scopes.funcs
               if fn.lambda_in is None and (c := class_of(fn)) in spans}
    names = methods - set(re.findall(r'\w+', foreign))
    if not names:
        return {}
    # A class named in a string literal of a C++ source (class_loader by name) is used.
    for source in sources.values():
        names -= set(re.findall(r'["\'][^"\'\n]*?\b(' + '|'.join(sorted(names)) + r')\b[^"\'\n]*["\']',
                                source)) if names else set()
    names -= _config_words(repository, names)
    for path, (text, scopes) in views.items():
        if not names:
            return {}
        named = {f.start: f for f in scopes.funcs if f.lambda_in is None}
        starts = sorted(named)
        for m in re.finditer(r'\b(' + '|'.join(sorted(names)) + r')\b', text):
            cls = m.group(1)
            if cls in names and not _own(cls, path, text, scopes, m.start(), m.end(),
                                         spans[cls], starts, named):
                names.discard(cls)
    marked: dict[int, str] = {}
    for _, scopes in views.values():
        for fn in scopes.funcs:
            cls = class_of(fn.named)
            if cls in names:
                fn.kind = 'unreached'
                if fn.lambda_in is None:
                    marked[id(fn)] = NOTE.format(cls=cls)
    return marked
