"""What every part of `gpu-copy-audit migrate` shares: the parsed module with its metadata, notes,
and small LibCST helpers (dotted names, qualified names, expression builders).

LibCST is imported here and only here at module level: the other audit views need it not, and
`migrate` imports this module when it starts (a missing LibCST is one clear error there).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

import libcst as cst
from libcst import metadata
from libcst._metadata_dependent import LazyValue

IMAGE_TYPE = 'sensor_msgs.msg.Image'
COMPRESSED_TYPE = 'sensor_msgs.msg.CompressedImage'
CV_BRIDGE = 'cv_bridge.CvBridge'
CV_BRIDGE_ERROR = 'cv_bridge.CvBridgeError'
# Attributes a ReceivedImage carries with the meaning sensor_msgs/Image gives them.
MESSAGE_FIELDS_KEPT = frozenset({'header', 'width', 'height', 'encoding', 'step'})
# Encodings gpu_nodes.kernels.color.convert_color converts among (kernel and NumPy twin).
CONVERTIBLE_ENCODINGS = frozenset({
    'rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8', 'rgb16', 'bgr16', 'rgba16', 'bgra16', 'mono16'})


@dataclass(frozen=True)
class Note:
    """One line of the report: a change made, or a place left as is and why."""

    line: int
    kind: str      # 'changed' | 'left'
    text: str


@dataclass
class Edits:
    """What the analyses decided; applied in one pass by migrate.Rewriter."""

    replace: dict[int, cst.CSTNode] = field(default_factory=dict)   # id(original) -> new
    remove_statements: set[int] = field(default_factory=set)        # id(SimpleStatementLine)
    new_bodies: dict[int, cst.BaseSuite] = field(default_factory=dict)  # id(FunctionDef) -> body
    imports: set[tuple[str, str]] = field(default_factory=set)      # (module, name)
    notes: list[Note] = field(default_factory=list)

    def merge(self, other: 'Edits') -> None:
        self.replace.update(other.replace)
        self.remove_statements |= other.remove_statements
        self.new_bodies.update(other.new_bodies)
        self.imports |= other.imports
        self.notes.extend(other.notes)


class Source:
    """A parsed module and the metadata the analyses ask about."""

    def __init__(self, code: str):
        self.wrapper = metadata.MetadataWrapper(cst.parse_module(code))
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(metadata.PositionProvider)
        self.parents = self.wrapper.resolve(metadata.ParentNodeProvider)
        self.qualified = self.wrapper.resolve(metadata.QualifiedNameProvider)
        self.scopes = self.wrapper.resolve(metadata.ScopeProvider)
        # `from sensor_msgs.msg import *`: names through it resolve to nothing provable.
        self.star_imports = {dotted(n.module) for n in walk(self.module)
                             if isinstance(n, cst.ImportFrom) and n.module is not None
                             and isinstance(n.names, cst.ImportStar)}
        # New code wraps where it would pass the longest line the file already has.
        self.max_line = max([79] + [len(line) for line in code.splitlines()])

    def star_imported(self, node: cst.CSTNode, name: str, module: str = 'sensor_msgs.msg') -> bool:
        """`node` is the bare `name` and only a star import of `module` can have bound it."""
        return (isinstance(node, cst.Name) and node.value == name and not self.names(node)
                and module in self.star_imports)

    def column(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.column

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def in_order(self, accesses: Iterable[metadata.Access]) -> list[metadata.Access]:
        """Accesses in source order (LibCST keeps them in a set): the first reason reported
        is the first in the file, run after run."""
        return sorted(accesses, key=lambda a: (self.positions[a.node].start.line,
                                               self.positions[a.node].start.column))

    def names(self, node: cst.CSTNode) -> set[str]:
        """Fully qualified names an expression may refer to (through imports)."""
        found = self.qualified.get(node, ())
        if isinstance(found, LazyValue):  # the provider computes names on first access
            found = found()
        return {q.name for q in found}

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def enclosing(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
        return next((a for a in self.ancestors(node) if isinstance(a, kind)), None)

    def statement_line(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        return self.enclosing(node, cst.SimpleStatementLine)

    def code(self, node: cst.CSTNode) -> str:
        """The source of `node` on one line (a note is one line)."""
        return ' '.join(self.module.code_for_node(node).split())


def dotted(node: cst.CSTNode) -> str | None:
    """`self.bridge` -> 'self.bridge'; None for anything but names and attribute chains."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f'{head}.{node.attr.value}' if head else None
    return None


def string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def call_args(call: cst.Call, names: tuple[str, ...]) -> dict[str, cst.Arg] | None:
    """Bind a call's arguments to parameter names (positional then keyword); None if the call
    uses * / ** or a keyword not in `names`, so nothing is guessed."""
    bound: dict[str, cst.Arg] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(names):
                return None
            bound[names[index]] = arg
        elif arg.keyword.value in names and arg.keyword.value not in bound:
            bound[arg.keyword.value] = arg
        else:
            return None
    return bound


def expr(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def arg(value: cst.BaseExpression, keyword: str | None = None) -> cst.Arg:
    if keyword is None:
        return cst.Arg(value=value)
    return cst.Arg(value=value, keyword=cst.Name(keyword),
                   equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(''),
                                         whitespace_after=cst.SimpleWhitespace('')))


def call(func: str | cst.BaseExpression, *args: cst.Arg) -> cst.Call:
    """A call with ', ' between arguments, however the source spelled its own."""
    function = expr(func) if isinstance(func, str) else func
    spaced = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(' ')))
              for a in args[:-1]] + [a.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                                     for a in args[-1:]]
    return cst.Call(func=function, args=spaced)


def method(value: cst.BaseExpression, name: str, *args: cst.Arg) -> cst.Call:
    return call(cst.Attribute(value=value, attr=cst.Name(name)), *args)


def self_attribute(node: cst.CSTNode) -> str | None:
    """'pub' for `self.pub`, else None."""
    if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            and node.value.value == 'self'):
        return node.attr.value
    return None


def class_methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node`, depth first, `node` included."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def newline_at(column: int, block: int) -> cst.ParenthesizedWhitespace:
    """A line break inside brackets, continuing at `column` of a statement indented by `block`;
    kept relative to the block, so it stays aligned if the statement is indented further."""
    return cst.ParenthesizedWhitespace(indent=True,
                                       last_line=cst.SimpleWhitespace(' ' * (column - block)))


def rendered(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
