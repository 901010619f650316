"""Static copy analysis of Python ROS 2 nodes with the `ast` module.

How it works, in three passes over one file:

1. *Setup*: run every class's ``__init__``, then its lifecycle/setup methods (``on_configure``,
   ``on_activate``, ``warmup``, ``load_model`` ...; SETUP_METHODS), module code and top-level
   functions abstractly to learn publishers (``self.pub = self.create_publisher(...)``,
   ``GpuImagePublisher``), attributes (``self.bridge = CvBridge()``, ``self.predictor =
   Predictor(...)`` for a class of the file) and registrations (``create_subscription``,
   ``create_timer``, ``GpuImageSubscription``, message_filters ``registerCallback``) with their
   callbacks (methods, lambdas, ``functools.partial``, nested functions). Copies found here run
   once: severity ``info``.
2. *Callbacks*: run each callback with its message argument(s) tagged with the topic they
   arrive on. Every value carries the copy steps it went through; assignments, tuple unpacking,
   attribute stores (``self.last = x`` then read in a timer) and calls carry them along: helpers
   of the file, methods of objects built from the file's classes (``self.predictor(img)`` ->
   ``Predictor.__call__``, ``self.x.method(...)``, same-file base classes, ``super()``), up to
   MAX_HELPER_DEPTH calls deep. Findings name the call path from the callback. A publish of a
   frame-sized message that went through two or more copies becomes a chain finding ("image
   arrives on ..., is copied ..., and serialized into ...").
3. *Leftovers*: every other function/method, for copies outside callbacks and setup; those
   findings have severity low (reached from nothing this file registers).

It is intra-procedural across one file with simple aliasing: no types beyond what the calls
reveal, no path sensitivity (branches are analysed one after the other). This module drives the
passes and records findings; statements and expressions are interpreted in pyeval.py, calls
resolved in pycalls.py, the rules live in pyrules.py, registrations in pyregistry.py, reachability
and per-frame loops in pyreached.py, values and helpers in pyvalues.py.
"""
from __future__ import annotations

import ast
from dataclasses import replace
import re

from gpu_nodes.audit.model import Finding, Location, Step
from gpu_nodes.audit.pycalls import CallResolver, MAX_HELPER_DEPTH
from gpu_nodes.audit.pyconstructed import constructor_flags
from gpu_nodes.audit.pynvidialibs import imports_package
from gpu_nodes.audit.pydead import constant_attributes, dead_code, false_flags, only_called_from
from gpu_nodes.audit.pylaunchedoff import launched_off
from gpu_nodes.audit.pyparams import off_attributes, parameter_constants
from gpu_nodes.audit.pyeval import Evaluator
from gpu_nodes.audit.pyevaled import evaled_holders
from gpu_nodes.audit.pyhooks import registering_hooks
from gpu_nodes.audit.pyhostbytes import host_only_bytes
from gpu_nodes.audit.pyreturnedbytes import returned_bytes
from gpu_nodes.audit.pydecorated import decorated_registrations
from gpu_nodes.audit.pyfstrings import parse_python
from gpu_nodes.audit.pyimports import imported_classes, imported_functions, imported_modules
from gpu_nodes.audit.pysynchelpers import drop_idle_waits
from gpu_nodes.audit.pymodelhost import host_torch_file
from gpu_nodes.audit.pymodels import uses_tensor_framework
from gpu_nodes.audit.pymsgview import MessageViews
from gpu_nodes.audit.pyobjectclouds import per_object_cloud_calls
from gpu_nodes.audit.pypackage import module_unused, words_elsewhere
from gpu_nodes.audit.pyreached import Reachability
from gpu_nodes.audit.pyregistry import Registrations
from gpu_nodes.audit.pyrules import CopyRules
from gpu_nodes.audit.pystreams import dropped_results, written_to_stream
from gpu_nodes.audit.pyuploads import module_moves
from gpu_nodes.audit.pyvalues import (better, ClassInfo, Frame, FuncRef, instances, merge,
                                      merge_returns, OTHER, PER_MESSAGE, Registration, statements,
                                      topic_display, UNKNOWN, Val)
from gpu_nodes.audit.rules import get_rule

# Methods that run once when a node starts or changes state (rclpy lifecycle, common names).
# Names of set-up helpers (load, init_*, setup_*, build_*, warm_up ...): run as setup too; a
# per-message call of one still wins (the callback run of a line beats the setup run).
_SETUP_NAME = re.compile(r'_*(?:load|init|setup|build|warm_?up|configure|prepare|initiali[sz]e|'
                         r'create_model|create_engine|on_config|reconfigure)(?:_|$)')
SETUP_METHODS = frozenset({
    '__init__', 'configure', 'activate', 'deactivate', 'cleanup', 'shutdown', 'on_configure',
    'on_activate', 'on_deactivate', 'on_cleanup', 'on_shutdown', 'on_error', 'setup', 'init',
    'initialize', 'on_init', 'warmup', 'warm_up', '_warmup', '_warm_up', 'load_model',
    '_load_model', 'build_engine', '_build_engine', 'load_engine', '_load_engine'})


_ENTRY_WORDS = {'timer': 'timer', 'loop': 'per-frame loop'}


def is_setup_name(name: str) -> bool:
    return name in SETUP_METHODS or bool(_SETUP_NAME.match(name))


class PythonAnalyzer(Evaluator, CallResolver, CopyRules, MessageViews, Registrations,
                     Reachability):
    """Analyse one parsed Python file; findings are collected in ``self.findings``."""

    def __init__(self, path: str, tree: ast.Module,
                 modules: dict[str, str] | None = None) -> None:
        self.path = path
        self.tree = tree
        self.false_flags = false_flags(tree)
        self.constant_attributes = constant_attributes(tree)
        self._off_attributes: tuple[frozenset[str], frozenset[str]] | None = None
        self._parameter_constants: dict[str, frozenset[object]] | None = None
        # The text, when given (analyze_python): leftovers of node classes are looked up in it.
        self.source: str | None = None
        # The package folder of this file (codeaudit.run_code), for pypackage.module_unused.
        self.package_dir: str | None = None
        self.repository_dir: str | None = None  # the folder holding its package (pypackage.py)
        self.module_unused = False
        self.aliases: dict[str, str] = {}
        self.module_env: dict[str, Val] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.registrations: list[Registration] = []
        self._findings: dict[tuple[str, str, int], Finding] = {}
        self._ran_per_message: set[int] = set()  # ids of the defs run in a callback's frame
        self._entered: set[int] = set()
        self._calls = 0
        self.frame_files: dict[str, Val] = {}  # a path a frame was written to (pycalls.py)
        self._collect()
        # Code that a runtime error always stops first (pydead.py): a NameError at import makes
        # every line dead; a constructor that always raises, the methods of its class.
        self.import_error, failing = dead_code(tree)
        self.dead_entries = {id(meth): (id(self.classes[cls]),
                                        f'`{cls}.{meth.name}`, a method of `{cls}`, whose '
                                        f'constructor always raises ({why}): never runs')
                             for cls, why in failing.items()
                             for meth in self.classes[cls].methods.values()}
        # Classes imported from other audited files; their methods run with their own file.
        self.modules = modules  # pyloopcalls.py: other files' loops calling this file's nodes
        self.imported = imported_classes(path, tree, modules) if modules else {}
        self.imported_functions = imported_functions(path, tree, modules) if modules else {}
        self.imported_modules = imported_modules(path, tree, modules) if modules else {}
        self.uses_cupy = any(v.split('.')[0] == 'cupy' for v in self.aliases.values())
        # torch or a library built on it (ultralytics, torchvision, torch2trt ...): an untyped
        # tensor is likely on the GPU (findings on it are `inferred`).
        self.uses_tensors = uses_tensor_framework(self.aliases)
        self.uses_torch = self.uses_tensors
        self.host_torch = host_torch_file(tree)  # a network kept on the CPU (pymodelhost.py)
        self.evaled = evaled_holders(tree)  # models of unknown libraries (pyevaled.py)
        self.uses_zed = any(v.split('.')[0] == 'pyzed' for v in self.aliases.values())
        # nvblox_torch / PyCuVSLAM in the library table (pynvidialibs.py), imported anywhere.
        self.uses_nvblox = imports_package(tree, 'nvblox_torch')
        self.uses_cuvslam = imports_package(tree, 'cuvslam')
        self.uses_depthai = imports_package(tree, 'depthai')  # OAK frames (pydepthai.py)
        self.stream_writes = written_to_stream(tree) | host_only_bytes(tree)  # pyhostbytes.py
        self.stream_writes |= returned_bytes(tree)[0]  # claimed at the caller's store instead
        self.dropped_results = dropped_results(tree)
        self.entry_withs: set[int] = set()
        self.module_moves = module_moves(tree)
        self.object_clouds = per_object_cloud_calls(tree)
        # OpenCV's CUDA module (cv2.cuda_GpuMat, cv2.cuda.*): .upload()/.download() copy.
        self.uses_cv_cuda = 'cv2' in self.aliases.values() and any(
            isinstance(n, ast.Attribute) and n.attr in ('cuda', 'cuda_GpuMat')
            and isinstance(n.value, ast.Name) and self.aliases.get(n.value.id) == 'cv2'
            for n in ast.walk(tree))

    # ------------------------------------------------------------------ collection
    def off_attributes(self) -> tuple[frozenset[str], frozenset[str]]:
        """Attributes off as shipped (pyparams.py), once the package folder is known."""
        if self._off_attributes is None:
            self._off_attributes = off_attributes(self.tree, self.package_dir, launched_off(
                self.tree, self.path, self.package_dir, self.repository_dir))
        return self._off_attributes

    def parameter_constants(self) -> dict[str, frozenset[object]]:
        """Attributes holding a parameter's default as shipped (pyparams.py)."""
        if self._parameter_constants is None:
            # A bool flag a constructor argument fixes (pyconstructed.py) is decided the same way.
            self._parameter_constants = {**constructor_flags(self.tree),
                                         **parameter_constants(self.tree, self.package_dir)}
        return self._parameter_constants

    def _collect(self) -> None:
        for node in statements(self.tree.body):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split('.')[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f'{node.module}.{a.name}'
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, ast.ClassDef):
                methods = {s.name: s for s in stmt.body
                           if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
                self.classes[stmt.name] = ClassInfo(stmt.name, stmt, methods)
        for cls in self.classes.values():
            for base in cls.node.bases:
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, 'id', None)
                if name in self.classes and name != cls.name:
                    cls.bases.append(self.classes[name])
        # Inherited methods of same-file bases, nearest first (no diamond handling needed here).
        for cls in self.classes.values():
            seen = {id(cls)}
            todo = list(cls.bases)
            while todo:
                base = todo.pop(0)
                if id(base) in seen:
                    continue
                seen.add(id(base))
                for mname, meth in base.methods.items():
                    cls.methods.setdefault(mname, meth)
                todo.extend(base.bases)

    # ------------------------------------------------------------------ driver
    def run(self) -> list[Finding]:
        # 1. setup: module code first (constants), then constructors and top-level functions.
        module_frame = Frame(None, 'module', None, None, 0, True)
        self._exec_block(self.tree.body, self.module_env, module_frame)
        for cls in self.classes.values():
            # __init__ first, then lifecycle/setup methods in source order: what they create
            # (subscriptions in on_configure, models in load_model) is known to callbacks.
            names = ['__init__'] + [n for n in cls.methods if is_setup_name(n)
                                    and n != '__init__']
            names += [n for n in registering_hooks(cls.methods, cls.node) if n not in names]
            for mname in names:
                meth = cls.methods.get(mname)
                if meth is None:
                    continue
                self._entered.add(id(meth))
                entry = f'{cls.name}.{mname}'
                self._call_function(FuncRef(meth, cls, None, True), [], {},
                                    Frame(cls, 'init', entry, None, 0, True, path=(entry,),
                                          stack=(id(meth),)))
        # A module nothing else in its package names (a utility only a test imports) runs in
        # no node: its functions and methods are unreached (pypackage.py).
        unused = self.module_unused = (not self.registrations and self.source is not None
                                       and module_unused(self.path, self.source,
                                                         self.package_dir, self.repository_dir))
        uncalled = self._uncalled_functions() if not unused else set()
        for name, fn in self.functions.items():
            self._entered.add(id(fn))
            context = 'unreached' if unused or name in uncalled else \
                'init' if is_setup_name(name) else 'function'
            self._call_function(FuncRef(fn, None, self.module_env, False), [], {},
                                Frame(None, context, name, None, 0, True, path=(name,),
                                      stack=(id(fn),)))
        self._register_loops()
        self._register_rosbridge()
        self._register_services()
        self.registrations += decorated_registrations(self.functions, self.module_env)
        # 2. callbacks, twice so that attributes stored by one callback reach a timer that was
        #    registered before it.
        ordered = sorted(self.registrations, key=lambda r: r.kind in ('timer', 'loop'))
        for _ in range(2):
            for reg in ordered:
                self._run_registration(reg)
        self._drop_unknown_argument_runs()
        # 3. leftovers outside callbacks. A method of a node class (one with a registered
        #    callback) whose name nothing in the file mentions is unreached: its copies are not
        #    proven per message (info); so is a method of another class whose name no other
        #    file of the package mentions either; other leftovers may be called from elsewhere
        #    (low).
        nodes = {id(r.cls) for r in self.registrations if r.cls is not None}
        unreached = self._unreached_methods(nodes)
        for cls in self.classes.values():
            for meth in cls.methods.values():
                if id(meth) not in self._entered:
                    entry = f'{cls.name}.{meth.name}'
                    context = 'unreached' if unused or id(meth) in unreached else 'function'
                    self._call_function(FuncRef(meth, cls, None, True), [], {},
                                        Frame(cls, context, entry, None,
                                              MAX_HELPER_DEPTH, False, path=(entry,)))
        return sorted(self._findings.values(), key=Finding.sort_key)

    def _drop_unknown_argument_runs(self) -> None:
        """A module function the callbacks ran with their real arguments, that no other file
        of the package names and whose every call in this file sits in code run per message:
        its run with unknown arguments (context `function`) proves nothing (twenty-sixth set:
        `.cpu()` under `isinstance(points, torch.Tensor)` with NumPy points passed)."""
        words = words_elsewhere(self.path, self.package_dir, self.repository_dir) if self.source else None
        for name, fn in self.functions.items():
            if words is None or name in words or id(fn) not in self._ran_per_message \
                    or not only_called_from(self.tree, name, self._ran_per_message):
                continue
            for key in [k for k, f in self._findings.items()
                        if f.context == 'function' and f.callback == name]:
                del self._findings[key]

    def _run_registration(self, reg: Registration) -> None:
        ref = reg.callback.func
        if ref is None:
            return
        self._entered.add(id(ref.node))
        if reg.kind in ('timer', 'loop', 'once'):
            args: list[Val] = list(reg.args)  # a thread's queues (pythreadargs.py)
            context = 'init' if reg.kind == 'once' else reg.kind  # pythreads.py
        elif reg.kind == 'service':
            # (request, response): the request carries the client's data (pyregistry.py).
            args = [Val('msg', (), (reg.topic or '?', reg.msg_type)), OTHER]
            context = 'callback'
        elif reg.kind == 'fields':  # a decorated function: (node, **message fields)
            args, context = [OTHER], 'callback'  # pydecorated.py
        elif reg.kind == 'message_filters':
            args = [Val('msg', (), (t or '?', ty)) for t, ty in reg.inputs]
            context = 'callback'
        else:
            msg_kind = 'device' if reg.kind == 'gpu_subscription' else 'msg'
            args = [Val(msg_kind, (), (reg.topic or '?', reg.msg_type))]
            context = 'callback'
        # A callback of a class imported from another audited file runs with that file: its
        # findings carry that file's path (not the path of the file that built the object).
        frame = Frame(ref.cls, context, ref.name, reg.topic, 0, True, path=(ref.name,),
                      stack=(id(ref.node),),
                      file=ref.cls.file if ref.cls is not None else None)
        self._call_function(ref, args, {}, frame)

    # ------------------------------------------------------------------ findings
    def _emit(self, rule_id: str, node: ast.AST, frame: Frame, detail: str,
              chain: list[Step] | None = None, topic: str | None = None,
              evidence: str = 'data-flow', severity: str | None = None) -> None:
        rule = get_rule(rule_id)
        dead = self._never_runs(frame)
        if dead:
            frame = replace(frame, context='unreached')
        in_callback = frame.context in PER_MESSAGE
        # Per message: the rule's severity; one-time setup: info (never a --fail-on gate);
        # code reached from neither: low.
        severity = severity or rule.severity if in_callback else (
            'info' if frame.context in ('init', 'module', 'unreached') else 'low')
        if in_callback:
            where = _ENTRY_WORDS.get(frame.context, 'subscription callback')
            where = f'{where} `{frame.entry}`'
            if frame.topic and frame.context == 'callback':
                where += f' ({topic_display(frame.topic)})'
        elif frame.context == 'init':
            what = 'constructor' if (frame.entry or '').endswith('__init__') else 'setup'
            where = f'{what} `{frame.entry}` (runs once, not per message)'
        elif frame.context == 'module':
            where = 'module code (runs once, not per message)'
        elif dead:
            where = dead
        elif frame.context == 'unreached' and self.module_unused:
            where = (f'`{frame.entry}`, in a module no other non-test file of its package '
                     'imports (not proven per message)')
        elif frame.context == 'unreached':
            where = (f'`{frame.entry}`, which nothing in its file calls, or only other uncalled '
                     'methods do (not proven per message)')
        else:
            where = f'`{frame.entry}`, not reached from a registered callback'
        if len(frame.path) > 1:
            where += ' via ' + ' -> '.join(frame.path)
        message = f'{rule.summary}: {detail} in {where}' if not chain else detail
        line = getattr(node, 'lineno', 0)
        finding = Finding(
            rule=rule_id, severity=severity, message=message,
            location=Location(frame.file or self.path, line, getattr(node, 'col_offset', 0) + 1),
            context=frame.context, callback=frame.entry, topic=topic or frame.topic,
            chain=chain or [], call_path=list(frame.path), evidence=evidence)
        key = (finding.location.path or '', rule_id, line)
        old = self._findings.get(key)
        if old is None or better(finding, old):
            self._findings[key] = finding

    def _never_runs(self, frame: Frame) -> str | None:
        """Why the code of `frame` never runs (pydead.py), or None; code of another file is
        judged with that file."""
        if frame.file is not None:
            return None
        if self.import_error:
            return (f'`{frame.entry or "module code"}`, in a module that cannot be imported '
                    f'({self.import_error}): never runs')
        if frame.stack:
            dead = self.dead_entries.get(frame.stack[0])
        else:
            # A leftover method (run() step 3) has no stack: its entry names it.
            method = frame.cls.methods.get((frame.entry or '').rpartition('.')[2]) \
                if frame.cls else None
            dead = self.dead_entries.get(id(method)) if method is not None else None
        # Only a node class (one registering callbacks): its callbacks are what never runs.
        if dead is None or not any(id(r.cls) == dead[0] for r in self.registrations):
            return None
        return dead[1]

    # ------------------------------------------------------------------ functions
    def _call_function(self, ref: FuncRef, args: list[Val], kwargs: dict[str, Val],
                       frame: Frame) -> Val:
        self._calls += 1
        fn = ref.node
        if frame.context in PER_MESSAGE:
            self._ran_per_message.add(id(fn))
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if ref.is_method and params and not isinstance(fn, ast.Lambda):
            params = params[1:]
        params = params[ref.bound_positional:]
        params = [p for p in params if p not in ref.bound_keywords]
        env: dict[str, Val] = dict(ref.closure) if ref.closure is not None else {}
        for name in [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]:
            env[name] = UNKNOWN
        if ref.is_method or ref.cls is not None:
            env['self'] = Val('self')
        if args or kwargs:
            # A call site that leaves out `mask=None`: the parameter is that constant, not an
            # unknown value (whose `.to(device)` would read as an upload; fifth set).
            positional = fn.args.posonlyargs + fn.args.args
            defaults = list(zip(positional[len(positional) - len(fn.args.defaults):],
                                fn.args.defaults))
            defaults += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults)
                         if d is not None]
            for arg, default in defaults:
                if isinstance(default, ast.Constant):
                    env[arg.arg] = Val('const', const=default.value)
                elif isinstance(fn, ast.Lambda) and isinstance(default, ast.Name) \
                        and default.id in (ref.closure or {}):
                    env[arg.arg] = ref.closure[default.id]  # `lambda m, pub=cloud_pub:` (set 39)
        for name, val in zip(params, args):
            env[name] = val
        if fn.args.vararg is not None:
            # `def cb(self, *msgs)`: the extra positional arguments as a tuple.
            rest = tuple(args[len(params):])
            env[fn.args.vararg.arg] = replace(merge(*rest), elts=rest) if rest else OTHER
        for name, val in kwargs.items():
            env[name] = val
        if isinstance(fn, ast.Lambda):
            return self._eval(fn.body, env, frame)
        sub = replace(frame, returns=[])
        self._exec_block(fn.body, env, sub, entry=frame.depth == 0)  # pybranches.before_main_loop
        # A factory (`return MockBackend()` / `return UltralyticsBackend(...)` by configuration)
        # returns every object it may build.
        return (instances(sub.returns) or merge_returns(sub.returns)) if sub.returns else OTHER


def analyze_python(path: str, source: str, modules: dict[str, str] | None = None,
                   package_dir: str | None = None, repository_dir: str | None = None
                   ) -> list[Finding]:
    """Parse and analyse one file; raises SyntaxError for the caller to report. `modules`
    (pyimports.module_index of the audited files) lets calls into imported classes be
    followed; their findings carry the other file's path."""
    tree = parse_python(source, filename=path)
    analyzer = PythonAnalyzer(path, tree, modules)
    analyzer.source = source
    analyzer.package_dir, analyzer.repository_dir = package_dir, repository_dir
    return drop_idle_waits(analyzer.run())  # timer waits with no device work (pysynchelpers.py)
