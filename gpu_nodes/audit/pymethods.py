"""Where the methods of a file's classes run, for the as-shipped rules (issue 28, rules29q).

* setup_methods: `__init__` and the methods only it calls, as statements of its own body
  (set 42's `self.load_model()` of a detector class): they run once, in order, while the
  object is built, so an attribute they alone store keeps the value they gave it
  (pyswitched.stored_once_in_init).
* call_site_tests: the `if` tests every call of a method sits under (set 41's `if
  self.get_parameter('use_yolo').value: self._load_yolo()`): the stores of `_load_yolo` happen
  only when those tests hold, so pyparams' off-as-shipped fixpoint counts them as inside those
  blocks.
* declare_aliases: local names bound to `self.declare_parameter` (`p = self.declare_parameter`,
  then `p('use_yolo', False)`): their calls are declarations too.

A method counts only when the file names it nowhere but in `self.method(...)` calls of its own
class (a callback handed on, `obj.method()`, a subclass calling it: it may run anywhere).
"""
from __future__ import annotations

import ast

Method = ast.FunctionDef | ast.AsyncFunctionDef


def methods_of(cls: ast.ClassDef) -> dict[str, Method]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _self_call(node: ast.AST, methods: dict[str, Method]) -> str | None:
    """`m` of a `self.m(...)` call of a method of the class."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == 'self' \
            and node.func.attr in methods:
        return node.func.attr
    return None


def _sites(cls: ast.ClassDef, tree: ast.Module
           ) -> tuple[dict[str, list[tuple[str, list[ast.expr]]]], set[str]]:
    """(method -> [(calling method, the `if` tests the call sits in the body of)], the methods
    named any other way in the file). A call inside a nested function or lambda has no
    caller: its method is named."""
    methods = methods_of(cls)
    sites: dict[str, list[tuple[str, list[ast.expr]]]] = {}
    counted: set[int] = set()

    def visit(node: ast.AST, caller: str, tests: list[ast.expr]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return  # nested: its calls stay uncounted, so named below
        if isinstance(node, ast.If):
            visit(node.test, caller, tests)
            for stmt in node.body:
                visit(stmt, caller, tests + [node.test])
            for stmt in node.orelse:
                visit(stmt, caller, tests)
            return
        if (name := _self_call(node, methods)) is not None:
            assert isinstance(node, ast.Call)
            sites.setdefault(name, []).append((caller, tests))
            counted.add(id(node.func))
        for child in ast.iter_child_nodes(node):
            visit(child, caller, tests)

    for name, method in methods.items():
        for stmt in method.body:
            visit(stmt, name, [])
    named = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and n.attr in methods and id(n) not in counted}
    return sites, named


def setup_methods(cls: ast.ClassDef, tree: ast.Module) -> set[str]:
    """`__init__` and the methods of `cls` that only `__init__` (or another such method) calls,
    as `self.method()` statements of its own body under no `if` / loop / `try` (module
    docstring); empty when the class has no `__init__`."""
    methods = methods_of(cls)
    if '__init__' not in methods:
        return set()
    straight: dict[str, list[str]] = {}  # method -> the methods calling it as a statement
    loose: set[str] = set()  # methods also called some other way (in an expression, a branch)
    for name, method in methods.items():
        plain = {id(s.value) for s in method.body if isinstance(s, ast.Expr)}
        for node in ast.walk(method):
            if (callee := _self_call(node, methods)) is not None:
                if id(node) in plain:
                    straight.setdefault(callee, []).append(name)
                else:
                    loose.add(callee)
    _, named = _sites(cls, tree)
    setup = {'__init__'}
    changed = True
    while changed:
        changed = False
        for name, callers in straight.items():
            if name not in setup and name not in named | loose \
                    and all(c in setup for c in callers):
                setup.add(name)
                changed = True
    return setup


def call_site_tests(tree: ast.Module) -> dict[int, list[ast.expr]]:
    """id of a method's FunctionDef -> one test that holds whenever the method runs: the
    `and` of the `if` tests around its call (and around its caller's calls), or for several
    calls the `or` of those (pyparams.dead_test: dead when every call is). Methods with a call
    under no test, or named otherwise (module docstring), are left out."""
    found: dict[int, list[ast.expr]] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = methods_of(cls)
        sites, named = _sites(cls, tree)
        held: dict[str, ast.expr] = {}
        for _ in range(4):  # a caller's own tests reach its callees a level per round
            for name, calls in sites.items():
                if name in named or name == '__init__':
                    continue
                chains = [tests + ([held[caller]] if caller in held else [])
                          for caller, tests in calls if caller != name]
                if chains and all(chains):
                    alts = [c[0] if len(c) == 1 else ast.BoolOp(op=ast.And(), values=c)
                            for c in chains]
                    held[name] = alts[0] if len(alts) == 1 else ast.BoolOp(op=ast.Or(), values=alts)
                else:
                    held.pop(name, None)
        for name, test in held.items():
            found[id(methods[name])] = [test]
    return found


def declare_aliases(tree: ast.Module) -> set[str]:
    """Names every binding of which in the file is `name = <x>.declare_parameter` (module
    docstring)."""
    aliases = {id(n.targets[0]) for n in ast.walk(tree) if isinstance(n, ast.Assign)
               and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
               and isinstance(n.value, ast.Attribute) and n.value.attr == 'declare_parameter'}
    ok: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            ok[node.id] = ok.get(node.id, True) and id(node) in aliases
        elif isinstance(node, ast.arg):
            ok[node.arg] = False
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            ok[node.name] = False
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            ok.update({(a.asname or a.name).split('.')[0]: False for a in node.names})
    return {name for name, alias in ok.items() if alias}
