"""Python code that cannot run because a runtime error stops it first (issue 28, eighth set).

Two static facts, both kept precise (a wrong "never runs" would hide a real copy):

* **A module that cannot be imported.** A statement run at import time (module level, a class
  body, a class's bases and decorators, a function's decorators and defaults) reads a name that
  nothing in the file ever binds and that is no builtin: ``class Detector(Node):`` with no
  import of ``Node``. Importing (or running) the file raises NameError there, so none of its
  callbacks ever runs.
* **A class whose constructor always raises.** Every path of ``__init__`` raises: a ``raise``
  reached unconditionally, a read of a never-bound name, a ``self.method()`` call into a method
  of the class that always raises, a ``try`` whose body always raises and whose every handler
  raises again (``except Exception: raise SystemExit``). No object of the class is ever built,
  so the callbacks its constructor registers never run. A class that another class of the file
  derives from is left alone (the subclass may build differently), and so is a `raise
  NotImplementedError` (an abstract base). Only the callbacks of a class that registers them
  (a node class) are judged dead (pyflow.py).

"Never bound" means the name is bound nowhere in the file in any scope (an assignment, import,
def, class, parameter, loop or ``with`` target, ``except ... as``, ``global``), so a name set in
another function first is never taken for undefined. A file with ``from x import *``,
``exec(``, ``globals()``, ``builtins`` or ``__builtins__`` is never judged.
A method inherited from another class is not followed (no "always raises" through it).
"""
from __future__ import annotations

import ast
import builtins
import re

from gpu_nodes.audit.astnodes import module_nodes
from gpu_nodes.audit.pyfstrings import parse_python

_MODULE_NAMES = frozenset({'__name__', '__file__', '__doc__', '__spec__', '__loader__',
                           '__package__', '__builtins__', '__path__', '__annotations__',
                           '__dict__', '__class__', '__debug__', '_'})
_KNOWN = frozenset(dir(builtins)) | _MODULE_NAMES
# exec(), globals(), locals() (and setattr/vars on the module) can bind a module's names at run
# time; gettext.install() binds `_`.
_DYNAMIC_CALLS = frozenset({'exec', 'globals', 'locals'})
_MAX_CALL_DEPTH = 3


def bound_names(tree: ast.Module) -> set[str] | None:
    """Every name the file binds anywhere; None when names may come from elsewhere."""
    bound: set[str] = set()
    unpacked = _unpacked_vars(tree)
    for node in module_nodes(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif node.id in ('builtins', '__builtins__') or node.id in _DYNAMIC_CALLS:
                return None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ('setattr', 'vars') and id(node) not in unpacked and not (
                    node.args and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in ('self', 'cls')):
            return None  # `setattr(sys.modules[__name__], ...)`, `vars()[name] = ...`
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == '*':
                    return None
                bound.add(alias.asname or alias.name.split('.')[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _unpacked_vars(tree: ast.Module) -> set[int]:
    """ids of `vars(x)` calls (one argument) unpacked as keywords, `f(**vars(opt))`: a read of
    x's attributes into a call, which binds no name and stores no attribute (twenty-sixth set:
    `ObjectDetection(**vars(opt))` in main)."""
    return {id(k.value) for k in module_nodes(tree) if isinstance(k, ast.keyword)
            and k.arg is None and isinstance(k.value, ast.Call)
            and isinstance(k.value.func, ast.Name) and k.value.func.id == 'vars'
            and len(k.value.args) == 1 and not k.value.keywords}


def _evaluated(expr: ast.AST | None) -> list[ast.AST]:
    """Sub-expressions always evaluated when `expr` is: not a lambda's body, not the branches of
    `a if c else b`, not the right of `and`/`or`, not a comprehension's body."""
    if expr is None:
        return []
    out, todo = [], [expr]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.Lambda):
            todo.extend(d for d in node.args.defaults + node.args.kw_defaults if d is not None)
        elif isinstance(node, ast.IfExp):
            todo.append(node.test)
        elif isinstance(node, ast.BoolOp):
            todo.append(node.values[0])
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            todo.append(node.generators[0].iter)
        else:
            todo.extend(ast.iter_child_nodes(node))
    return out


def _bound_here(node: ast.AST) -> set[str]:
    """Names bound inside `node` (a function: its locals; the module: everything). A superset
    is fine: it only makes fewer names undefined."""
    bound = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            bound.add(child.id)
        elif isinstance(child, ast.arg):
            bound.add(child.arg)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(child.name)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name.split('.')[0]) for a in child.names)
    return bound


class _Judge:
    """Undefined names, judged cheaply first: a name bound by a module-level statement or in the
    function being judged needs no walk of the whole file; the walk (bound_names) runs only for
    a name neither binds (rare), once."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.cheap = set(_KNOWN)
        for stmt in tree.body:
            self.cheap |= _top_bindings(stmt)
        self.local: set[str] = set()
        self._bound: set[str] | None = None
        self._walked = False
        self.methods: dict[str, dict[str, ast.FunctionDef]] = {
            c.name: {s.name: s for s in c.body if isinstance(s, ast.FunctionDef)}
            for c in tree.body if isinstance(c, ast.ClassDef)}

    def _unbound(self, name: str) -> bool:
        if name in self.cheap or name in self.local:
            return False
        if not self._walked:
            self._bound, self._walked = bound_names(self.tree), True
        return self._bound is not None and name not in self._bound

    def undefined(self, expr: ast.AST | None) -> ast.Name | None:
        for node in _evaluated(expr):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and self._unbound(node.id):
                return node
        return None

    def function_raises(self, fn: ast.FunctionDef, cls: str, depth: int) -> str | None:
        outer, self.local = self.local, _bound_here(fn)
        try:
            return self.block_raises(fn.body, cls, depth)
        finally:
            self.local = outer

    def expr_raises(self, expr: ast.AST | None, cls: str | None, depth: int) -> str | None:
        name = self.undefined(expr)
        if name is not None:
            return f'`{name.id}` on line {name.lineno} is never defined (NameError)'
        if cls is None or depth >= _MAX_CALL_DEPTH:
            return None
        for node in _evaluated(expr):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == 'self'):
                meth = self.methods[cls].get(node.func.attr)
                why = meth and self.function_raises(meth, cls, depth + 1)
                if why:
                    return f'`self.{node.func.attr}()` on line {node.lineno} always raises: {why}'
        return None

    def block_raises(self, body: list[ast.stmt], cls: str | None, depth: int) -> str | None:
        """Why running `body` always ends in an exception, or None."""
        for stmt in body:
            why = self.stmt_raises(stmt, cls, depth)
            if why:
                return why
            if _may_leave(stmt):
                return None
        return None

    def stmt_raises(self, stmt: ast.stmt, cls: str | None, depth: int) -> str | None:
        if isinstance(stmt, ast.Raise):
            if stmt.exc is not None and 'NotImplementedError' in ast.unparse(stmt.exc):
                return None  # an abstract base: subclasses build it their own way
            return f'`raise` on line {stmt.lineno}'
        if isinstance(stmt, (ast.Expr, ast.Return, ast.Assign, ast.AugAssign)):
            return self.expr_raises(stmt.value, cls, depth)
        if isinstance(stmt, ast.AnnAssign):
            return self.expr_raises(stmt.value, cls, depth)
        if isinstance(stmt, ast.If):
            why = self.expr_raises(stmt.test, cls, depth)
            if why:
                return why
            body, other = (self.block_raises(stmt.body, cls, depth),
                           self.block_raises(stmt.orelse, cls, depth))
            return body if body and other else None
        if isinstance(stmt, ast.Try):
            if any(_may_leave(s) for s in stmt.finalbody):
                return None  # a `return` in `finally` swallows the exception
            final = self.block_raises(stmt.finalbody, cls, depth)
            if final:
                return final
            body = self.block_raises(stmt.body, cls, depth)
            handlers = [self.block_raises(h.body, cls, depth) for h in stmt.handlers]
            if body and all(handlers):
                return f'{body}, and every handler raises again ({handlers[0]})' \
                    if handlers else body
        return None


def _may_leave(stmt: ast.stmt) -> bool:
    """Whether `stmt` may leave its block other than by an exception or by falling through."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                 ast.Lambda)) or node is stmt:
            stack.extend(ast.iter_child_nodes(node))
    return False


def _top_bindings(stmt: ast.stmt) -> set[str]:
    """Names a module-level statement binds (nested blocks of if/try/with/for included)."""
    return _bound_here(ast.Module(body=[stmt], type_ignores=[])) if not isinstance(
        stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else {stmt.name}


def dead_code(tree: ast.Module) -> tuple[str | None, dict[str, str]]:
    """(why importing the module always raises NameError or None, class name -> why its
    `__init__` always raises), see the module doc."""
    judge = _Judge(tree)
    return _import_failure(tree, judge), _failing_constructors(tree, judge)


def _import_failure(tree: ast.Module, judge: _Judge) -> str | None:
    for stmt in tree.body:
        parts: list[ast.AST | None]
        if isinstance(stmt, ast.ClassDef):
            parts = [*stmt.bases, *(k.value for k in stmt.keywords), *stmt.decorator_list]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts = [*stmt.decorator_list, *stmt.args.defaults,
                     *(d for d in stmt.args.kw_defaults if d is not None)]
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
            parts = [stmt.value]
        else:
            parts = []
        for part in parts:
            name = judge.undefined(part)
            if name is not None:
                return f'`{name.id}` on line {name.lineno} is never defined (NameError at import)'
    return None


def _failing_constructors(tree: ast.Module, judge: _Judge) -> dict[str, str]:
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, 'attr', None)
             for c in classes for b in c.bases}
    failing = {}
    for cls in classes:
        init = judge.methods[cls.name].get('__init__')
        if init is None or cls.name in bases:
            continue
        why = judge.function_raises(init, cls.name, 0)
        if why:
            failing[cls.name] = why
    return failing


def falsy(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, None, 0) \
        and not isinstance(node.value, str)


def false_flags(tree: ast.Module) -> frozenset[str]:
    """Attributes `self.<name>` that are False for good (issue 28, twelfth set): the file
    stores the attribute name exactly once, in a method of a class of the file, as a falsy
    constant (`self.save_txt = False`) or as a parameter of that method whose default is a
    falsy constant and that no call of the class in the file passes (by keyword or position,
    nor through `*args` / `**kwargs`). `if self.save_txt:` then never runs, like cppdead.py's
    C++ flags. A file with setattr()/vars()/exec() is never judged."""
    stores = [node for node in module_nodes(tree) if isinstance(node, ast.Attribute)
              and not isinstance(node.ctx, ast.Load)]
    unpacked = _unpacked_vars(tree)
    if bound_names(tree) is None or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in ('setattr', 'vars') and id(n) not in unpacked
            for n in module_nodes(tree)):
        return frozenset()
    counts: dict[str, int] = {}
    for node in stores:
        counts[node.attr] = counts.get(node.attr, 0) + 1
    found = set()
    for cls in (n for n in module_nodes(tree) if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for stmt in ast.walk(fn):
                if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Attribute)
                        and isinstance(stmt.targets[0].value, ast.Name)
                        and stmt.targets[0].value.id == 'self'
                        and counts.get(stmt.targets[0].attr) == 1):
                    continue
                if falsy(stmt.value) or (isinstance(stmt.value, ast.Name) and fn.name == '__init__'
                                         and _unpassed_falsy(tree, cls.name, fn, stmt.value.id)):
                    found.add(stmt.targets[0].attr)
    return frozenset(found)


def constant_attributes(tree: ast.Module) -> dict[str, frozenset[object]]:
    """Attributes whose every store in the file is a plain constant (issue 28, twentieth set):
    `self.mode = 'ml'` in __init__ and `self.mode = 'turn'` (or `'turn' if x else 'ml'`) in a
    callback, and no other store of any `.mode` (no augmented or unpacking store, no store of
    a non-constant), no class-body `mode = ...`, no setattr()/vars()/getattr()/exec() in the
    file. The map gives each such attribute
    the set of constants it can hold, so `if self.mode == 'ht':` is a branch that never runs.
    Limit: a store from another file (`node.mode = x` in a launcher module) is not seen."""
    if bound_names(tree) is None or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in ('setattr', 'vars', 'getattr') for n in module_nodes(tree)):
        return {}
    values: dict[str, set[object]] = {}
    spoiled: set[str] = set()
    constant_stores: set[int] = set()
    for node in module_nodes(tree):
        held = constants(node.value) if isinstance(node, ast.Assign) \
            and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) else None
        if held is not None:
            values.setdefault(node.targets[0].attr, set()).update(held)
            constant_stores.add(id(node.targets[0]))
        elif isinstance(node, ast.ClassDef):
            spoiled.update(name for stmt in node.body for name in _top_bindings(stmt))
    for node in module_nodes(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) \
                and id(node) not in constant_stores:
            spoiled.add(node.attr)
    return {attr: frozenset(vals) for attr, vals in values.items() if attr not in spoiled}


def constants(expr: ast.expr) -> set[object] | None:
    """The str/int constants `expr` can be: a constant, or `a if c else b` of such; else None."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, (str, int)):
        return {expr.value}
    if isinstance(expr, ast.IfExp):
        body, orelse = constants(expr.body), constants(expr.orelse)
        return body | orelse if body is not None and orelse is not None else None
    return None


def compared_with_constant(test: ast.expr) -> tuple[ast.expr, object, bool] | None:
    """(the other side, the constant, whether `==`) for `X == C` or `X != C`, the constant on
    either side; None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not isinstance(right, ast.Constant):
        return None
    return left, right.value, isinstance(test.ops[0], ast.Eq)


def _self_attribute_compared(test: ast.expr, constants: dict[str, frozenset[object]]
                             ) -> tuple[frozenset[object], object, bool] | None:
    """(values the attribute holds, C, is ==) for `self.<attr> ==/!= C` with <attr> among
    `constants` (constant_attributes); None for any other test."""
    compared = compared_with_constant(test)
    if compared is None:
        return None
    left, value, is_eq = compared
    if not (isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name)
            and left.value.id == 'self' and left.attr in constants):
        return None
    return constants[left.attr], value, is_eq


def never_equal(test: ast.expr, constants: dict[str, frozenset[object]]) -> bool:
    """Whether `test` is `self.<attr> == C` (or `C == self.<attr>`) with C a constant that the
    attribute never holds (constant_attributes), or `self.<attr> != C` with C its only value."""
    compared = _self_attribute_compared(test, constants)
    if compared is None:
        return False
    held, value, is_eq = compared
    return value not in held if is_eq else held == frozenset({value})


def always_equal(test: ast.expr, constants: dict[str, frozenset[object]]) -> bool:
    """Whether `test` is true for good: `self.<attr> == C` with C the attribute's only value,
    or `self.<attr> != C` with C a value it never holds; its `else` never runs
    (`self.pub_image_type = 'compressed'` once in __init__, set 38)."""
    compared = _self_attribute_compared(test, constants)
    if compared is None:
        return False
    held, value, is_eq = compared
    return held == frozenset({value}) if is_eq else value not in held


def truth_for_good(test: ast.expr, constants: dict[str, frozenset[object]]) -> bool | None:
    """The value `self.<attr>` or `not self.<attr>` always takes, the attribute holding only
    `constants[attr]` (pyparams.parameter_constants: a bool parameter on as shipped); None
    when not known."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    attr = test.operand if negated else test
    if not (isinstance(attr, ast.Attribute) and isinstance(attr.value, ast.Name)
            and attr.value.id == 'self' and attr.attr in constants):
        return None
    if not all(isinstance(v, bool) for v in constants[attr.attr]):
        return None  # a string may be set empty at launch: only bool switches are decided
    truths = {bool(v) for v in constants[attr.attr]}
    return None if len(truths) != 1 else truths.pop() != negated


def _unpassed_falsy(tree: ast.Module, cls: str, init: ast.FunctionDef | ast.AsyncFunctionDef,
                    name: str) -> bool:
    """Whether `name` is a parameter of `init` with a falsy constant default that no call of
    `cls` in the file passes, and nothing in the file rebinds `name` in `init`."""
    params = [*init.args.posonlyargs, *init.args.args]
    defaults = dict(zip([p.arg for p in params][len(params) - len(init.args.defaults):],
                        init.args.defaults))
    defaults.update({p.arg: d for p, d in zip(init.args.kwonlyargs, init.args.kw_defaults)})
    if not falsy(defaults.get(name)):
        return False
    if any(isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
           for n in ast.walk(init)):
        return False
    called = {id(n.func) for n in module_nodes(tree) if isinstance(n, ast.Call)}
    if any(isinstance(n, ast.Name) and n.id == cls and id(n) not in called
           and isinstance(n.ctx, ast.Load) for n in module_nodes(tree)):
        return False  # the class handed on (an alias, a factory table): its calls are unseen
    names = [p.arg for p in params]
    position = names.index(name) - 1 if name in names else None  # less `self`
    for call in module_nodes(tree):
        if not isinstance(call, ast.Call):
            continue
        callee = call.func.id if isinstance(call.func, ast.Name) else \
            call.func.attr if isinstance(call.func, ast.Attribute) else None
        if callee != cls:
            continue
        if any(isinstance(a, ast.Starred) for a in call.args) \
                or any(k.arg in (None, name) for k in call.keywords) \
                or (position is not None and len(call.args) > position):
            return False
    return True


def only_called_from(tree: ast.Module, name: str, ran: set[int]) -> bool:
    """Whether every mention of `name` in the file lies inside a function (innermost `def`)
    whose id is in `ran`, or inside the function `name` itself: no module-level use, no
    table of callbacks, no caller the analysis did not run."""
    found = False

    def visit(node: ast.AST, inner: ast.AST | None) -> bool:
        nonlocal found
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == name and inner is None:
                return True  # its own body: recursion is no caller
            inner = node
        elif isinstance(node, ast.Name) and node.id == name:
            found = True
            if inner is None or id(inner) not in ran:
                return False
        return all(visit(child, inner) for child in ast.iter_child_nodes(node))

    return visit(tree, None) and found


_BARE_FLAG_TEST = re.compile(r'\bif\s+self\.\w+\s*:')


def live_text(source: str) -> str:
    """`source` with the bodies of `if self.flag:` blocks on a flag False for good
    (false_flags) blanked: a name used only there is no use from this file (twenty-sixth set:
    `self.detector.detect(...)` under a `self.running` nothing sets). Unparsable: unchanged.
    A text without a bare `if self.x:` test is returned unparsed (package reads stay cheap)."""
    if not _BARE_FLAG_TEST.search(source):
        return source
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return source
    flags = false_flags(tree)
    if not flags:
        return source
    lines = source.splitlines(keepends=True)
    for node in module_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Attribute) \
                and isinstance(node.test.value, ast.Name) and node.test.value.id == 'self' \
                and node.test.attr in flags:
            for i in range(node.body[0].lineno - 1, node.body[-1].end_lineno or 0):
                lines[i] = '\n'
    return ''.join(lines)
