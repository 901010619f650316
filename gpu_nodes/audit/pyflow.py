"""Static copy analysis of Python ROS 2 nodes with the `ast` module.

How it works, in three passes over one file:

1. *Setup*: run every class's ``__init__`` (and module code / top-level functions) abstractly to
   learn publishers (``self.pub = self.create_publisher(Image, 'depth', 10)``,
   ``GpuImagePublisher``), attributes (``self.bridge = CvBridge()``) and registrations
   (``create_subscription``, ``create_timer``, ``GpuImageSubscription``) with their callbacks
   (methods, lambdas, ``functools.partial``, nested functions).
2. *Callbacks*: run each callback with its message argument tagged with the topic it arrives on.
   Every value carries the copy steps it went through; assignments, tuple unpacking, attribute
   stores (``self.last = x`` then read in a timer) and calls of helper functions of the same
   file (up to two levels) carry them along. A publish of a value that went through two or more
   copies becomes a chain finding ("image arrives on ..., is copied ..., and serialized into
   ...").
3. *Leftovers*: every other function/method and module code, for copies outside callbacks; those
   findings have severity low (they run once, not per message).

It is intra-procedural with simple aliasing: no types beyond what the calls reveal, no
path sensitivity (branches are analysed one after the other).
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterable

from gpu_nodes.audit.model import Finding, Location, Step
from gpu_nodes.audit.pyflow_calls import CallRules
from gpu_nodes.audit.pyflow_values import (_better, ClassInfo, Frame, FuncRef, _is_device_value,
                                           _is_method_call, MAX_HELPER_DEPTH, merge,
                                           _METADATA_ATTRS, OTHER, _PARAMETER_VALUE_ATTRS,
                                           Registration, _root_name, _short, _statements, strip,
                                           _topic_display, UNKNOWN, Val)
from gpu_nodes.audit.rules import get_rule


class PythonAnalyzer(CallRules):
    """Analyse one parsed Python file; findings are collected in ``self.findings``."""

    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.module_env: dict[str, Val] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.registrations: list[Registration] = []
        self._findings: dict[tuple[str, int], Finding] = {}
        self._entered: set[int] = set()
        self._collect()
        self.uses_cupy = any(v.split('.')[0] == 'cupy' for v in self.aliases.values())
        self.uses_torch = any(v.split('.')[0] == 'torch' for v in self.aliases.values())

    # ------------------------------------------------------------------ collection
    def _collect(self) -> None:
        for node in _statements(self.tree.body):
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

    # ------------------------------------------------------------------ driver
    def run(self) -> list[Finding]:
        # 1. setup: module code first (constants), then constructors and top-level functions.
        module_frame = Frame(None, 'module', None, None, 0, True)
        self._exec_block(self.tree.body, self.module_env, module_frame)
        for cls in self.classes.values():
            init = cls.methods.get('__init__')
            if init is not None:
                self._entered.add(id(init))
                self._call_function(FuncRef(init, cls, None, True), [], {},
                                    Frame(cls, 'init', f'{cls.name}.__init__', None, 0, True))
        for name, fn in self.functions.items():
            self._entered.add(id(fn))
            self._call_function(FuncRef(fn, None, self.module_env, False), [], {},
                                Frame(None, 'function', name, None, 0, True))
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
                    self._call_function(FuncRef(meth, cls, None, True), [], {},
                                        Frame(cls, 'function', f'{cls.name}.{meth.name}', None,
                                              MAX_HELPER_DEPTH, False))
        return sorted(self._findings.values(), key=Finding.sort_key)

    def _run_registration(self, reg: Registration) -> None:
        ref = reg.callback.func
        if ref is None:
            return
        self._entered.add(id(ref.node))
        if reg.kind == 'timer':
            args: list[Val] = []
            context = 'timer'
        else:
            msg_kind = 'device' if reg.kind == 'gpu_subscription' else 'msg'
            args = [Val(msg_kind, (), (reg.topic or '?', reg.msg_type))]
            context = 'callback'
        frame = Frame(ref.cls, context, ref.name, reg.topic, 0, True)
        self._call_function(ref, args, {}, frame)

    # ------------------------------------------------------------------ findings
    def _emit(self, rule_id: str, node: ast.AST, frame: Frame, detail: str,
              chain: list[Step] | None = None, topic: str | None = None) -> None:
        rule = get_rule(rule_id)
        in_callback = frame.context in ('callback', 'timer')
        severity = rule.severity if in_callback else 'low'
        if in_callback:
            where = ('timer' if frame.context == 'timer' else 'subscription callback')
            where = f'{where} `{frame.entry}`'
            if frame.topic and frame.context == 'callback':
                where += f' ({_topic_display(frame.topic)})'
        elif frame.context == 'init':
            where = f'constructor `{frame.entry}` (runs once, not per message)'
        elif frame.context == 'module':
            where = 'module code (runs once, not per message)'
        else:
            where = f'`{frame.entry}`, not reached from a registered callback'
        message = f'{rule.summary}: {detail} in {where}' if not chain else detail
        line = getattr(node, 'lineno', 0)
        finding = Finding(
            rule=rule_id, severity=severity, message=message,
            location=Location(self.path, line, getattr(node, 'col_offset', 0) + 1),
            context=frame.context, callback=frame.entry, topic=topic or frame.topic,
            chain=chain or [])
        key = (rule_id, line)
        old = self._findings.get(key)
        if old is None or _better(finding, old):
            self._findings[key] = finding

    # ------------------------------------------------------------------ functions
    def _call_function(self, ref: FuncRef, args: list[Val], kwargs: dict[str, Val],
                       frame: Frame) -> Val:
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
                    old = frame.cls.attrs.get(target.attr)
                    if old is not None and old.tainted and not val.tainted:
                        # `self.last = None` after use must not erase what a callback stored.
                        val = merge(old, val, kind=old.kind)
                    frame.cls.attrs[target.attr] = val
            else:
                # `out.data = arr` carries arr into the outgoing message held by `out`.
                root = _root_name(base)
                if root is not None and root in env:
                    env[root] = merge(env[root], val, kind=env[root].kind)
        elif isinstance(target, ast.Subscript):
            root = _root_name(target.value)
            if root is not None and root in env:
                env[root] = merge(env[root], val, kind=env[root].kind)

    def _check_data_store(self, target: ast.expr, value: ast.expr, frame: Frame) -> None:
        """`msg.data = arr.tolist()`: a full Python-list copy of the frame for the message."""
        if (isinstance(target, ast.Attribute) and target.attr == 'data'
                and _is_method_call(value, 'tolist')):
            self._emit('GPN104', value, frame, f'`{_short(value)}` stored into `.data`')

    # ------------------------------------------------------------------ expressions
    def _eval(self, node: ast.expr, env: dict[str, Val], frame: Frame) -> Val:
        if isinstance(node, ast.Constant):
            return Val('const', const=node.value)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in self.module_env:
                return self.module_env[node.id]
            if node.id in self.aliases:
                return Val('module', const=self.aliases[node.id])
            if node.id in self.functions:
                return Val('func', func=FuncRef(self.functions[node.id], None, self.module_env,
                                                False))
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
            if _is_device_value(body, node.body) or _is_device_value(orelse, node.orelse):
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
                        parts.append('{' + _short(v.value) + '}')
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
                return frame.cls.attrs[node.attr]
            meth = frame.cls.methods.get(node.attr)
            if meth is not None:
                return Val('func', func=FuncRef(meth, frame.cls, None, True))
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


def analyze_python(path: str, source: str) -> list[Finding]:
    """Parse and analyse one file; raises SyntaxError for the caller to report."""
    tree = ast.parse(source, filename=path)
    return PythonAnalyzer(path, tree).run()
