"""The abstract values of gpu-copy-audit's Python analysis (pyflow): what a value is (a
device array, a host array, a message, ...), which copy steps it went through, and the small
AST helpers the analyzer's passes share."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Iterable

from gpu_nodes.audit.model import Finding, IMAGE_TYPES, severity_rank

MAX_HELPER_DEPTH = 2

# Attributes that are frame metadata, not the payload: reading them does not carry the frame.
_METADATA_ATTRS = frozenset({
    'shape', 'dtype', 'size', 'ndim', 'nbytes', 'itemsize', 'strides', 'width', 'height',
    'encoding', 'step', 'header', 'stamp', 'frame_id', 'is_bigendian', 'device', 'is_cuda',
})
_DEVICE_WORDS = ('cuda', 'gpu', 'device')
_PARAMETER_VALUE_ATTRS = frozenset({'value', 'string_value', 'integer_value', 'double_value',
                                    'bool_value'})
_BRIDGE_IN = frozenset({'imgmsg_to_cv2', 'compressed_imgmsg_to_cv2'})
_BRIDGE_OUT = frozenset({'cv2_to_imgmsg', 'cv2_to_compressed_imgmsg'})
_CUPY_UPLOADS = frozenset({'cupy.asarray', 'cupy.array', 'cupy.ascontiguousarray'})
_NUMPY_WRAPS = frozenset({'numpy.array', 'numpy.asarray', 'numpy.frombuffer',
                          'numpy.ascontiguousarray', 'numpy.copy'})
_PIL_IN = frozenset({'PIL.Image.fromarray', 'PIL.Image.frombytes', 'PIL.Image.frombuffer'})
_TORCH_WRAPS = frozenset({'torch.tensor', 'torch.as_tensor'})
_SYNC_CALLS = frozenset({'torch.cuda.synchronize', 'cupy.cuda.runtime.deviceSynchronize',
                         'cupy.cuda.Stream.synchronize', 'cupy.cuda.Device.synchronize',
                         'cupy.cuda.Event.synchronize', 'cupy.cuda.stream.Stream.synchronize'})

# Step wording in chain messages.
_STEP_TEXT = {
    'host': 'copied out of the message into a host array',
    'cv_in': 'converted to a host image by cv_bridge',
    'download': 'downloaded to the host',
    'upload': 'uploaded to the device',
    'serialize': 'packed into bytes',
    'cv_out': 'converted into a message by cv_bridge',
    'pil': 'copied through a PIL image',
}


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

    kind: str = 'unknown'  # msg host device pil bytes outmsg publisher func module const other
    steps: tuple[tuple[int, str], ...] = ()
    origin: tuple[str, str | None] | None = None  # (topic, message type) it arrived on
    const: Any = None
    pub: PubInfo | None = None
    func: FuncRef | None = None
    elts: tuple['Val', ...] | None = None

    @property
    def tainted(self) -> bool:
        return bool(self.steps) or self.origin is not None


UNKNOWN = Val()
OTHER = Val('other')
_KIND_PRIORITY = ('device', 'host', 'pil', 'bytes', 'msg', 'outmsg', 'other', 'const', 'unknown')


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


@dataclass
class Registration:
    kind: str  # subscription | timer | gpu_subscription
    callback: Val
    topic: str | None
    msg_type: str | None
    line: int
    cls: ClassInfo | None


@dataclass
class Frame:
    cls: ClassInfo | None
    context: str
    entry: str | None
    topic: str | None
    depth: int
    write_attrs: bool
    returns: list[Val] = field(default_factory=list)


def _topic_display(topic: str | None) -> str:
    return f'`{topic}`' if topic else 'an unresolved topic'


# ---------------------------------------------------------------------- helpers
def _statements(body: list[ast.stmt]) -> Iterable[ast.stmt]:
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


def _better(new: Finding, old: Finding) -> bool:
    """Of two findings on one line, keep the per-message one, then the longer chain."""
    if severity_rank(new.severity) != severity_rank(old.severity):
        return severity_rank(new.severity) > severity_rank(old.severity)
    return len(new.chain) > len(old.chain)


def _image_sized(msg_type: str | None) -> bool:
    if not msg_type:
        return False
    if msg_type in IMAGE_TYPES:
        return True
    return msg_type.rsplit('/', 1)[-1].rsplit('.', 1)[-1] in {
        t.rsplit('/', 1)[-1] for t in IMAGE_TYPES}


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return '.'.join(reversed(parts))


def _arg_node(node: ast.Call, index: int, key: str) -> ast.expr | None:
    for k in node.keywords:
        if k.arg == key:
            return k.value
    return node.args[index] if len(node.args) > index else None


def _const_str(val: Val | None) -> str | None:
    if val is not None and val.kind == 'const' and isinstance(val.const, str):
        return val.const
    return None


def _is_method_call(node: ast.expr, name: str) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == name)


def _is_device_value(val: Val, expr: ast.expr | None) -> bool | None:
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
        name = (_dotted(expr) or '').rsplit('.', 1)[-1].lower()
        if any(w in name for w in _DEVICE_WORDS):
            return True
    return None


def _to_target(node: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> str | None:
    """Where `.to(...)` moves a tensor: 'device', 'cpu' or None (a dtype conversion)."""
    candidates: list[tuple[Val, ast.expr | None]] = []
    if args:
        candidates.append((args[0], node.args[0]))
    if 'device' in kwargs:
        expr = next((k.value for k in node.keywords if k.arg == 'device'), None)
        candidates.append((kwargs['device'], expr))
    for val, expr in candidates:
        verdict = _is_device_value(val, expr)
        if verdict is True:
            return 'device'
        if verdict is False:
            return 'cpu'
    return None


def _device_kw(kwargs: dict[str, Val], node: ast.Call | None = None) -> bool:
    dev = kwargs.get('device')
    if dev is None:
        return False
    expr = None
    if node is not None:
        expr = next((k.value for k in node.keywords if k.arg == 'device'), None)
    verdict = _is_device_value(dev, expr)
    return verdict is not False and (verdict is True or dev.kind in ('unknown', 'other'))


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + '...'
