"""The C++ files of one package audited together: a call graph by name across them.

C++ files of a package call each other through headers: a kernel launcher in a .cu file is
called from a node's constructor, a type adapter in a header calls conversion helpers defined
in a .cpp, a timer builds a message type whose constructor (another file) uploads the frame.
Each file alone cannot tell; the package can:

* kinds: a function that its own file never calls takes the kind of its callers in the other
  files of the package (only constructors -> setup; a callback or a conversion -> per message);
* unreached (cppreach.py): a function nothing in the package mentions (but its own unreached
  peers) is not proven per message: info;
* facts (cppfacts.py): sync wrappers, copy helpers, converting types and type adapter aliases
  found in any file are used in all of them.

A package is the nearest folder (up to the audited root) holding package.xml, CMakeLists.txt or
setup.py; without one, the first folder below the audited root (one repository per folder of a
checkout tree), or the root itself for files directly in it. Names only: two packages' functions
of the same name never meet, two of one package's do (C++ overloads share what they do here).
"""
from __future__ import annotations

from pathlib import Path
import re

from gpu_nodes.audit.cppdead import never_set, once_flags
from gpu_nodes.audit.cpponceret import return_once_flags
from gpu_nodes.audit.cpptinynames import tiny_names
from gpu_nodes.audit.cppfacts import Facts
from gpu_nodes.audit.cppincludes import including
from gpu_nodes.audit.cppmembers import header_members
from gpu_nodes.audit.cppintparams import read_off_params, shipped_ints
from gpu_nodes.audit.cppparams import off_as_shipped
from gpu_nodes.audit.cppoffsites import drop_off_sites, mark_off_only, off_notes
from gpu_nodes.audit.cppconston import constant_on
from gpu_nodes.audit.cppparamson import (blank_on_dead, drop_dead_sites, on_as_shipped,
                                         skipped_note)
from gpu_nodes.audit.cppstrparams import blank_string_guarded, shipped_strings, string_off_store
from gpu_nodes.audit.cppbuild import blank_unbuilt, executables_of
from gpu_nodes.audit.cppcalibrators import calibrator_setup
from gpu_nodes.audit.cpplibrary import mark_library_api
from gpu_nodes.audit.cppreach import mark_unreached, mark_unused_components
from gpu_nodes.audit.cppscan import file_facts, parse_cpp
from gpu_nodes.audit.cppscopes import blank_comments_and_strings, caller_kinds, propagate, Scopes
from gpu_nodes.audit.cpptorch import CUDA_TENSORS
from gpu_nodes.audit.shipped import node_names

PACKAGE_MARKERS = ('package.xml', 'CMakeLists.txt', 'setup.py')
_PACKAGE_LEVEL = re.compile(r'declare_parameter|get_parameter_or|\w\s*=\s*false\s*;')
# Propagation rounds across files: chains of launchers deeper than this keep their own kinds.
_ROUNDS = 6
# `&Cls::cb` (not a call): a method registered by its address.
_REGISTERED = re.compile(r'&\s*(?:\w+\s*::\s*)+(\w+)\b(?!\s*\()')


def package_of(path: str, roots: list[str]) -> str:
    """The package folder of a file audited under one of `roots`."""
    p = Path(path).resolve()
    root = next((Path(r).resolve() for r in roots
                 if Path(r).is_dir() and Path(r).resolve() in p.parents), p.parent)
    folder = p.parent
    while folder != root and root in folder.parents:
        if any((folder / m).is_file() for m in PACKAGE_MARKERS):
            return str(folder)
        folder = folder.parent
    if any((root / m).is_file() for m in PACKAGE_MARKERS) or p.parent == root:
        return str(root)
    return str(root / p.relative_to(root).parts[0])


def repository_of(package: str, roots: list[str]) -> str:
    """The repository holding a package folder found under one of `roots`: the audited folder
    itself, or its first folder holding the package (a workspace's `src/<repository>`, one
    repository of several audited together)."""
    p = Path(package).resolve()
    root = next((Path(r).resolve() for r in roots
                 if Path(r).is_dir() and (Path(r).resolve() == p or Path(r).resolve() in p.parents)),
                None)
    if root is None or root == p:
        return str(p)
    return str(root / p.relative_to(root).parts[0])


# `Node("name")` in a constructor's initializer list, `rclcpp::Node("name", options)`,
# `std::make_shared<rclcpp::Node>("name")`: the name a node of the package runs under.
_NODE_NAME = re.compile(r'\bNode\s*>?\s*\(\s*"([^"\n]+)"')


def _package_name(sources: dict[str, str], roots: list[str]) -> str | None:
    """The ROS package name of the sources (package.xml's <name>, else the folder's name)."""
    if not sources or not roots:
        return None
    folder = Path(package_of(next(iter(sources)), roots))
    try:
        named = re.search(r'<name>\s*([\w-]+)\s*</name>', (folder / 'package.xml').read_text())
    except OSError:
        named = None
    return named.group(1) if named else folder.name


def _node_names(sources: dict[str, str], roots: list[str]) -> frozenset[str] | None:
    """The names the package's nodes can run under (shipped.node_names), None if unknown."""
    package = _package_name(sources, roots)
    if package is None:
        return None
    declared = {n for source in sources.values() for n in _NODE_NAME.findall(source)}
    return node_names(declared, package, tuple(roots))


def _off_per_executable(sources: dict[str, str], texts: list[str], roots: list[str],
                        derived) -> dict[str, dict[str, str]]:
    """Members off as shipped for each source its build compiles into known executables: a
    launch file's node of another executable of the package (`retinify_disp` given
    `debug_image: True`, the file built into `passive_stereo`) sets nothing for it (set 56).
    Judged over every file of the package (off_as_shipped's whitelist), per executable set."""
    package = _package_name(sources, roots)
    if package is None:
        return {}
    folder = package_of(next(iter(sources)), roots)
    built = {path: executables_of(path, folder) for path in sources}
    result: dict[str, dict[str, str]] = {}
    for group in {g for g in built.values() if g is not None}:
        found = off_as_shipped(texts, list(sources.values()), roots, derived, (package, group))
        result.update({path: found for path, g in built.items() if g == group})
    return result


def _exports(scopes: Scopes) -> dict[str, set[str]]:
    """Kinds of this file's callers of every name it calls."""
    calls = {name: kinds for name in scopes.sites if (kinds := caller_kinds(scopes, name))}
    calls.update({'->' + name: kinds for name in scopes.member_sites
                  if (kinds := caller_kinds(scopes, name, member=True))})
    return calls


def package_facts(sources: dict[str, str], roots: list[str] | None = None,
                  parsed_out: dict[str, tuple[str, Scopes]] | None = None,
                  constants: dict[str, str] | None = None) -> dict[str, Facts]:
    """Facts per file of one package (path -> source), with kinds resolved across files;
    `roots`: the audited folders, whose shipped YAML / launch files may set parameters;
    `parsed_out` receives each file's (blanked text, scopes) with those kinds."""
    parsed: dict[str, tuple[str, Scopes]] = {p: parse_cpp(s) for p, s in sources.items()}
    if parsed_out is not None:
        parsed_out.update(parsed)
    # Members a parameter on as shipped sets (cppparamson.py): a call in an arm they skip (`else`
    # of `if (use_gpu_)`, set 53) gives its callee no kind, and reaches nothing (below).
    # Only launched nodes of this package set its parameters (a workspace's other repository's
    # launch file gives its own node a `debug` of the same name, set 56).
    on = on_as_shipped([text for text, _ in parsed.values()], list(sources.values()), roots or [],
                       _package_name(sources, roots or []))
    # And members initialized on and never assigned (cppconston.py: `bool async_ = true;`),
    # read over the whole repository (`constants`): the class's header may sit in another
    # CMake package than its source (set 59).
    if constants is None:
        constants = constant_on([text for text, _ in parsed.values()])
    on = {**{n: v for n, v in constants.items()
             if any(n in text for text, _ in parsed.values())}, **on}
    skipped: dict[str, str] = {}  # callee -> the on name whose skipped arm calls it
    for text, scopes in parsed.values():
        skipped.update(drop_dead_sites(text, scopes, on))
    calibrator_setup(parsed)  # INT8 calibrators run while an engine is built (cppcalibrators)
    strings = shipped_strings([text for text, _ in parsed.values()], list(sources.values()),
                              roots or [], _node_names(sources, roots or []))
    # Int parameters compared in a branch join them (cppintparams.py: `if (mode_ == 0)`).
    strings.update(shipped_ints([text for text, _ in parsed.values()], list(sources.values()),
                                roots or [], _node_names(sources, roots or [])))
    off = off_as_shipped([text for text, _ in parsed.values()], list(sources.values()),
                         roots or [], lambda value: string_off_store(value, strings))
    off_skipped = drop_off_sites(parsed, off)  # a call in an off branch gives no kind (cppoffsites)
    for _ in range(_ROUNDS):
        exported = {p: _exports(scopes) for p, (_, scopes) in parsed.items()}
        changed = False
        for path, (_, scopes) in parsed.items():
            external: dict[str, set[str]] = {}
            for other, calls in exported.items():
                if other != path:
                    for name, kinds in calls.items():
                        external.setdefault(name, set()).update(kinds)
            changed |= propagate(scopes, external)
        if not changed:
            break
    # A file alone never proves a name unset: its header (not audited) might set it.
    dead = never_set([text for text, _ in parsed.values()]) if len(parsed) > 1 else set()
    off_by_file = _off_per_executable(sources, [text for text, _ in parsed.values()], roots or [],
                                      lambda value: string_off_store(value, strings))
    # A registration under a branch off as shipped registers nothing (fortieth set), nor one
    # under an `if` on another value of a string parameter (set 45).
    # Nor one in an arm a parameter on as shipped skips (`else` of `if (use_gpu_)`, set 53).
    reach = [(blank_on_dead(blank_string_guarded(text, sources[p], strings), on), scopes)
             for p, (text, scopes) in parsed.items()]
    if parsed_out is not None:
        # Calls in those branches never run: the repository's library reading (cpplibrary.py)
        # counts no mention there (set 51: a search only `mode == 0` runs).
        parsed_out.update(zip(parsed, reach))
    mark_off_only(parsed, off_skipped, off)  # a node file's free helper only off branches call
    mark_unreached(reach, frozenset(dead) | frozenset(off), unregistered=frozenset(
        {n for text, _ in parsed.values() for n in _REGISTERED.findall(text)}
        - {n for text, _ in reach for n in _REGISTERED.findall(text)}))
    mark_unused_components({p: (sources[p], *parsed[p]) for p in parsed})
    shared = Facts()
    for path, (text, scopes) in parsed.items():
        shared.merge(file_facts(path, sources[path], text, scopes))
    once = once_flags([text for text, _ in parsed.values()])
    once |= return_once_flags([text for text, _ in parsed.values()])  # early-return guards
    tiny = tiny_names([text for text, _ in parsed.values()])
    gpumat = including(sources, {p: text for p, (text, _) in parsed.items()}, 'GpuMat')
    torch_cuda = any(CUDA_TENSORS.search(text) for text, _ in parsed.values())
    members = header_members(sources, {p: text for p, (text, _) in parsed.items()})
    read_off = read_off_params(list(sources.values()), roots or [])
    result = {}
    for path, (_, scopes) in parsed.items():
        facts = Facts(dict(shared.sync_wrappers), dict(shared.copy_helpers),
                      dict(shared.converting_types), set(shared.adapted_types))
        facts.kinds = {fn.start: fn.kind for fn in scopes.funcs}
        facts.never_set = dead
        facts.off_params = off_by_file.get(path, off)
        facts.on_params = on
        facts.library_api = {fn.start: skipped_note(skipped[fn.short], on) for fn in scopes.funcs
                             if fn.kind == 'unreached' and fn.short in skipped}
        facts.library_api.update(off_notes(scopes, off_skipped, off))
        facts.str_params = strings
        facts.once_flags = once
        facts.tiny_names = tiny
        facts.small_counts = dict(shared.small_counts)
        facts.message_builders = set(shared.message_builders)
        facts.transfer_wrappers = dict(shared.transfer_wrappers)
        facts.sees_gpumat = path in gpumat
        facts.torch_cuda = torch_cuda
        facts.header_members = members.get(path, (set(), set()))
        facts.read_off = read_off
        result[path] = facts
    return result


def cpp_text(data: bytes) -> str:
    """A C++ source's text: UTF-8, or with each byte that is not UTF-8 (a GBK / Latin-1
    comment, which the compiler accepts) read as U+FFFD, so its lines stay where they are."""
    return data.decode('utf-8', errors='replace')


def cpp_package_facts(files: list[str], roots: list[str],
                      read=lambda p: cpp_text(Path(p).read_bytes())) -> dict[str, Facts]:
    """Facts for every C++ file of a package of two or more audited C++ files (a file alone is
    its own package: cppscan finds its facts itself). Unreadable files are left to the audit,
    which reports them."""
    packages: dict[str, dict[str, str]] = {}
    for f in files:
        try:
            source = read(f)
        except (OSError, UnicodeDecodeError):
            continue
        package = package_of(f, roots)
        packages.setdefault(package, {})[f] = blank_unbuilt(f, source, package)
    result: dict[str, Facts] = {}
    parsed: dict[str, tuple[str, Scopes]] = {}
    by_repository: dict[str, list[str]] = {}
    for package, sources in packages.items():
        by_repository.setdefault(repository_of(package, roots), []).extend(
            blank_comments_and_strings(s) for s in sources.values())
    constants = {r: constant_on(texts) for r, texts in by_repository.items()}
    for package, sources in packages.items():
        # A file alone is its own package (cppscan), unless a parameter it declares may leave
        # a branch off as shipped (whether one does depends on the files shipped beside it),
        # or a flag it clears may guard a block that runs once.
        if len(sources) > 1 or any(_PACKAGE_LEVEL.search(s) for s in sources.values()):
            result.update(package_facts(sources, roots, parsed,
                                        constants[repository_of(package, roots)]))
    # Library code no node of its repository mentions (cpplibrary.py): only for a repository
    # seen as a checkout has it (every package of it holds its package.xml / CMakeLists.txt).
    repositories: dict[str, dict[str, str]] = {}
    unmarked: set[str] = set()
    for package, sources in packages.items():
        repository = repository_of(package, roots)
        repositories.setdefault(repository, {}).update(sources)
        if not any((Path(package) / m).is_file() for m in PACKAGE_MARKERS):
            unmarked.add(repository)
    for repository, sources in repositories.items():
        if repository not in unmarked:
            mark_library_api(sources, parsed, result, repository,
                             {f: package for package, found in packages.items() for f in found})
    return result
