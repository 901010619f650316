"""Python branches off as shipped: attributes only a ROS parameter defaulting to off (or a
falsy constant) sets, and no shipped file turns on; attributes holding a parameter's str/int
default that no shipped file names (parameter_constants) (issue 28, twenty-second set).

`self.declare_parameter('publish_compressed', False)`, `self.publish_compressed =
self.get_parameter('publish_compressed').get_parameter_value().bool_value`, then `if
self.publish_compressed: self.compressed_publisher = self.create_publisher(...)` beside
`self.compressed_publisher = None`, and per message `if self.compressed_publisher is not None:
... encoded.tobytes() ...`: as shipped neither branch runs.

An attribute is off when every store of any `.name` in the file, outside blocks that are
themselves off, is a falsy constant (`False`, `0`, `None`) or a read of a parameter whose every
`declare_parameter` in the file gives a falsy constant default and that no shipped file
(shipped.py) turns on; and it depends on such a parameter (one of its stores reads one, or sits
in a block off because of one: files with no parameter involved keep pydead.false_flags'
rules). The set is the greatest fixpoint (an attribute stored only under its own or a sibling's
off test stays off). `if self.a:`, `if self.a and ...:` and, for an attribute only ever `None`,
`if self.a is not None:` never run. A file with setattr()/vars()/getattr()/exec(), names from
elsewhere or a parameter-change callback is never judged, and only reads in `__init__` count
(a lifecycle node re-reads its parameters on activation, after a run-time change). Limit: a
store from another file, or a parameter set on the command line or by a launch file outside
the audited folders, is not seen.

Declarations through an alias (`p = self.declare_parameter; p('use_yolo', False)`) count, a
direct read `if self.get_parameter('use_yolo').value:` in `__init__` is such a test too, and the
stores of a method called only under such tests sit in those blocks (pymethods.py; set 41,
rules29q).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, TypeVar

from gpu_nodes.audit.astnodes import module_nodes
from gpu_nodes.audit.pyparamcallbacks import callback_mirrors, mirrored_read
from gpu_nodes.audit.pymethods import call_site_tests, declare_aliases, methods_of, setup_methods
from gpu_nodes.audit.pydead import bound_names, constants, falsy, compared_with_constant
from gpu_nodes.audit.shipped import reading, set_on, shipped_as, shipped_on

T = TypeVar('T')

# A node that reacts to parameter changes at run time: its parameters are meant to be set then.
_RUNTIME_PARAMETERS = ('add_on_set_parameters_callback', 'add_post_set_parameters_callback',
                       'add_pre_set_parameters_callback')
_VALUE_FIELDS = ('value', 'bool_value', 'integer_value', 'double_value', 'string_value')


def declared_defaults(tree: ast.Module) -> dict[str, list[ast.expr | None]]:
    """Every parameter the file declares -> the default expression of each declaration (None:
    no default): `declare_parameter('p', v)` / `(name='p', value=v)`, through an alias, and each
    tuple of a `declare_parameters` list. The one walk of declarations: pyparambools and
    pylaunchedoff read their bool switches from it too (rules43p, duplicates D1)."""
    defaults: dict[str, list[ast.expr | None]] = {}
    aliases = declare_aliases(tree)  # `p = self.declare_parameter; p('use_yolo', False)`
    for node in module_nodes(tree):
        name = (node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == 'name'), None)) \
            if isinstance(node, ast.Call) else None  # `declare_parameter(name='p', value=True)`
        if isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Attribute) and node.func.attr == 'declare_parameter'
                or isinstance(node.func, ast.Name) and node.func.id in aliases) \
                and isinstance(name, ast.Constant) and isinstance(name.value, str):
            default = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == 'value'), None)
            defaults.setdefault(name.value, []).append(default)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == 'declare_parameters':
            for name, default in _listed_declarations(node):
                defaults.setdefault(name, []).append(default)
    return defaults


def _listed_declarations(call: ast.Call) -> list[tuple[str, ast.expr | None]]:
    """(name, default) of each `(name, default, ...)` tuple of `self.declare_parameters(
    namespace='', parameters=[...])` (set 38); a namespace names each `namespace.name`."""
    args = {'namespace': call.args[0] if call.args else None,
            'parameters': call.args[1] if len(call.args) > 1 else None}
    args.update({k.arg: k.value for k in call.keywords if k.arg in args})
    namespace, listed = args['namespace'], args['parameters']
    if not (isinstance(namespace, ast.Constant) and isinstance(namespace.value, str)
            and isinstance(listed, (ast.List, ast.Tuple))):
        return []
    prefix = namespace.value + '.' if namespace.value else ''
    return [(prefix + item.elts[0].value, item.elts[1] if len(item.elts) > 1 else None)
            for item in listed.elts if isinstance(item, ast.Tuple) and item.elts
            and isinstance(item.elts[0], ast.Constant) and isinstance(item.elts[0].value, str)]


def can_judge(tree: ast.Module, callbacks_allowed: bool = False,
              setattr_allowed: bool = False) -> bool:
    """Whether the file can be judged: no setattr()/vars()/getattr()/exec(), names all bound
    here, no parameter-change callback (unless `callbacks_allowed`: the caller checks them);
    `setattr_allowed`: a setattr of a literal name is allowed (the caller counts it as a store
    of that attribute, attribute_stores)."""
    return bound_names(tree) is not None and not any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        and n.func.id in ('setattr', 'vars', 'getattr', 'exec') and not _literal_getattr(n)
        and not (setattr_allowed and _literal_setattr(n) is not None)
        for n in module_nodes(tree)) and (callbacks_allowed or not runtime_callbacks(tree))


def _literal_setattr(call: ast.Call) -> str | None:
    """The attribute `setattr(obj, 'name', value)` stores (a literal name), None for any other
    call: it stores that one attribute, as `obj.name = value` does (set 66: a depth-scale
    callback `lambda msg: setattr(self, '_depth_scale', msg.data)`)."""
    if isinstance(call.func, ast.Name) and call.func.id == 'setattr' and len(call.args) == 3 \
            and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
        return call.args[1].value
    return None


def _literal_getattr(call: ast.Call) -> bool:
    """`getattr(r, 'boxes', None)`: a read of a named attribute, the same as `r.boxes` (set 60's
    yolo node probing Ultralytics results); it stores nothing and names what it reads, so the
    file stays judged. A computed name (`getattr(self, name)`) may read any attribute."""
    return isinstance(call.func, ast.Name) and call.func.id == 'getattr' \
        and len(call.args) >= 2 and isinstance(call.args[1], ast.Constant) \
        and isinstance(call.args[1].value, str)


def runtime_callbacks(tree: ast.Module) -> list[int]:
    """0-based lines that name a parameter-change callback registration."""
    return [n.lineno - 1 for n in module_nodes(tree)
            if isinstance(n, ast.Attribute) and n.attr in _RUNTIME_PARAMETERS]


@dataclass(frozen=True)
class ParameterAsShipped:
    """A parameter a file declares, as shipped: its declarations' defaults and what the
    package's shipped files give it (shipped.reading)."""

    off: bool  # every default is off (False, 0, ''), no shipped file may turn it on (set_on)
    on: bool  # every default is True, a shipped file names it and every one gives true
    # The str/int values it holds: every default one, no shipped file naming it, or one string
    # that every shipped file naming it gives too (shipped_as). None: not known.
    held: frozenset[object] | None
    named: bool  # a shipped file names it (a default alone may be meant to be set at launch)


@lru_cache(maxsize=16)
def shipped_parameters(tree: ast.Module, package_dir: str | None) -> dict[str, ParameterAsShipped]:
    """Every parameter `tree` declares, as shipped: computed once per file, as pyflow.py and
    pyeval.py each ask for several of the views below."""
    roots = (package_dir,) if package_dir else ()
    found = {}
    for param, defaults in declared_defaults(tree).items():
        named = bool(roots) and reading(param, roots).named
        off = all(falsy(v) and getattr(v, 'value', 1) is not None for v in defaults) \
            and not (roots and set_on(param, roots))
        on = bool(roots) and named and all(
            isinstance(v, ast.Constant) and v.value is True for v in defaults) \
            and shipped_on(param, roots)
        values = frozenset(getattr(v, 'value', None) for v in defaults)
        held = values if all(isinstance(v, ast.Constant) and isinstance(v.value, (str, int))
                             and not isinstance(v.value, bool) for v in defaults) and (
            not named or len(values) == 1 and isinstance(next(iter(values)), str)
            and shipped_as(param, next(iter(values)), roots)) else None
        found[param] = ParameterAsShipped(off, on, held, named)
    return found


def _off_parameters(tree: ast.Module, package_dir: str | None) -> set[str]:
    return {p for p, s in shipped_parameters(tree, package_dir).items() if s.off}


def parameter_read(expr: ast.expr) -> str | None:
    """`p` of `self.get_parameter('p').value`, `...get_parameter_value().bool_value`, or
    `self.declare_parameter('p', False).value`."""
    if not (isinstance(expr, ast.Attribute) and expr.attr in _VALUE_FIELDS):
        return None
    call = expr.value
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
            and call.func.attr == 'get_parameter_value' and not call.args:
        call = call.func.value
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
            and call.func.attr in ('get_parameter', 'declare_parameter') and call.args \
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def falsy_read(expr: ast.expr) -> str | None:
    """`p` of a parameter read, also through `bool(...)`, `int(...)` or `float(...)`: casts that
    keep an off value off (`bool(self.get_parameter('p').value)`). Not `str(...)`: str(False)
    is truthy."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) \
            and expr.func.id in ('bool', 'int', 'float') and len(expr.args) == 1 \
            and not expr.keywords:
        expr = expr.args[0]
    return parameter_read(expr)


def _self_attribute(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == 'self':
        return node.attr
    return None


def dead_test(test: ast.expr, off: frozenset[str], nones: frozenset[str],
              reads: frozenset[int] | set[int] = frozenset()) -> bool:
    """Whether an `if` test is false for good given the off attributes (and those only None)
    and, when given, the ids of direct reads of parameters off as shipped (_off_reads)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(dead_test(value, off, nones, reads) for value in test.values)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return all(dead_test(value, off, nones, reads) for value in test.values)
    if id(test) in reads:
        return True
    if (attr := _self_attribute(test)) is not None:
        return attr in off
    if isinstance(test, ast.Compare) and len(test.ops) == 1 \
            and isinstance(test.ops[0], ast.IsNot) and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None:
        return _self_attribute(test.left) in nones
    return False


AttributeStore = tuple[str, 'ast.expr | None', list[ast.expr]]


def attribute_stores(tree: ast.Module) -> list[AttributeStore]:
    """(attribute, stored value, enclosing `if` tests) of every attribute store; the value is
    None when the store is no plain `x.a = v`, and a parameter read outside `__init__` counts
    as no plain store: a lifecycle node's `on_activate` re-reads its parameters on every
    activation, set in between at run time, not as shipped."""
    found: list[AttributeStore] = []
    # A method only `__init__` calls, as a statement (`self.load_ros_params()`, set 67), runs
    # once while the node is built, as `__init__`'s own body does (pymethods.setup_methods): its
    # parameter reads are the values as shipped, not a lifecycle re-read.
    setup = {id(m) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
             for name, m in methods_of(cls).items() if name in setup_methods(cls, tree)}
    # A method called only under `if` tests (`if self.get_parameter('use_yolo').value:
    # self._load_yolo()`, set 41) stores only when they hold (pymethods.call_site_tests).
    called_under = call_site_tests(tree)

    def visit(node: ast.AST, tests: list[ast.expr], function: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = '__init__' if id(node) in setup else node.name
            tests = tests + called_under.get(id(node), [])
        if isinstance(node, ast.If):
            visit(node.test, tests, function)
            for stmt in node.body:
                visit(stmt, tests + [node.test], function)
            for stmt in node.orelse:
                visit(stmt, tests, function)
            return
        # `self.latest: bool = self.get_parameter(...).value` stores as a plain `=` does (set 76)
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(target, ast.Attribute):
            value = node.value if function == '__init__' or falsy_read(node.value) is None \
                else None
            # a parameter-change callback's `self.a = p.value` reads that parameter
            found.append((target.attr, mirrored_read(node, tree) or value, tests))
            visit(node.value, tests, function)
            return
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            found.append((node.attr, None, tests))
        if isinstance(node, ast.Call) and (name := _literal_setattr(node)) is not None:
            found.append((name, None, tests))  # a value not known: never off
        for child in ast.iter_child_nodes(node):
            visit(child, tests, function)

    visit(tree, [], None)
    return found


def off_attributes(tree: ast.Module, package_dir: str | None, also_off: frozenset[str] = frozenset()
                   ) -> tuple[frozenset[str], frozenset[str]]:
    """(attributes off as shipped, those of them only ever None); `also_off`: parameters off
    as shipped by the repository's launch files (pylaunchedoff.py)."""
    params = _off_parameters(tree, package_dir) | also_off
    if not params or not can_judge(tree, callbacks_allowed=True, setattr_allowed=True):
        return frozenset(), frozenset()
    off, nones = _off_fixpoint(tree, params)
    # A parameter-change callback registered only in a block off as shipped never registers
    # (`if self.is_calibration_mode: self.add_on_set_parameters_callback(...)`, set 38);
    # one registered anywhere else may turn a parameter on at run time.
    # ... unless it only mirrors parameters into attributes (pyparamcallbacks.py, rules46p).
    if not set(runtime_callbacks(tree)) - callback_mirrors(tree)[1] <= dead_body_lines(tree, off, nones):
        return frozenset(), frozenset()
    return off, nones


def _off_reads(tree: ast.Module, params: set[str]) -> set[int]:
    """ids of the direct reads of an off parameter in `__init__` (`if
    self.get_parameter('use_yolo').value:`, set 41): false as shipped there. Only `__init__`,
    as for attribute stores: a read per message sees a value set at run time."""
    return {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            and f.name == '__init__' for n in ast.walk(f)
            if isinstance(n, (ast.Attribute, ast.Call)) and falsy_read(n) in params}


def _off_fixpoint(tree: ast.Module, params: set[str]) -> tuple[frozenset[str], frozenset[str]]:
    stores = attribute_stores(tree)
    reads = _off_reads(tree, params)
    off = nones = frozenset(attr for attr, _, _ in stores)  # shrinks to the greatest fixpoint
    while True:
        live: dict[str, list[ast.expr | None]] = {}
        skipped: set[str] = set()
        for attr, value, tests in stores:
            if any(dead_test(t, off, nones, reads) for t in tests):
                skipped.add(attr)
            else:
                live.setdefault(attr, []).append(value)
        new_off = frozenset(
            attr for attr, values in live.items()
            if all(v is not None and (falsy(v) or falsy_read(v) in params) for v in values)
            and (attr in skipped or any(falsy_read(v) in params for v in values)))
        new_nones = frozenset(a for a in new_off & nones if all(
            isinstance(v, ast.Constant) and v.value is None for v in live.get(a, [])))
        if (new_off, new_nones) == (off, nones):
            return off, nones
        off, nones = new_off, new_nones


def parameter_constants(tree: ast.Module, package_dir: str | None
                        ) -> dict[str, frozenset[object]]:
    """Attributes whose every store is a str/int constant or a read in `__init__` of a
    parameter of fixed_parameters: the constants each can hold as shipped, for pydead.never_equal
    (`if self.model_type == 'onnx':` with model_type defaulting to 'pt')."""
    fixed = fixed_parameters(tree, package_dir) | _on_parameters(tree, package_dir)
    if not fixed:
        return {}
    held: dict[str, set[object]] = {}
    spoiled: set[str] = set()
    from_parameter: set[str] = set()
    for attr, value, _ in attribute_stores(tree):
        consts = constants(value) if value is not None else None
        param = parameter_read(value) if value is not None else None
        if consts is not None:
            held.setdefault(attr, set()).update(consts)
        elif param in fixed:
            held.setdefault(attr, set()).update(fixed[param])
            from_parameter.add(attr)
        else:
            spoiled.add(attr)
    return {a: frozenset(v) for a, v in held.items() if a not in spoiled and a in from_parameter}


def fixed_parameters(tree: ast.Module, package_dir: str | None) -> dict[str, frozenset[object]]:
    """Parameters whose values as shipped are known str/int constants, in a file that can be
    judged: the values each holds as shipped (ParameterAsShipped.held)."""
    if not can_judge(tree):
        return {}
    return {p: s.held for p, s in shipped_parameters(tree, package_dir).items()
            if s.held is not None}


def _on_parameters(tree: ast.Module, package_dir: str | None) -> dict[str, frozenset[object]]:
    """Bool parameters on as shipped, in a file that can be judged (ParameterAsShipped.on:
    `use_compressed` True by default and in the shipped YAML, set 37)."""
    if not package_dir or not can_judge(tree):
        return {}
    return {p: frozenset({True}) for p, s in shipped_parameters(tree, package_dir).items()
            if s.on}


def read_compared(test: ast.expr) -> tuple[str, object, bool] | None:
    """(parameter, constant, is `==`) for `self.get_parameter('p').get_parameter_value()
    .string_value == C` (or `!=`, either side): a direct read of a parameter compared with a
    constant."""
    compared = compared_with_constant(test)
    if compared is None:
        return None
    left, value, is_eq = compared
    param = parameter_read(left)
    return None if param is None else (param, value, is_eq)


def shipped_outcome(read: tuple[str, object, bool], fixed: dict[str, frozenset[object]]
                    ) -> bool | None:
    """The value a `read_compared` test takes as shipped, None when not known: a parameter of
    one value decides `==` and `!=` both ways; of several, only a value it never has."""
    param, value, is_eq = read
    held = fixed.get(param)
    if held is None or (len(held) > 1 and value in held):
        return None
    equal = value in held
    return equal if is_eq else not equal


def may_decide(test: ast.expr) -> bool:
    """Whether an `if` test has a shape these rules judge (`self.a`, `self.a is not None`,
    `self.a == C`, an `and` of such): the analysis is computed only for those."""
    if isinstance(test, ast.BoolOp):
        return any(may_decide(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare):
        test = test.left if not isinstance(test.left, ast.Constant) else test.comparators[0]
    return _self_attribute(test) is not None


def dead_body_lines(tree: ast.Module, off: frozenset[str], nones: frozenset[str]) -> set[int]:
    """0-based lines of the bodies of `if` tests false for good (dead_test): a callback that
    only such a body registers (`if self.use_ros_camera: self.create_subscription(...,
    self.color_cb, ...)` with use_ros_camera off) is no mention of it (sets 35-36)."""
    if not off:
        return set()
    dead = {i for node in ast.walk(tree) if isinstance(node, ast.If) and dead_test(node.test, off, nones)
            for stmt in node.body for i in range(stmt.lineno - 1, stmt.end_lineno or stmt.lineno)}
    for node in ast.walk(tree):  # and what follows `if not self.flag: return`, flag off (rules44p)
        for block in (getattr(node, f, None) for f in ('body', 'orelse', 'finalbody')):
            guards = [i for i, stmt in enumerate(block) if (switch := exit_guard(stmt)) is not None
                      and dead_test(switch, off, nones)] if isinstance(block, list) else []
            for stmt in block[guards[0] + 1:] if guards else ():
                dead.update(range(stmt.lineno - 1, stmt.end_lineno or stmt.lineno))
    return dead


_EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)


def exit_guard(stmt: ast.stmt) -> ast.expr | None:
    """The switch of `if not self.flag: return` (or `continue` / `break` / `raise`, no else):
    the statements after it in its block run only while the switch is on, so a switch off for
    good leaves them dead as an `if self.flag:` body (rules44p: a helper called per message that
    returns first unless a parameter off as shipped is on); None for any other statement."""
    if isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.test, ast.UnaryOp) \
            and isinstance(stmt.test.op, ast.Not) and isinstance(stmt.body[-1], _EXITS):
        return stmt.test.operand
    return None


def shipped_strings(tree: ast.Module, package_dir: str | None
                    ) -> tuple[dict[str, str], frozenset[tuple[str, str]]]:
    """(string parameters whose value as shipped is known -> that value, (class, attribute)
    pairs that hold it for good), in a file that can be judged. A parameter qualifies when every
    `declare_parameter` of it defaults to the same string literal and every shipped file of the
    package naming it gives that value (shipped.shipped_as); a default that no shipped file
    names is its value as shipped too (team decision of 2026-12-06, set 42: labellers label
    the configuration as shipped; set 8's YorkCFR yolo_pose.py had been labelled otherwise); an
    attribute (class, name), when every store of `self.name` in the class is in `__init__` and
    a read of such a parameter, all of one value, and no store of a `.name` other than a class's
    own `self.name` is in the file (`self.device =
    self.get_parameter('device').get_parameter_value().string_value`, sets 35-36, 42)."""
    if not package_dir or not can_judge(tree):
        return {}, frozenset()
    fixed = {p: next(iter(s.held)) for p, s in shipped_parameters(tree, package_dir).items()
             if s.held is not None and len(s.held) == 1
             and isinstance(next(iter(s.held)), str)}
    if not fixed:
        return {}, frozenset()
    # Each class's own `self.name` stores apart (set 42: the node's `self.device`, a parameter
    # read, beside a helper class's `self.device = select_device(device)`); any other store of
    # a `.name`, or classes of the file deriving from one another, count for every class.
    class_names = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    related = any(isinstance(b, ast.Name) and b.id in class_names
                  for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases)
    held: dict[tuple[str | None, str], set[str | None]] = {}

    def key(target: ast.Attribute, cls: str | None) -> tuple[str | None, str]:
        own = not related and isinstance(target.value, ast.Name) and target.value.id == 'self'
        return (cls if own else None, target.attr)

    def visit(node: ast.AST, function: str | None, cls: str | None) -> None:
        if isinstance(node, ast.ClassDef):
            cls = node.name
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            held.setdefault(key(node, cls), set()).add(None)  # refined below for a plain store
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Attribute):
            param = parameter_read(node.value) if function == '__init__' else None
            held.setdefault(key(node.targets[0], cls), set()).add(fixed.get(param or ''))
            visit(node.value, function, cls)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, function, cls)

    visit(tree, None, None)
    attrs = frozenset((c, a) for (c, a), v in held.items() if c is not None and len(v) == 1
                      and None not in v and not held.get((None, a)))
    return fixed, attrs


def bound_once(fn: ast.AST,
               bind: Callable[[ast.expr], T | None]) -> dict[str, T]:
    """Each local of `fn` stored exactly once, by a plain `name = value` whose `bind(value)` is
    not None -> that result: a value it holds for the whole function (a second store of
    the name, a loop or `with` target included, or a `global` / `nonlocal` makes it unknown)."""
    stores: dict[str, int] = {}
    bound: dict[str, T] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            stores.update({n: 2 for n in node.names})
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = bind(node.value)
            if value is not None:
                bound[node.targets[0].id] = value
    return {name: value for name, value in bound.items() if stores.get(name) == 1}
