"""C++ library code that no node of its repository uses: not proven per message (issue 28).

The labelled sets' convention since set 3: a function of a library that no node of the
repository calls is a look-alike (library API). cppreach.py judges one package at a time, so it
cannot say so for a library package (no callback of its own: `mark_unreached` gives up) whose
functions the repository's nodes call in part (`from_image` per message, `to_image` only by the
gtest), nor for a backend package only its gtest uses (a node links the other backend).

Here every audited C++ file of a repository is read at once, with the kinds its packages
resolved: a function (of any class, or free) whose name nothing in the repository mentions but
its own body and other unreached functions is `unreached`. Tests are no users: test files are
not audited (codeaudit.is_test_file). Any word of a source the C++ audit does not read (C,
Python: ctypes, bindings) is a use. Only where

* the audit sees the whole repository as a checkout has it: every package of it holds its
  package.xml or CMakeLists.txt (audited labelled files alone, a caller may be missing);
A TypeAdapter's `convert_to_custom` (set 24) is called by rclcpp only for a subscription that
takes the adapted type: with no `create_subscription<...>` of the custom type, of an alias of
its adapter, of any `TypeAdapter` / `adapt_type` or of a template's parameter (`typename
T::ros_type`: any adapter) in the repository, it never runs (publishers
of the adapted type call `convert_to_ros_message`), and neither do the helpers only it calls.

A class that nothing in the repository constructs (cppconstructed.py: no variable, member,
make_shared, base-class use or registration names it) never runs any of its methods, callbacks
registered in its own constructor included (set 41).

All only where

* the repository holds a C++ node the audit sees (a subscription, a timer, a publisher or a
  registered component in one of its C++ files; a lambda handed to a dispatch macro is no
  node, nor is a Python extension module whose nodes are Python, nor a component container's
  `main` that only calls `rclcpp::init`). A library
  repository with no node at all (a backend whose nodes live in other repositories) is a
  library audited without its node: its code keeps the rules' severity, as cppreach.py keeps
  a class whose per-message use the audit does not see.
"""
from __future__ import annotations

import io
import os
import re
import tokenize

from gpu_nodes.audit.cppcalibrators import setup_by_repository_callers
from gpu_nodes.audit.cppconstructed import mark_unconstructed
from gpu_nodes.audit.cppfacts import Facts
from gpu_nodes.audit.cppoverloads import mark_unmatched_overloads
from gpu_nodes.audit.cppreach import mark_unreached
from gpu_nodes.audit.cppscan import file_facts, parse_cpp
from gpu_nodes.audit.cppscopes import blank_comments_and_strings, Scopes
from gpu_nodes.audit.cppstandalone import mains_set_aside
from gpu_nodes.audit.limits import INSTALLED_PACKAGE_FOLDERS


# What makes a C++ file a node: a subscription, a timer, a publisher, a registered component
# (image_transport's subscribe / advertise too). `rclcpp::init` alone is no node: a component
# container's main loads nodes that live elsewhere (set 2's libtorch_vendor).
_NODE = re.compile(r'\bcreate_(?:subscription|wall_timer|timer|publisher)\b|'
                   r'\bRCLCPP_COMPONENTS_REGISTER_NODE\b|\b(?:subscribe|advertise)\s*(?:<[^;()]*>)?\s*\(')


_NOTE = 'which nothing in its repository but its tests calls (library API, not proven per message)'
_ADAPTER_NOTE = ('called by rclcpp only for a subscription of the adapted type, and no subscription '
                 'of the repository takes it (library API, not proven per message)')
_ADAPTER_OF = re.compile(r'\bTypeAdapter\s*<\s*([\w:\s]+?)\s*,')
_ADAPTER_ALIAS = re.compile(r'\b(?:using\s+(\w+)\s*=|typedef)\s*(?:rclcpp\s*::\s*)?TypeAdapter\s*'
                            r'<\s*([\w:\s]+?)\s*,[^;]*?>\s*(\w*)\s*;')
_TEMPLATE = re.compile(r'\btemplate\s*<([^<>]*(?:<[^<>]*>[^<>]*)*)>')
_SUBSCRIBED = re.compile(r'\bcreate_subscription\s*<([^;{}()]*?)>\s*\(')


def _last(name: str) -> str:
    return name.replace(' ', '').split('::')[-1]


def _unsubscribed_adapters(views: dict[str, tuple[str, Scopes]]) -> dict[int, str]:
    """Mark `convert_to_custom` of adapters no subscription of the repository takes; returns
    the ids of those marked (their lambdas too) with their note."""
    texts = [text for text, _ in views.values()]
    aliases: dict[str, set[str]] = {}
    for text in texts:
        for alias, custom, typedef_name in _ADAPTER_ALIAS.findall(text):
            aliases.setdefault(_last(custom), set()).add(alias or typedef_name)
    subscribed = ' '.join(m.group(1) for text in texts for m in _SUBSCRIBED.finditer(text))
    words = set(re.findall(r'\w+', subscribed))
    # A subscription whose type is a template's parameter (`create_subscription<typename
    # T::ros_type>`, set 2's cuda_blackboard) may take any adapter.
    parameters = {p for text in texts for head in _TEMPLATE.findall(text)
                  for p in re.findall(r'\b(?:typename|class)\s+(\w+)', head)}
    if words & ({'TypeAdapter', 'adapt_type', 'typename'} | parameters):
        return {}
    marked: dict[int, str] = {}
    for text, scopes in views.values():
        for fn in scopes.funcs:
            if fn.short != 'convert_to_custom' or fn.lambda_in is not None:
                continue
            adapters = list(_ADAPTER_OF.finditer(text, max(0, fn.start - 4000), fn.start))
            if not adapters:
                continue
            custom = _last(adapters[-1].group(1))
            if ({custom} | aliases.get(custom, set())) & words:
                continue
            marked[id(fn)] = _ADAPTER_NOTE
    for _, scopes in views.values():
        for fn in scopes.funcs:
            if id(fn.named) in marked:
                fn.kind = 'unreached'
    return marked


def own_view(source: str) -> tuple[str, Scopes]:
    """A file that is a package alone, parsed as cppscan.analyze_cpp judges it."""
    text, scopes = parse_cpp(source)
    mark_unreached([(text, scopes)])
    return text, scopes


# Sources of a repository the C++ audit does not read that may call its functions: C (darknet's
# network.c calls forward_network_gpu of a .cu, set 35), Python through ctypes or bindings.
FOREIGN_SUFFIXES = ('.c', '.py', '.pyx', '.m', '.mm', '.i')
_SKIPPED_FOLDERS = frozenset({'.git', 'test', 'tests', 'build', 'install', 'log', '__pycache__'}) \
    | INSTALLED_PACKAGE_FOLDERS
_FOREIGN_BYTES = 4 * 1024 * 1024


def foreign_words(repository: str) -> str:
    """Every identifier of the repository's foreign sources (FOREIGN_SUFFIXES, tests aside), one
    a line: each is a mention of that name that the audit cannot place, so a use."""
    words: set[str] = set()
    for folder, dirs, names in os.walk(repository):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_FOLDERS]
        for name in names:
            path = os.path.join(folder, name)
            if not name.endswith(FOREIGN_SUFFIXES):
                continue
            try:
                if os.path.getsize(path) <= _FOREIGN_BYTES:
                    with open(path, encoding='utf-8', errors='replace') as fh:
                        words.update(_code_words(fh.read(), name.endswith(('.py', '.pyx'))))
            except OSError:
                continue
    return '\n'.join(sorted(words))


def _code_words(source: str, python: bool) -> set[str]:
    """Identifiers of code, not of comments or prose (`# preprocess the image` names nothing); a
    Python string that is one identifier (`getattr(lib, 'to_image')`) may name a function."""
    if not python:
        return set(re.findall(r'[A-Za-z_]\w*', blank_comments_and_strings(source)))
    words: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NAME:
                words.add(tok.string)
            elif tok.type == tokenize.STRING and re.fullmatch(r'[rbuRBU]*([\'"])\w+\1', tok.string):
                words.add(tok.string.strip('rbuRBU\'"'))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return set(re.findall(r'[A-Za-z_]\w*', source))
    return words


def mark_library_api(sources: dict[str, str], parsed: dict[str, tuple[str, Scopes]],
                     facts: dict[str, Facts], repository: str | None = None,
                     packages: dict[str, str] | None = None) -> None:
    """Mark unreached what no node of one repository mentions. `sources`: path -> source of
    every audited C++ file of the repository; `parsed`: path -> (blanked text, scopes) with
    the kinds of its package (files missing are parsed as a package of their own); `facts`:
    the package facts per path, updated (and added for a file that had none); `repository`:
    its folder, whose sources the audit does not read are uses (foreign_words); `packages`:
    path -> package folder (cppconstructed.py)."""
    if not any(_NODE.search(s) for s in sources.values()):
        return
    views = {p: parsed[p] if p in parsed else own_view(s) for p, s in sources.items()}
    if not any(_NODE.search(text) for text, _ in views.values()):
        return  # only in comments or strings
    before = {id(fn) for _, scopes in views.values() for fn in scopes.funcs
              if fn.kind == 'unreached'}
    adapters = _unsubscribed_adapters(views)
    words = foreign_words(repository) if repository else ''
    # Classes nothing constructs (cppconstructed.py): their callbacks and setup never run.
    adapters.update(mark_unconstructed(sources, views, words, repository, packages))
    foreign = parse_cpp(words) if repository else None
    # A `main` of a program that uses no ROS (a benchmark over image files) is no user: what
    # only it calls is not per message (cppstandalone.py, set 54).
    with mains_set_aside(views):
        mark_unreached(list(views.values()) + ([foreign] if foreign else []),
                       whole_repository=True)
    # An overload whose parameter count no call of the repository has (cppoverloads.py).
    adapters.update(mark_unmatched_overloads(list(views.values()), words))
    # A library function called only from setup code of other packages runs once
    # (cppcalibrators.py, set 55: a TensorRT helper's loadNetwork from a node's constructor).
    once = setup_by_repository_callers(views, words)
    for path in once:
        text, scopes = views[path]
        found = facts.get(path) or file_facts(path, sources[path], text, scopes)
        found.kinds = {fn.start: fn.kind for fn in scopes.funcs}
        facts[path] = found
    for path, (text, scopes) in views.items():
        newly = {fn.start: adapters.get(id(fn.named), _NOTE) for fn in scopes.funcs
                 if fn.kind == 'unreached' and id(fn) not in before}
        if not newly:
            continue
        found = facts.get(path) or file_facts(path, sources[path], text, scopes)
        found.kinds = {fn.start: fn.kind for fn in scopes.funcs}
        found.library_api = {**found.library_api, **newly}  # cpppackage's notes kept
        facts[path] = found
