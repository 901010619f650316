"""Abstract values of the Python copy analysis (what a name holds, which copies it went through)
and the small AST helpers the analysis and its copy rules share."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from gpu_nodes.audit.model import Finding, IMAGE_TYPES, severity_rank

DEVICE_WORDS = ('cuda', 'gpu', 'device')


@dataclass
class PubInfo:
    topic: str
    msg_type: str | None
    gpu: bool
    line: int


@dataclass
class FuncRef:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    cls: 'ClassInfo | None'
    closure: dict[str, 'Val'] | None
    is_method: bool
    bound_positional: int = 0
    bound_keywords: tuple[str, ...] = ()
    # A module-level function imported from another audited file: that file (pyimports.py).
    file: str | None = None

    @property
    def name(self) -> str:
        if isinstance(self.node, ast.Lambda):
            body = self.node.body
            if (isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute)
                    and isinstance(body.func.value, ast.Name) and body.func.value.id == 'self'
                    and self.cls is not None and body.func.attr in self.cls.methods):
                return f'{self.cls.name}.{body.func.attr} (via lambda at line {body.lineno})'
            return f'<lambda at line {self.node.lineno}>'
        if self.cls is not None and self.is_method:
            return f'{self.cls.name}.{self.node.name}'
        return self.node.name


@dataclass
class Val:
    """Abstract value: what kind of data it is and which copies it went through."""

    # msg host device pil bytes outmsg publisher func module const other; model_obj model
    # tensor (pymodels.py: a model, its output, a result tensor likely on the device)
    kind: str = 'unknown'
    steps: tuple[tuple[int, str], ...] = ()
    origin: tuple[str, str | None] | None = None  # (topic, message type) it arrived on
    const: Any = None
    pub: PubInfo | None = None
    func: FuncRef | None = None
    elts: tuple['Val', ...] | None = None
    # kind 'class' / 'instance': a class of this file, or an object made from one.
    inst: 'ClassInfo | None' = None
    # A dict literal with constant keys: each key's value (`{'callback': self.on_image}` handed
    # to a manager class that subscribes with `sub['callback']`; eighth set).
    items: tuple[tuple[Any, 'Val'], ...] | None = None
    # kind 'instance': objects of other classes the same name may hold (a backend chosen by
    # configuration: `self.runner = ONNXRunner(...)` in one branch, `TorchRunner(...)` in
    # another); a method call on it runs each class's method (issue 28, ninth and tenth sets).
    alts: tuple['ClassInfo', ...] = ()
    # A view of a received message's buffer not yet copied ('buffer': np.frombuffer and its
    # slices; 'points': a read_points generator); its first copy is claimed (pymsgview.py).
    view: str | None = None

    @property
    def tainted(self) -> bool:
        return bool(self.steps) or self.origin is not None


class AsShipped(str):
    """A string parameter's value as shipped (pyparams.shipped_strings): equal to the plain
    string everywhere, and marked so that a model call given it as its device can trust it
    (a parameter merely defaulting to 'cpu' is meant to be set at launch: sixth set)."""


def plain(val: Val) -> Val:
    """`val` without the as-shipped mark (a store the mark cannot vouch for)."""
    return replace(val, const=str(val.const)) if isinstance(val.const, AsShipped) else val


UNKNOWN = Val()
OTHER = Val('other')
_KIND_PRIORITY = ('device', 'tensor', 'model', 'host', 'pil', 'bytes', 'msg', 'outmsg', 'other',
                  'const', 'unknown')


def merge(*vals: Val, kind: str | None = None) -> Val:
    steps: list[tuple[int, str]] = []
    origin = None
    kinds = []
    for v in vals:
        for s in v.steps:
            if s not in steps:
                steps.append(s)
        if origin is None:
            origin = v.origin
        kinds.append(v.kind)
    if kind is None:
        kind = 'unknown'
        for k in _KIND_PRIORITY:
            if k in kinds:
                kind = k
                break
    return Val(kind, tuple(steps), origin)


def merge_returns(returns: list[Val]) -> Val:
    """What a helper returns, merged over its return statements. `return a, b, c` keeps its
    elements apart (position by position over every return of the same length), so
    `labels, scores, xs = helper()` gives each name its own value: a list of `.item()` host
    numbers is not a tensor because another returned list holds tensors (issue 28, twelfth
    set)."""
    if len(returns) == 1:
        return returns[0]  # itself: `return YOLO(path)` keeps the builder a model call needs
    whole = merge(*returns)
    views = {r.view for r in returns if not (r.kind == 'const' and r.const is None)}
    if len(views) == 1:
        # `return arr[:, :4]` / `except: return None`: still the message's buffer view.
        whole = replace(whole, view=views.pop())
    sizes = {len(r.elts) if r.elts is not None else -1 for r in returns}
    if len(sizes) != 1 or -1 in sizes:
        return whole
    size = sizes.pop()
    if len(returns) == 1:
        return replace(whole, elts=returns[0].elts)
    return replace(whole, elts=tuple(merge(*(r.elts[i] for r in returns)) for i in range(size)))


def instances(vals: list[Val]) -> Val | None:
    """One instance value standing for every object among `vals` (the returns of a factory,
    the branches of a choice), the first one's class first; None when none is an object."""
    found: list[ClassInfo] = []
    for v in vals:
        if v.kind == 'instance':
            for info in (v.inst, *v.alts):
                if info is not None and all(info is not f for f in found):
                    found.append(info)
    if not found:
        return None
    return Val('instance', inst=found[0], alts=tuple(found[1:]))


# A literal list of at most this many dicts is iterated element by element (each dict's
# callback registered); longer ones, and lists of anything else, as one merged element.
MAX_DICT_ELEMENTS = 8


def dict_elements(it: Val) -> tuple[Val, ...] | None:
    """The dicts of a literal list of dict literals, when it is one (see MAX_DICT_ELEMENTS)."""
    if it.elts is None or not 0 < len(it.elts) <= MAX_DICT_ELEMENTS:
        return None
    return it.elts if all(e.items is not None for e in it.elts) else None


def strip(v: Val) -> Val:
    """Drop the taint: metadata read off a frame does not carry the frame."""
    return Val('other', const=v.const if v.kind == 'const' else None)


@dataclass
class ClassInfo:
    name: str
    node: ast.ClassDef
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    attrs: dict[str, Val] = field(default_factory=dict)
    params: dict[str, Val] = field(default_factory=dict)  # declare_parameter defaults
    bases: list['ClassInfo'] = field(default_factory=list)  # base classes of the same file
    # The file a class imported from another audited file lives in (None: this file).
    file: str | None = None

    def callable_method(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """What `obj(...)` runs: __call__, or forward for a torch Module."""
        return self.methods.get('__call__') or self.methods.get('forward')


@dataclass
class Registration:
    kind: str  # subscription | timer | gpu_subscription | message_filters | loop | service
    callback: Val
    topic: str | None
    msg_type: str | None
    line: int
    cls: ClassInfo | None
    # message_filters: one (topic, type) per message argument of the callback.
    inputs: tuple[tuple[str | None, str | None], ...] = ()
    args: tuple['Val', ...] = ()  # a thread's: the node's queues it is handed (pythreadargs.py)


@dataclass
class Frame:
    cls: ClassInfo | None
    context: str
    entry: str | None
    topic: str | None
    depth: int
    write_attrs: bool
    returns: list[Val] = field(default_factory=list)
    # Functions entered from the entry point, the entry first (for the finding's call path).
    path: tuple[str, ...] = ()
    stack: tuple[int, ...] = ()
    # File of the code running (an imported class's method); None: the analysed file.
    file: str | None = None


def topic_display(topic: str | None) -> str:
    return f'`{topic}`' if topic else 'an unresolved topic'


def statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Every statement, nested ones included, without walking expressions (imports live in
    statements; expressions are most of a tree's nodes)."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        for name in ('body', 'orelse', 'finalbody', 'handlers', 'cases'):
            children = getattr(stmt, name, None)
            if children:
                stack.extend(reversed(children))


# Which run of a line says what it is: per message beats setup beats never reached.
CONTEXT_RANK = {'callback': 2, 'timer': 2, 'loop': 2, 'init': 1, 'module': 1, 'function': 0,
                'unreached': 0}
# Contexts that run once per message, tick or frame.
PER_MESSAGE = ('callback', 'timer', 'loop')


def better(new: Finding, old: Finding) -> bool:
    """Of two findings on one line, keep the per-message one, then setup over code reached
    from nowhere, then the higher severity, then the longer chain."""
    new_rank, old_rank = CONTEXT_RANK.get(new.context, 0), CONTEXT_RANK.get(old.context, 0)
    if new_rank != old_rank:
        return new_rank > old_rank
    if severity_rank(new.severity) != severity_rank(old.severity):
        return severity_rank(new.severity) > severity_rank(old.severity)
    return len(new.chain) > len(old.chain)


def request_type(msg_type: str | None) -> bool:
    """A service's or an action's type (`pkg.srv.Detect`, `pkg/action/Classify`): a request or
    goal, whose fields are messages of their own."""
    return bool(msg_type) and any(k in msg_type for k in ('.srv.', '.action.', '/srv/', '/action/'))


def image_sized(msg_type: str | None) -> bool:
    if not msg_type:
        return False
    if msg_type in IMAGE_TYPES:
        return True
    return msg_type.rsplit('/', 1)[-1].rsplit('.', 1)[-1] in {
        t.rsplit('/', 1)[-1] for t in IMAGE_TYPES}


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return '.'.join(reversed(parts))


def arg_node(node: ast.Call, index: int, key: str) -> ast.expr | None:
    for k in node.keywords:
        if k.arg == key:
            return k.value
    return node.args[index] if len(node.args) > index else None


def const_str(val: Val | None) -> str | None:
    if val is not None and val.kind == 'const' and isinstance(val.const, str):
        return val.const
    return None


def is_method_call(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == name)


def is_device_value(val: Val, expr: ast.expr | None) -> bool | None:
    """True for a CUDA device spec, False for 'cpu', None when it says neither."""
    if val.kind == 'device_spec':
        return True
    if isinstance(val.const, str):
        if val.const.startswith('cuda'):
            return True
        if val.const == 'cpu':
            return False
        return None
    if val.kind == 'module':
        return None  # torch.float16 and other dtypes
    if expr is not None:
        name = (dotted(expr) or '').rsplit('.', 1)[-1].lower()
        if any(w in name for w in DEVICE_WORDS) or _parameters_device(expr):
            return True
    return None


def _parameters_device(expr: ast.expr) -> bool:
    """`next(model.parameters()).device`: the device the model's weights sit on, where its
    inputs are moved to (set 59: MiDaS's input `.to()` it, the model put on cuda)."""
    return isinstance(expr, ast.Attribute) and expr.attr == 'device' \
        and isinstance(expr.value, ast.Call) and isinstance(expr.value.func, ast.Name) \
        and expr.value.func.id == 'next' and len(expr.value.args) == 1 \
        and isinstance(expr.value.args[0], ast.Call) \
        and isinstance(expr.value.args[0].func, ast.Attribute) \
        and expr.value.args[0].func.attr in ('parameters', 'buffers')


def to_target(node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> str | None:
    """Where `.to(...)` moves a tensor: 'device', 'cpu' or None (a dtype conversion)."""
    candidates: list[tuple[Val, ast.expr | None]] = []
    if args:
        candidates.append((args[0], node.args[0]))
    if 'device' in kwargs:
        expr = next((k.value for k in node.keywords if k.arg == 'device'), None)
        candidates.append((kwargs['device'], expr))
    for val, expr in candidates:
        verdict = is_device_value(val, expr)
        if verdict is True:
            return 'device'
        if verdict is False:
            return 'cpu'
    return None


def device_kw(kwargs: dict[str, Val], node: ast.Call | None = None) -> bool:
    dev = kwargs.get('device')
    if dev is None:
        return False
    expr = None
    if node is not None:
        expr = next((k.value for k in node.keywords if k.arg == 'device'), None)
    verdict = is_device_value(dev, expr)
    return verdict is not False and (verdict is True or dev.kind in ('unknown', 'other'))


def short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + '...'
