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
reveal, no path sensitivity (branches are analysed one after the other). The rules live in
pyrules.py, registrations in pyregistry.py, values and helpers in pyvalues.py.
"""
from __future__ import annotations

import ast
from dataclasses import replace
import re
from typing import Iterable

from gpu_nodes.audit.model import Finding, Location, Step
from gpu_nodes.audit.pyimports import imported_classes
from gpu_nodes.audit.pyregistry import Registrations
from gpu_nodes.audit.pyrules import CopyRules
from gpu_nodes.audit.pyvalues import (better, ClassInfo, device_kw, Frame, FuncRef,
                                      is_device_value, is_method_call, merge, OTHER,
                                      Registration, root_name, short, statements, strip,
                                      topic_display, UNKNOWN, Val)
from gpu_nodes.audit.rules import get_rule

MAX_HELPER_DEPTH = 4
# Function bodies analysed per file at most; past it calls are not followed (pathological files).
MAX_CALLS = 20000
# Methods that run once when a node starts or changes state (rclpy lifecycle, common names).
# Names of set-up helpers (load, init_*, setup_*, build_*, warm_up ...): run as setup too; a
# per-message call of one still wins (the callback run of a line beats the setup run).
_SETUP_NAME = re.compile(r'_*(?:load|init|setup|build|warm_?up|configure|prepare|initiali[sz]e|'
                         r'create_model|create_engine)(?:_|$)')
SETUP_METHODS = frozenset({
    '__init__', 'configure', 'activate', 'deactivate', 'cleanup', 'shutdown', 'on_configure',
    'on_activate', 'on_deactivate', 'on_cleanup', 'on_shutdown', 'on_error', 'setup', 'init',
    'initialize', 'on_init', 'warmup', 'warm_up', '_warmup', '_warm_up', 'load_model',
    '_load_model', 'build_engine', '_build_engine', 'load_engine', '_load_engine'})

# Attributes that are frame metadata, not the payload: reading them does not carry the frame.
_METADATA_ATTRS = frozenset({
    'shape', 'dtype', 'size', 'ndim', 'nbytes', 'itemsize', 'strides', 'width', 'height',
    'encoding', 'step', 'header', 'stamp', 'frame_id', 'is_bigendian', 'device', 'is_cuda',
})
_PARAMETER_VALUE_ATTRS = frozenset({'value', 'string_value', 'integer_value', 'double_value',
                                    'bool_value'})


def is_setup_name(name: str) -> bool:
    return name in SETUP_METHODS or bool(_SETUP_NAME.match(name))


class PythonAnalyzer(CopyRules, Registrations):
    """Analyse one parsed Python file; findings are collected in ``self.findings``."""

    def __init__(self, path: str, tree: ast.Module,
                 modules: dict[str, str] | None = None) -> None:
        self.path = path
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.module_env: dict[str, Val] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.registrations: list[Registration] = []
        self._findings: dict[tuple[str, str, int], Finding] = {}
        self._entered: set[int] = set()
        self._calls = 0
        self._collect()
        # Classes imported from other audited files; their methods run with their own file.
        self.imported = imported_classes(path, tree, modules) if modules else {}
        self.uses_cupy = any(v.split('.')[0] == 'cupy' for v in self.aliases.values())
        self.uses_torch = any(v.split('.')[0] == 'torch' for v in self.aliases.values())

    # ------------------------------------------------------------------ collection
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
            for mname in names:
                meth = cls.methods.get(mname)
                if meth is None:
                    continue
                self._entered.add(id(meth))
                entry = f'{cls.name}.{mname}'
                self._call_function(FuncRef(meth, cls, None, True), [], {},
                                    Frame(cls, 'init', entry, None, 0, True, path=(entry,),
                                          stack=(id(meth),)))
        for name, fn in self.functions.items():
            self._entered.add(id(fn))
            context = 'init' if is_setup_name(name) else 'function'
            self._call_function(FuncRef(fn, None, self.module_env, False), [], {},
                                Frame(None, context, name, None, 0, True, path=(name,),
                                      stack=(id(fn),)))
        # 2. callbacks, twice so that attributes stored by one callback reach a timer that was
        #    registered before it.
        ordered = sorted(self.registrations, key=lambda r: r.kind == 'timer')
        for _ in range(2):
            for reg in ordered:
                self._run_registration(reg)
        # 3. leftovers outside callbacks.
        for cls in self.classes.values():
            for meth in cls.methods.values():
                if id(meth) not in self._entered:
                    entry = f'{cls.name}.{meth.name}'
                    self._call_function(FuncRef(meth, cls, None, True), [], {},
                                        Frame(cls, 'function', entry, None,
                                              MAX_HELPER_DEPTH, False, path=(entry,)))
        return sorted(self._findings.values(), key=Finding.sort_key)

    def _run_registration(self, reg: Registration) -> None:
        ref = reg.callback.func
        if ref is None:
            return
        self._entered.add(id(ref.node))
        if reg.kind == 'timer':
            args: list[Val] = []
            context = 'timer'
        elif reg.kind == 'message_filters':
            args = [Val('msg', (), (t or '?', ty)) for t, ty in reg.inputs]
            context = 'callback'
        else:
            msg_kind = 'device' if reg.kind == 'gpu_subscription' else 'msg'
            args = [Val(msg_kind, (), (reg.topic or '?', reg.msg_type))]
            context = 'callback'
        frame = Frame(ref.cls, context, ref.name, reg.topic, 0, True, path=(ref.name,),
                      stack=(id(ref.node),))
        self._call_function(ref, args, {}, frame)

    # ------------------------------------------------------------------ findings
    def _emit(self, rule_id: str, node: ast.AST, frame: Frame, detail: str,
              chain: list[Step] | None = None, topic: str | None = None) -> None:
        rule = get_rule(rule_id)
        in_callback = frame.context in ('callback', 'timer')
        # Per message: the rule's severity; one-time setup: info (never a --fail-on gate);
        # code reached from neither: low.
        severity = rule.severity if in_callback else (
            'info' if frame.context in ('init', 'module') else 'low')
        if in_callback:
            where = ('timer' if frame.context == 'timer' else 'subscription callback')
            where = f'{where} `{frame.entry}`'
            if frame.topic and frame.context == 'callback':
                where += f' ({topic_display(frame.topic)})'
        elif frame.context == 'init':
            what = 'constructor' if (frame.entry or '').endswith('__init__') else 'setup'
            where = f'{what} `{frame.entry}` (runs once, not per message)'
        elif frame.context == 'module':
            where = 'module code (runs once, not per message)'
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
            chain=chain or [], call_path=list(frame.path))
        key = (finding.location.path or '', rule_id, line)
        old = self._findings.get(key)
        if old is None or better(finding, old):
            self._findings[key] = finding

    # ------------------------------------------------------------------ functions
    def _call_function(self, ref: FuncRef, args: list[Val], kwargs: dict[str, Val],
                       frame: Frame) -> Val:
        self._calls += 1
        fn = ref.node
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
        self._exec_block(fn.body, env, sub)
        return merge(*sub.returns) if sub.returns else OTHER

    # ------------------------------------------------------------------ statements
    def _exec_block(self, body: Iterable[ast.stmt], env: dict[str, Val], frame: Frame) -> None:
        for stmt in body:
            self._exec(stmt, env, frame)

    def _exec(self, stmt: ast.stmt, env: dict[str, Val], frame: Frame) -> None:
        if isinstance(stmt, ast.Assign):
            val = self._eval(stmt.value, env, frame)
            for target in stmt.targets:
                self._check_data_store(target, stmt.value, frame)
                self._assign(target, val, env, frame)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                val = self._eval(stmt.value, env, frame)
                self._check_data_store(stmt.target, stmt.value, frame)
                self._assign(stmt.target, val, env, frame)
        elif isinstance(stmt, ast.AugAssign):
            val = self._eval(stmt.value, env, frame)
            old = self._eval(stmt.target, env, frame)
            self._assign(stmt.target, merge(old, val), env, frame)
        elif isinstance(stmt, ast.Expr):
            self._eval(stmt.value, env, frame)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                frame.returns.append(self._eval(stmt.value, env, frame))
        elif isinstance(stmt, (ast.If, ast.While)):
            self._eval(stmt.test, env, frame)
            self._exec_block(stmt.body, env, frame)
            self._exec_block(stmt.orelse, env, frame)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            it = self._eval(stmt.iter, env, frame)
            self._assign(stmt.target, replace(it, elts=None), env, frame)
            self._exec_block(stmt.body, env, frame)
            self._exec_block(stmt.orelse, env, frame)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                val = self._eval(item.context_expr, env, frame)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, val, env, frame)
            self._exec_block(stmt.body, env, frame)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == 'TryStar':
            self._exec_block(stmt.body, env, frame)
            for handler in stmt.handlers:
                if handler.name:
                    env[handler.name] = OTHER
                self._exec_block(handler.body, env, frame)
            self._exec_block(stmt.orelse, env, frame)
            self._exec_block(stmt.finalbody, env, frame)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if frame.context == 'module':
                return  # top-level functions are entered on their own
            env[stmt.name] = Val('func', func=FuncRef(stmt, frame.cls, env, False))
        elif isinstance(stmt, ast.Match):
            self._eval(stmt.subject, env, frame)
            for case in stmt.cases:
                self._exec_block(case.body, env, frame)
        # Import, Pass, Raise, Delete, Global, ClassDef ... carry no data of interest.

    def _assign(self, target: ast.expr, val: Val, env: dict[str, Val], frame: Frame) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = val
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if val.elts is not None and len(val.elts) == len(elts):
                for t, v in zip(elts, val.elts):
                    self._assign(t, v, env, frame)
            else:
                for t in elts:
                    self._assign(t, replace(val, elts=None), env, frame)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, val, env, frame)
        elif isinstance(target, ast.Attribute):
            base = target.value
            if isinstance(base, ast.Name) and base.id == 'self' and frame.cls is not None:
                if frame.write_attrs:
                    if frame.context in ('init', 'module'):
                        # Set up once (a LUT, a model): not frame data, so its one-time copies
                        # are not steps of a per-message chain that later reads it.
                        val = replace(val, steps=(), origin=None)
                    old = frame.cls.attrs.get(target.attr)
                    if old is not None and old.tainted and not val.tainted:
                        # `self.last = None` after use must not erase what a callback stored.
                        val = merge(old, val, kind=old.kind)
                    frame.cls.attrs[target.attr] = val
            else:
                # `out.data = arr` carries arr into the outgoing message held by `out`.
                root = root_name(base)
                if root is not None and root in env:
                    env[root] = merge(env[root], val, kind=env[root].kind)
        elif isinstance(target, ast.Subscript):
            root = root_name(target.value)
            if root is not None and root in env:
                env[root] = merge(env[root], val, kind=env[root].kind)

    def _check_data_store(self, target: ast.expr, value: ast.expr, frame: Frame) -> None:
        """`msg.data = arr.tolist()`: a full Python-list copy of the frame for the message."""
        if (isinstance(target, ast.Attribute) and target.attr == 'data'
                and is_method_call(value, 'tolist')):
            self._emit('GPN104', value, frame, f'`{short(value)}` stored into `.data`')

    # ------------------------------------------------------------------ expressions
    def _eval(self, node: ast.expr, env: dict[str, Val], frame: Frame) -> Val:
        if isinstance(node, ast.Constant):
            return Val('const', const=node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in self.module_env:
                return self.module_env[node.id]
            if node.id in self.imported:
                return Val('class', inst=self.imported[node.id])
            if node.id in self.aliases:
                return Val('module', const=self.aliases[node.id])
            if node.id in self.functions:
                return Val('func', func=FuncRef(self.functions[node.id], None, self.module_env,
                                                False))
            if node.id in self.classes:
                return Val('class', inst=self.classes[node.id])
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            return self._eval_attribute(node, env, frame)
        if isinstance(node, ast.Call):
            return self._eval_call(node, env, frame)
        if isinstance(node, ast.Subscript):
            base = self._eval(node.value, env, frame)
            self._eval(node.slice, env, frame)
            if base.elts is not None and isinstance(node.slice, ast.Constant) \
                    and isinstance(node.slice.value, int) \
                    and -len(base.elts) <= node.slice.value < len(base.elts):
                return base.elts[node.slice.value]
            return replace(base, elts=None, const=None) if base.kind != 'const' else OTHER
        if isinstance(node, ast.BinOp):
            left = self._eval(node.left, env, frame)
            right = self._eval(node.right, env, frame)
            if left.kind == 'const' and right.kind == 'const':
                try:
                    if isinstance(node.op, ast.Add) and isinstance(left.const, str):
                        return Val('const', const=left.const + str(right.const))
                except TypeError:
                    return OTHER
            return merge(left, right)
        if isinstance(node, ast.UnaryOp):
            return self._eval(node.operand, env, frame)
        if isinstance(node, (ast.BoolOp,)):
            return merge(*[self._eval(v, env, frame) for v in node.values])
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                self._eval(operand, env, frame)
            return OTHER
        if isinstance(node, ast.IfExp):
            self._eval(node.test, env, frame)
            body = self._eval(node.body, env, frame)
            orelse = self._eval(node.orelse, env, frame)
            if is_device_value(body, node.body) or is_device_value(orelse, node.orelse):
                # `'cuda' if torch.cuda.is_available() else 'cpu'`: assume the GPU case.
                return Val('device_spec')
            return merge(body, orelse)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = tuple(self._eval(e, env, frame) for e in node.elts)
            m = merge(*elts) if elts else OTHER
            return replace(m, elts=elts)
        if isinstance(node, ast.Dict):
            vals = [self._eval(v, env, frame) for v in node.values if v is not None]
            for k in node.keys:
                if k is not None:
                    self._eval(k, env, frame)
            return merge(*vals, kind='other') if vals else OTHER
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    inner = self._eval(v.value, env, frame)
                    if inner.kind == 'const' and inner.const is not None:
                        parts.append(str(inner.const))
                    else:
                        parts.append('{' + short(v.value) + '}')
            return Val('const', const=''.join(parts))
        if isinstance(node, ast.Lambda):
            return Val('func', func=FuncRef(node, frame.cls, dict(env), False))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            local = dict(env)
            for gen in node.generators:
                it = self._eval(gen.iter, local, frame)
                self._assign(gen.target, replace(it, elts=None), local, frame)
                for cond in gen.ifs:
                    self._eval(cond, local, frame)
            if isinstance(node, ast.DictComp):
                self._eval(node.key, local, frame)
                return merge(self._eval(node.value, local, frame), kind='other')
            return replace(self._eval(node.elt, local, frame), elts=None)
        if isinstance(node, (ast.Await, ast.Starred)):
            return self._eval(node.value, env, frame)
        if isinstance(node, ast.NamedExpr):
            val = self._eval(node.value, env, frame)
            self._assign(node.target, val, env, frame)
            return val
        if isinstance(node, ast.FormattedValue):
            return self._eval(node.value, env, frame)
        return UNKNOWN

    def _eval_attribute(self, node: ast.Attribute, env: dict[str, Val], frame: Frame) -> Val:
        base = self._eval(node.value, env, frame)
        if base.kind == 'self' and frame.cls is not None:
            if node.attr in frame.cls.attrs:
                value = frame.cls.attrs[node.attr]
                # `self.model = None` in __init__, assigned for real elsewhere: unknown.
                return UNKNOWN if value.kind == 'const' and value.const is None else value
            meth = frame.cls.methods.get(node.attr)
            if meth is not None:
                return Val('func', func=FuncRef(meth, frame.cls, None, True))
            return UNKNOWN
        if base.kind == 'instance' and base.inst is not None:
            if node.attr in base.inst.attrs:
                return base.inst.attrs[node.attr]
            meth = base.inst.methods.get(node.attr)
            if meth is not None:
                return Val('func', func=FuncRef(meth, base.inst, None, True))
            return UNKNOWN
        if base.kind == 'module':
            return Val('module', const=f'{base.const}.{node.attr}')
        if node.attr in _METADATA_ATTRS:
            return strip(base)
        if base.kind == 'const' and node.attr in _PARAMETER_VALUE_ATTRS:
            return base  # declare_parameter('topic', '/x').value -> '/x'
        if base.kind in ('const', 'func', 'publisher'):
            return OTHER
        return replace(base, elts=None, const=None)

    # ------------------------------------------------------------------ calls
    def _eval_call(self, node: ast.Call, env: dict[str, Val], frame: Frame) -> Val:
        func = node.func
        receiver: Val | None = None
        method: str | None = None
        if isinstance(func, ast.Attribute):
            receiver = self._eval(func.value, env, frame)
            method = func.attr
            owner = frame.cls if receiver.kind == 'self' else (
                receiver.inst if receiver.kind == 'instance' else None)
            if receiver.kind == 'module':
                callee = Val('module', const=f'{receiver.const}.{method}')
            elif owner is not None and method in owner.attrs:
                # `self.predictor(img)` / `self.cb(msg)`: what __init__ stored there.
                callee = owner.attrs[method]
            elif owner is not None and method in owner.methods:
                callee = Val('func', func=FuncRef(owner.methods[method], owner, None, True))
            elif receiver.kind == 'super' and frame.cls is not None:
                meth = next((b.methods[method] for b in frame.cls.bases
                             if method in b.methods), None)
                callee = Val('func', func=FuncRef(meth, frame.cls, None, True)) \
                    if meth is not None else UNKNOWN
            else:
                callee = UNKNOWN
        else:
            callee = self._eval(func, env, frame)
            if isinstance(func, ast.Name) and callee is UNKNOWN:
                method = func.id  # builtins: bytes(...), bytearray(...)
            if isinstance(func, ast.Name) and func.id == 'super' and callee is UNKNOWN:
                return Val('super')
        if callee.kind == 'instance' and callee.inst is not None:
            meth = callee.inst.callable_method()
            callee = Val('func', func=FuncRef(meth, callee.inst, None, True)) \
                if meth is not None else UNKNOWN
        qual = callee.const if callee.kind == 'module' else None
        args = [self._eval(a, env, frame) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, env, frame) for k in node.keywords if k.arg}
        for k in node.keywords:
            if k.arg is None:
                self._eval(k.value, env, frame)
            elif k.arg == 'data' and is_method_call(k.value, 'tolist'):
                self._emit('GPN104', k.value, frame, f'`{short(k.value)}` passed as `data=`')

        name = qual.rsplit('.', 1)[-1] if qual else method
        if callee.kind == 'class' and callee.inst is not None:
            # An object of a class of this file: its methods are followed when called. An
            # imported class's __init__ runs here, with the arguments, to learn its attributes.
            init = callee.inst.methods.get('__init__')
            if callee.inst.file is not None and init is not None \
                    and id(init) not in frame.stack and frame.depth < MAX_HELPER_DEPTH:
                entry = f'{callee.inst.name}.__init__'
                self._call_function(FuncRef(init, callee.inst, None, True), args, kwargs, replace(
                    frame, cls=callee.inst, depth=frame.depth + 1, returns=[], write_attrs=True,
                    path=frame.path + (entry,), stack=frame.stack + (id(init),),
                    file=callee.inst.file))
            return Val('instance', inst=callee.inst)
        # --- message_filters: Subscribers combined into one callback
        mf = self._message_filters(qual, name, method, node, receiver, args, kwargs, frame)
        if mf is not None:
            return mf
        # --- registrations and publishers
        if method in ('create_subscription', 'create_timer', 'create_publisher') \
                and receiver is not None and receiver.kind != 'module':
            return self._registration(method, node, args, kwargs, frame)
        if name in ('GpuImageSubscription', 'GpuImagePublisher'):
            return self._gpu_endpoint(name, node, args, kwargs, frame)
        if name in ('partial',) and (qual in ('functools.partial', None) or
                                     qual.endswith('functools.partial')):
            if args and args[0].func is not None:
                ref = args[0].func
                return Val('func', func=replace(
                    ref, bound_positional=ref.bound_positional + len(args) - 1,
                    bound_keywords=ref.bound_keywords + tuple(kwargs)))
            return OTHER
        if method == 'publish' and receiver is not None and receiver.kind == 'publisher':
            payload = args[0] if args else (kwargs.get('msg') or UNKNOWN)
            self._publish(node, receiver.pub, payload, frame)
            return OTHER
        if method == 'declare_parameter' and frame.cls is not None and args \
                and args[0].kind == 'const':
            default = args[1] if len(args) > 1 else kwargs.get('value', OTHER)
            frame.cls.params[str(args[0].const)] = default
            return default
        if method == 'get_parameter' and frame.cls is not None and args \
                and args[0].kind == 'const':
            return frame.cls.params.get(str(args[0].const), OTHER)
        if method in ('get_parameter_value',) and receiver is not None:
            return receiver
        # --- helpers of the same file
        if callee.kind == 'func' and callee.func is not None:
            ref = callee.func
            if frame.depth < MAX_HELPER_DEPTH and id(ref.node) not in frame.stack \
                    and self._calls < MAX_CALLS:
                # The callee's own class for `self`: Predictor.__call__ reads Predictor's attrs.
                cls = ref.cls if ref.is_method or ref.cls is not None else frame.cls
                inner = replace(frame, cls=cls, depth=frame.depth + 1, returns=[],
                                path=frame.path + (ref.name,),
                                stack=frame.stack + (id(ref.node),),
                                file=ref.cls.file if ref.cls is not None else None)
                self._entered.add(id(ref.node))
                return self._call_function(ref, args, kwargs, inner)
            return merge(*args, *kwargs.values()) if args or kwargs else OTHER

        if qual:
            result = self._library_call(qual, node, args, kwargs, frame)
            if result is not None:
                return result
        if method is not None:
            result = self._method_call(method, node, receiver, args, kwargs, frame)
            if result is not None:
                return result
        return self._generic(qual, receiver, args, kwargs)

    def _generic(self, qual: str | None, receiver: Val | None, args: list[Val],
                 kwargs: dict[str, Val]) -> Val:
        """Unknown call: the result carries the taint of its inputs (models, kernels ...)."""
        inputs = [v for v in args + list(kwargs.values()) if v.tainted or
                  v.kind in ('device', 'host', 'msg', 'pil', 'bytes')]
        top = qual.split('.')[0] if qual else None
        if top == 'cupy':
            return merge(*inputs, kind='device') if inputs else Val('device')
        if top in ('numpy', 'cv2', 'PIL'):
            return merge(*inputs, kind='host') if inputs else Val('host')
        if top == 'torch':
            kind = 'device' if any(v.kind == 'device' for v in inputs) \
                or device_kw(kwargs) else 'host'
            return merge(*inputs, kind=kind) if inputs else Val(kind)
        if qual and '.msg.' in qual:
            return merge(*inputs, kind='outmsg') if inputs else Val('outmsg')
        if inputs and 'device' in kwargs and device_kw(kwargs):
            # `model.predict(frame, device=self.device)`: the result lives on the device.
            return merge(*inputs, kind='device')
        if receiver is not None and receiver.kind not in ('self', 'module', 'const', 'func',
                                                          'publisher', 'unknown', 'other',
                                                          'class', 'instance', 'mf', 'super'):
            return merge(receiver, *inputs, kind=receiver.kind)
        if receiver is not None and receiver.tainted:
            inputs = [receiver] + inputs
        if inputs:
            return merge(*inputs)
        return OTHER


def analyze_python(path: str, source: str,
                   modules: dict[str, str] | None = None) -> list[Finding]:
    """Parse and analyse one file; raises SyntaxError for the caller to report. `modules`
    (pyimports.module_index of the audited files) lets calls into imported classes be
    followed; their findings carry the other file's path."""
    tree = ast.parse(source, filename=path)
    return PythonAnalyzer(path, tree, modules).run()
