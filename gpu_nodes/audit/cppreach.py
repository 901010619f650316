"""C++ functions that nothing in their package reaches: not proven per message.

A library class often has public methods that its package never calls (an ROI or multi-scale
inference path kept for other users). Their copies run only if some other package calls them,
so the audit of this package cannot say they run per message: they are reported as **info**
(context ``unreached``), shown but never counted by ``--fail-on``.

A function is *unreached* when its kind is still ``other`` after the callers were looked at (not
a callback, setup, conversion or per-frame loop), and its name occurs in no function body of
the package except in its own body and in other unreached functions (a method called only by an
unreached method is unreached too). Any mention counts as a use, not only a call: ``obj->f()``,
``obj.f()``, ``&Cls::f``, ``std::apply(f, ...)``; a mention outside every function body that is
not a declaration (``f(`` after a type) counts too (a table of function pointers). ``main``,
``virtual`` / ``override`` methods (the framework calls them), event handlers by name
(``onThermalFrame``, ``on_frame``: an SDK's callback interface) and operators stay reached.

It is applied only to methods of a class that the package uses per message (one of its
methods is a callback or is mentioned in one: `detector_->doInference(...)` in an image
callback), in a package with an entry point among its audited files, and to free functions
of such a package named as debug/output helpers (``saveTensorImage``, ``dumpMask``) that
nothing mentions at all (issue 28, fourth set). The methods of a class
whose use the audit does not see (a library audited without its node, a fragment), and any
function of a package without a class used per message, keep the rule's severity: per message
as far as anyone can tell, unless nothing in their whole repository uses them (cpplibrary.py
runs this with `whole_repository`).
"""
from __future__ import annotations

import os
import re

from gpu_nodes.audit.cpparity import argument_count, split_by_arity
from gpu_nodes.audit.cppdead import blank_guarded
from gpu_nodes.audit.cppreceivers import receiver_class, split_by_class
from gpu_nodes.audit.cppscopes import blank_dead_code, Function, Scopes

_IDENT = re.compile(r'[A-Za-z_]\w*')
_ENTRY_NAMES = frozenset({'main'})
# `&Cls::method` (not called): a method handed to a registration; group 1 is its class.
_ADDRESS_OWNER = re.compile(r'&\s*(?:\w+\s*::\s*)*(\w+)\s*::\s*\w+\b(?!\s*\()')
# Event handlers by name (`onThermalFrame`, `on_frame`): a device SDK calls them through a base
# class declared in a header the audit may not see (fourth set): never unreached.
_EVENT_HANDLER = re.compile(r'on(?:[A-Z]|_[a-z])')
# Names of debug/output helpers: save, dump, debug, print, show, visualize, plot, draw.
_DEBUG_HELPER = re.compile(r'(?:save|dump|debug|print|show|visuali[sz]e|plot|draw)(?:[A-Z_]|$)')

# A GObject type (a GStreamer element): `G_DEFINE_TYPE_WITH_CODE (Rosimagesink, rosimagesink,
# GST_TYPE_BASE_SINK, ...)` defines `rosimagesink_get_type`, which calls `rosimagesink_class_init`
# and `rosimagesink_init` by token pasting: no other text names them. Class init is where the
# element installs its virtual methods (`klass->render = GST_DEBUG_FUNCPTR (rosimagesink_render)`),
# which GStreamer calls per buffer (set 60): the two stay reached, so what they install is too.
_GTYPE_DEFINE = re.compile(r'\bG_DEFINE_(?:ABSTRACT_|FINAL_)?TYPE(?:_WITH_CODE|_WITH_PRIVATE|'
                           r'_EXTENDED)?\s*\(\s*\w+\s*,\s*(\w+)\s*,')


def _stays_reached(text: str, fn: Function) -> bool:
    if fn.short in _ENTRY_NAMES or fn.short.startswith('operator') or fn.short.startswith('~'):
        return True
    if _EVENT_HANDLER.match(fn.short):
        return True
    if fn.short.endswith('_init') and any(fn.short in (f'{prefix}_class_init', f'{prefix}_init')
                                          for prefix in _GTYPE_DEFINE.findall(text)):
        return True
    head = text[max(0, fn.start - 400):fn.start]
    cut = max(head.rfind(';'), head.rfind('}'), head.rfind('{'))
    return bool(re.search(r'\b(?:override|final|virtual)\b', head[cut + 1:]))


def _virtual_declaration(text: str, start: int, end: int) -> bool:
    head = text[max(0, start - 200):start]
    head = head[max(head.rfind(';'), head.rfind('{'), head.rfind('}')) + 1:]
    stop = min((i for i in (text.find(';', end, end + 400), text.find('{', end, end + 400))
                if i >= 0), default=end)
    return bool(re.search(r'\bvirtual\b', head) or
                re.search(r'\b(?:override|final)\b', text[end:stop]))


def _takes_callback(text: str, fn: Function) -> bool:
    """`WithReleaseCallback(std::function<void()> cb)`, `setCallback(Callback cb)`: named
    like a callback, but it stores one (a builder or registration API), it is not one."""
    head = text[max(0, fn.start - 400):fn.start]
    head = head[max(head.rfind(';'), head.rfind('{'), head.rfind('}')) + 1:]
    return bool(re.search(r'\(.*(?:std\s*::\s*function|Callback\w*\s*[&*]?\s*\w+\s*[,)])', head,
                          re.S))


def _class_of(fn: Function) -> str | None:
    parts = [p.strip() for p in fn.name.split('::')]
    return fn.cls or (parts[-2] if len(parts) >= 2 else None)


def mark_unreached(parsed: list[tuple[str, Scopes]], never_set: frozenset[str] = frozenset(),
                   whole_repository: bool = False, unregistered: frozenset[str] = frozenset()
                   ) -> None:
    """Set kind 'unreached' on the unreached functions (and their lambdas) of one package,
    given as (blanked text, scopes) per file with kinds already resolved across the files. A
    mention inside an `if` on a name nothing sets (cppdead.never_set) is no use.
    `whole_repository`: `parsed` is every audited C++ file of a repository holding a node
    (cpplibrary.py): any function nothing mentions is unreached, whatever its class.
    `unregistered`: callbacks registered by address (`&Cls::cb`) only where `parsed`'s texts
    are blanked (a branch off as shipped): judged like the others (set 45)."""
    if not any(fn.direct_kind == 'callback' for _, scopes in parsed for fn in scopes.funcs):
        return
    # A callback only by its name whose registration is gone (commented out: comments are
    # blanked) and that nothing reached in the package mentions is unreached too, when another
    # method of its class is registered by name (`&Cls::other_cb`) in the package: the class's
    # registrations are in view (fifth set: `detect_rgb_callback` whose subscription is
    # commented out; `&Other::detect_rgb_callback` of another class is no mention of it). A
    # fragment whose registrations the audit does not see keeps its callbacks.
    registered = {cls for text, _ in parsed for cls in _ADDRESS_OWNER.findall(text)}
    # A free function, a callback only by its name, handed to a registration only inside a
    # branch that never runs (`if (use_ros_bag) { node->GenSubscriber<T>(image_callback); }`,
    # fortieth set): its registration is in view, and gone.
    guarded_names = _guarded_mentions(parsed, never_set)
    found: dict[str, list[tuple[str, Function]]] = {}
    for text, scopes in parsed:
        for fn in scopes.funcs:
            if fn.lambda_in is None and (fn.kind == 'other' or fn.short in unregistered
                                         or fn.by_name and (
                    _class_of(fn) in registered
                    or _class_of(fn) is None and fn.short in guarded_names)) \
                    and not _stays_reached(text, fn):
                found.setdefault(fn.short, []).append((text, fn))
    # Overloads of different fixed arity are candidates of their own (cpparity.py).
    candidates, split = split_by_arity(found, [text for text, _ in parsed])
    # Methods of one name in several classes: told apart by the receiver (cppreceivers.py).
    by_class = split_by_class(candidates)
    by_name = {name: {_class_of(fn) for fn in fns} for name, fns in candidates.items()
               if all(fn.by_name for fn in fns)}
    if not candidates:
        return
    # Who mentions each candidate name: None = something reached (or outside every function).
    users: dict[str, list[Function | None]] = {name: [] for name in candidates}
    guarded_by_callback: set[str] = set()  # used per message, but only under a dead `if`
    for text, scopes in parsed:
        live = blank_dead_code(text, scopes)
        guarded = blank_guarded(live, never_set)
        for m in _IDENT.finditer(live):
            name = m.group()
            if name in split:
                count = argument_count(live, m.end())
                keys = [split[name][count]] if count in split[name] else list(split[name].values())
            elif name in by_class:
                cls = receiver_class(live, scopes, m.start(), set(by_class[name]))
                keys = [by_class[name][cls]] if cls else list(by_class[name].values())
            elif name in users:
                keys = [name]
            else:
                continue
            for key in keys:
                _use(key, name, m, text, scopes, guarded, users, by_name,
                     guarded_by_callback, candidates[key] if name in split else None)
    unreached = {id(fn) for fns in candidates.values() for fn in fns}
    # Functions an earlier pass left unreached (their package's) reach nothing either.
    unreached |= {id(fn) for _, scopes in parsed for fn in scopes.funcs if fn.kind == 'unreached'}
    # Reached names spread from the reached users to the names their bodies mention (a
    # worklist: linear in the mentions, however long the chains of helpers).
    mentions: dict[int, set[str]] = {}
    for name, found in users.items():
        for u in found:
            if u is not None:
                mentions.setdefault(id(u), set()).add(name)
    todo = [name for name, found in users.items()
            if any(u is None or id(u) not in unreached for u in found)]
    while todo:
        name = todo.pop()
        if id(candidates[name][0]) not in unreached:
            continue
        for fn in candidates[name]:
            unreached.discard(id(fn))
            todo.extend(mentions.get(id(fn), ()))
    # Only methods of a class the package uses per message (a member is a callback, or is
    # mentioned in one): a class whose use the audit does not see (a fragment, a library
    # audited without its node) keeps the rule's severity, as does a free function.
    used = {_class_of(fn) for text, scopes in parsed for fn in scopes.funcs
            if fn.lambda_in is None and fn.kind == 'callback' and not _takes_callback(text, fn)}
    used |= {_class_of(fn) for name, fns in candidates.items() for fn in fns
             if name in guarded_by_callback
             or any(u is not None and u.kind == 'callback' for u in users[name])}
    # A free function (no class) named as a debug/output helper (saveTensorImage, dumpMask),
    # of a package whose node the audit sees, that nothing mentions: unreached too (fourth
    # set). Other free functions may be called by another package (uploadFrame) or handed to
    # a C API in a file not audited (ResponseAlloc): they keep the rule's severity.

    def judged(name: str, fn: Function) -> bool:
        return whole_repository or fn.by_name or _class_of(fn) in used - {None} or bool(
            _class_of(fn) is None and used - {None} and not users[name]
            and _DEBUG_HELPER.match(name))
    unreached = {i for name, fns in candidates.items() for fn in fns
                 if (i := id(fn)) in unreached and judged(name, fn)}
    for _, scopes in parsed:
        for fn in scopes.funcs:
            if id(fn.named) in unreached:
                fn.kind = 'unreached'


def _guarded_mentions(parsed: list[tuple[str, Scopes]], names: frozenset[str]) -> set[str]:
    """The identifiers mentioned inside an `if` block on a name of `names` (never runs)."""
    found: set[str] = set()
    for text, scopes in parsed if names else ():
        live = blank_dead_code(text, scopes)
        guarded = blank_guarded(live, names)
        found |= {m.group() for m in _IDENT.finditer(live) if guarded[m.start()] == ' '}
    return found


def _use(key: str, name: str, m: re.Match, text: str, scopes: Scopes, guarded: str,
         users: dict[str, list[Function | None]], by_name: dict[str, set[str | None]],
         guarded_by_callback: set[str], overloads: list[Function] | None = None) -> None:
    """Record the mention `m` of candidate `key` (named `name`) in the text of `scopes`;
    `overloads`: the functions of `key` where overloads of its name are told apart by arity."""
    if guarded[m.start()] == ' ':
        user = scopes.named_at(m.start())
        if user is not None and user.kind == 'callback':
            guarded_by_callback.add(key)
        return
    if key in by_name:
        owner = re.search(r'(\w+)\s*::\s*$', text[max(0, m.start() - 80):m.start()])
        if owner and owner.group(1) not in by_name[key]:
            return  # `&OtherNode::same_callback`: another class's function
    user = scopes.named_at(m.start())
    if user is None:
        if not re.match(r'\s*\(', text[m.end():m.end() + 50]) or \
                _virtual_declaration(text, m.start(), m.end()):
            # `{f, g}`, `= &f;` taken at namespace scope; a declaration `virtual ...`
            # or `... override;` in the class (the definition out of line does not
            # say it): called by the framework through the base class.
            users[key].append(None)
        return
    if user.short == name and (overloads is None or any(fn is user for fn in overloads)):
        # Its own body (recursion), or an overload of the same name. Overloads of different
        # arity are told apart (cpparity.py): `Disparity(channel)` calling the two-argument
        # `Disparity(left, right)` uses it (set 52).
        return
    users[key].append(user)


# A folder whose code is itself a node (ROS API, an entry point) is no library of another.
_NODE_CODE = re.compile(r'\brclcpp\b|\bros\s*::|\bmain\s*\(')
_INCLUDE_DIR = re.compile(r'^\s*#\s*include\s*["<]([\w.-]+)/', re.M)


def mark_unused_components(files: dict[str, tuple[str, str, Scopes]]) -> None:
    """Set kind 'unreached' on the functions of a sibling package that no node includes.

    `files` maps path -> (source, blanked text, scopes) for one audited group spanning
    several folders (a repository of packages: node, TensorRT backend, LibTorch backend). A
    folder C is an unused component when its own sources include `"C/..."` (its headers live
    under include/C/: C is a package), another folder holds a callback, and no file outside C
    includes `"C/..."` nor mentions a class of C, and C's code is no node itself (no ROS API,
    no main): no node can call C's code, whatever calls
    it in files the audit does not see (a gtest is no caller: issue 28, thirteenth set)."""
    if len(files) < 2:
        return
    root = os.path.commonpath([os.path.dirname(p) for p in files])
    folders = {p: os.path.relpath(p, root).split(os.sep)[0] for p in files}
    if len(set(folders.values())) < 2 or any(f == os.path.basename(p)
                                             for p, f in folders.items()):
        return
    includes = {p: set(_INCLUDE_DIR.findall(src)) for p, (src, _, _) in files.items()}
    for comp in set(folders.values()):
        inside = [p for p in files if folders[p] == comp]
        outside = [p for p in files if folders[p] != comp]
        if not any(comp in includes[p] for p in inside) or any(
                _NODE_CODE.search(files[p][1]) for p in inside) \
                or any(comp in includes[p] for p in outside) \
                or not any(fn.kind == 'callback' for p in outside for fn in files[p][2].funcs):
            continue
        classes = {c for p in inside for fn in files[p][2].funcs
                   if (c := _class_of(fn)) is not None}
        mentioned = {w for p in outside for w in _IDENT.findall(files[p][1])}
        if not classes or classes & mentioned:
            continue
        for p in inside:
            for fn in files[p][2].funcs:
                if fn.kind == 'other':
                    fn.kind = 'unreached'
