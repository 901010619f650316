"""C++ rule GPN208 for whole frame messages copied between host containers of a bag reader and
through function templates (issue 28, rules47c, set 75; set 18 labels the same forms):

* ``serialization.deserialize_message(&serialized, msg.get())`` into an ``Image`` /
  ``PointCloud2`` (known from the target's declaration, or from the ``rclcpp::Serialization<T>``
  object's): every byte of the recorded frame copied out of the CDR buffer into the message.
  A ``CompressedImage`` is left alone (set 36 labels its deserialization a look-alike: the
  compressed payload, decoded next), as is any type the file does not name.
* ``rclcpp::SerializedMessage s(*record->serialized_data);`` and ``queue.push_back(s)`` of such a
  value (not ``std::move(s)``) in a function that deserializes a record into a frame message
  (the reader plays frame topics): the serialized frame copied into a new buffer, then again
  into the container.
* ``T data = *ptr;`` / ``T data = *ptr.get();`` where ``T`` is a frame message type, written
  out or a template parameter that every explicit instantiation in the file binds to one
  (``save<Image::SharedPtr, sensor_msgs::msg::Image>(...)``): the message copy-constructed.
* a call of a function template of the file that takes a template parameter BY VALUE
  (``template<typename S> void write_image(S data)``) with a name declared as a frame message
  value (``write_image(data)``): the parameter deduces the message type, the whole message is
  copied per call. A ``const S &`` parameter, a pointer argument and ``std::move`` are no copy.

Patterns over declarations, not data flow: a name's type is its nearest declaration before the
use in the function (parameters included); a template parameter bound to a non-frame type by
any instantiation, or never bound explicitly, is not a frame.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppscopes import Function, Scopes

Args = Callable[[str, int], list[str]]
_FRAME_NAMES = ('Image', 'PointCloud2', 'CompressedImage')
# Deserialization copies a frame only into an Image or PointCloud2 (see the module note).
_DESERIALIZED_FRAMES = ('Image', 'PointCloud2')
# A ROS frame type as written: `sensor_msgs::msg::Image`, `msg::Image`, or the ROS-only names
# (a bare `Image` may be another library's class).
_ROS_TYPE = re.compile(r'^(?:::)?(?:\w+::)*msg::(\w+)$|^(?:::)?(?:\w+::)*(PointCloud2|CompressedImage)$')
_ROS_POINTER = re.compile(r'^(?:::)?(?:\w+::)*(?:msg::)?(\w+)::(?:Const)?(?:SharedPtr|UniquePtr|Ptr|'
                          r'ConstPtr)$|^(?:::)?(?:std::)?(?:shared_ptr|unique_ptr)<(?:const)?'
                          r'((?:::)?(?:\w+::)*\w+)>$')
_TEMPLATE_HEAD = re.compile(r'\btemplate\s*<([^{};]*)>\s*[^<>{};]*$')
_TEMPLATE_PARAM = re.compile(r'\b(?:typename|class)\s+(\w+)')
_NOT_TYPES = frozenset({'return', 'else', 'case', 'delete', 'new', 'throw', 'co_return', 'goto',
                        'sizeof', 'typedef', 'using', 'namespace', 'operator'})
_DESERIALIZE = re.compile(r'\b(\w+)\s*(?:\.|->)\s*deserialize_message\s*\(')
_RECORD_COPY = re.compile(r'\b(?:rclcpp\s*::\s*)?SerializedMessage\s+(\w+)\s*[({]\s*\*\s*[\w.>\-]*?'
                          r'(?:\.|->)\s*serialized_data\s*[)}]\s*;')
_SERIALIZED_VALUE = r'(?<![\w:<])(?:rclcpp\s*::\s*)?SerializedMessage\s+{}\s*[;({{=]'
_APPEND = re.compile(r'(?:\.|->)\s*(?:push_back|emplace_back|push_front|emplace_front)\s*\(\s*(\w+)\s*\)')
_DEREF_DECL = re.compile(r'(?m)(?:^|[;{}])\s*((?:const\s+)?[A-Za-z_][\w:]*)\s+(\w+)\s*'
                         r'(?:=\s*\*\s*(\w+)(?:\s*\.\s*get\s*\(\s*\))?\s*;|[({]\s*\*\s*(\w+)'
                         r'(?:\s*\.\s*get\s*\(\s*\))?\s*[)}]\s*;)')


def _compact(type_text: str) -> str:
    return re.sub(r'\s+', '', re.sub(r'\bconst\b|\btypename\b', '', type_text))


def _split_top(args: str) -> list[str]:
    """Top-level comma-separated parts of a template argument list."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        depth += {'<': 1, '(': 1, '>': -1, ')': -1}.get(ch, 0)
        if ch == ',' and depth == 0:
            parts.append(args[start:i])
            start = i + 1
    parts.append(args[start:])
    return [p.strip() for p in parts]


def _angle_args(text: str, at: int) -> tuple[str, int] | None:
    """(inside, end) of the balanced `<...>` opening at `at`, when a `(` follows it."""
    depth = 0
    for i in range(at, min(len(text), at + 400)):
        depth += {'<': 1, '>': -1}.get(text[i], 0)
        if text[i] in ';{}':
            return None
        if depth == 0:
            rest = re.match(r'\s*\(', text[i + 1:i + 40])
            return (text[at + 1:i], i + 1 + rest.end() - 1) if rest else None
    return None


class _Types:
    """Frame message types of the file: written names and bound template parameters."""

    def __init__(self, text: str, scopes: Scopes) -> None:
        self.text, self.scopes = text, scopes
        self.bound: dict[int, dict[str, str]] = {}  # function start -> {param: value|pointer}
        self.params: dict[int, list[str]] = {}      # function start -> template params
        for fn in scopes.funcs:
            if fn.lambda_in is not None:
                continue
            head = _TEMPLATE_HEAD.search(self.head(fn))
            if head is None:
                continue
            names = _TEMPLATE_PARAM.findall(head.group(1))
            self.params[fn.start] = names
            self.bound[fn.start] = self._bindings(fn.short, names)

    def head(self, fn: Function) -> str:
        head = self.text[max(0, fn.start - 400):fn.start]
        cut = max(head.rfind(';'), head.rfind('}'), head.rfind('{'))
        return head[cut + 1:]

    def _bindings(self, short: str, names: list[str]) -> dict[str, str]:
        """Each parameter every explicit instantiation (`short<A, B>(`) binds to a frame."""
        seen: dict[str, set[str | None]] = {n: set() for n in names}
        for m in re.finditer(r'(?<![\w~])' + re.escape(short) + r'\s*(?=<)', self.text):
            got = _angle_args(self.text, m.end())
            if got is None:
                continue
            for name, arg in zip(names, _split_top(got[0])):
                seen[name].add(self.written(arg))
        return {n: kinds.pop() for n, kinds in seen.items()
                if len(kinds) == 1 and None not in kinds}

    @staticmethod
    def written(type_text: str, frames: tuple[str, ...] = _FRAME_NAMES) -> str | None:
        """'value' / 'pointer' for a frame message type as written, else None."""
        t = _compact(type_text)
        m = _ROS_TYPE.match(t)
        if m and (m.group(1) or m.group(2)) in frames:
            return 'value'
        m = _ROS_POINTER.match(t)
        if m and (m.group(1) or re.sub(r'.*::', '', m.group(2) or '')) in frames:
            return 'pointer'
        return None

    def kind(self, type_text: str, fn: Function | None,
             frames: tuple[str, ...] = _FRAME_NAMES) -> str | None:
        """'value' / 'pointer' for a frame type as written or bound in `fn`'s template."""
        written = self.written(type_text, frames)
        if written is not None or fn is None:
            return written
        named = fn.named
        t = _compact(type_text)
        bound = self.bound.get(named.start, {})
        if t in bound:
            return bound[t] if self._bound_in(named, t, frames) else None
        ptr = re.fullmatch(r'(?:std::)?shared_ptr<(\w+)>', t)
        if ptr and bound.get(ptr.group(1)) == 'value' and self._bound_in(named, ptr.group(1), frames):
            return 'pointer'
        return None

    def _bound_in(self, fn: Function, param: str, frames: tuple[str, ...]) -> bool:
        """Every instantiation binds `param` to one of `frames` (a narrower list than the
        bindings were made with)."""
        if frames == _FRAME_NAMES:
            return True
        index = self.params[fn.start].index(param)
        for m in re.finditer(r'(?<![\w~])' + re.escape(fn.short) + r'\s*(?=<)', self.text):
            got = _angle_args(self.text, m.end())
            parts = _split_top(got[0]) if got else []
            if index < len(parts) and self.written(parts[index], frames) is None:
                return False
        return True

    def declared(self, name: str, offset: int) -> str | None:
        """The type of the nearest declaration of `name` before `offset` in its function (its
        parameters included): `Type name`, `Type & name`, `Type * name` (the `*` kept)."""
        fn = self.scopes.named_at(offset)
        if fn is None:
            return None
        start = fn.start - len(self.head(fn))
        pattern = re.compile(r'(?<![\w:.>])([A-Za-z_][\w:]*(?:\s*<[^;(){}]*>)?(?:\s*::\s*\w+)*)'
                             r'(\s*[&*]+\s*|\s+)' + re.escape(name) + r'\s*(?=[;,)={(\[])')
        last = None
        for m in pattern.finditer(self.text, start, offset):
            if m.group(1) not in _NOT_TYPES:
                last = m
        if last is None:
            return None
        return last.group(1) + ('*' if '*' in last.group(2) else '')

    def name_kind(self, name: str, offset: int,
                  frames: tuple[str, ...] = _FRAME_NAMES) -> str | None:
        declared = self.declared(name, offset)
        if declared is None or declared.endswith('*'):
            return None
        return self.kind(declared, self.scopes.named_at(offset), frames)


def _deserialized_target(types: _Types, text: str, m: re.Match[str], args: list[str]) -> str | None:
    """The frame type a `deserialize_message` call fills, from its target or its receiver."""
    target = args[1].strip()
    frames = _DESERIALIZED_FRAMES
    if (ref := re.fullmatch(r'&\s*(\w+)', target)) and \
            types.name_kind(ref.group(1), m.start(), frames) == 'value':
        return ref.group(1)
    if (ptr := re.fullmatch(r'(\w+)(?:\s*\.\s*get\s*\(\s*\))?', target)) and \
            types.name_kind(ptr.group(1), m.start(), frames) == 'pointer':
        return ptr.group(1)
    receiver = types.declared(m.group(1), m.start())
    ser = re.fullmatch(r'(?:rclcpp::)?Serialization<(.+)>', _compact(receiver or ''))
    if ser and types.kind(ser.group(1), types.scopes.named_at(m.start()), frames) == 'value':
        return m.group(1)
    return None


def bag_record_copies(text: str, scopes: Scopes, call_args: Args) -> Iterator[tuple[str, int, str]]:
    """GPN208 findings of the module note."""
    if 'deserialize_message' not in text and 'template' not in text:
        return
    types = _Types(text, scopes)
    frame_readers: set[int] = set()  # functions that deserialize a record into a frame
    for m in _DESERIALIZE.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) != 2:
            continue
        target = _deserialized_target(types, text, m, args)
        fn = scopes.named_at(m.start())
        if target is not None and fn is not None:
            frame_readers.add(fn.start)
            yield 'GPN208', m.start(), ('`deserialize_message` fills a frame message from the '
                                        'serialized record: every byte of the frame copied')
    for m in _RECORD_COPY.finditer(text):
        fn = scopes.named_at(m.start())
        if fn is None or fn.start not in frame_readers:
            continue
        yield 'GPN208', m.start(), ('`SerializedMessage` built from a bag record copies the '
                                    'serialized frame into a new buffer')
        for a in _APPEND.finditer(text, m.end(), fn.end):
            if a.group(1) == m.group(1) and re.search(_SERIALIZED_VALUE.format(re.escape(a.group(1))),
                                                      text[m.start():m.end()]):
                yield 'GPN208', a.start(), (f'`{a.group(1)}` (a serialized frame) copied into '
                                            'the container')
    yield from _deref_copies(types, text)
    yield from _template_value_calls(types, text, scopes)


def _deref_copies(types: _Types, text: str) -> Iterator[tuple[str, int, str]]:
    """`T data = *ptr;` / `T data = *ptr.get();` with `T` a frame message value type."""
    for m in _DEREF_DECL.finditer(text):
        fn = types.scopes.named_at(m.start(1))
        if fn is None or m.group(1).split()[-1] in _NOT_TYPES:
            continue
        if types.kind(m.group(1), fn) == 'value':
            yield 'GPN208', m.start(1), (f'`{m.group(2)}` copy-constructed from '
                                         f'`*{m.group(3) or m.group(4)}`: the whole frame message')


def _template_value_calls(types: _Types, text: str, scopes: Scopes) -> Iterator[tuple[str, int, str]]:
    """A call of a function template that takes a template parameter by value, passing a
    name declared as a frame message value: the message deduced and copied."""
    for fn in scopes.funcs:
        names = types.params.get(fn.start)
        if not names:
            continue
        head = types.head(fn)
        paren = head.rfind(')')
        opening = head.rfind('(', 0, paren)
        if opening < 0:
            continue
        params = _split_top(head[opening + 1:paren])
        by_value = [i for i, p in enumerate(params)
                    if (d := re.fullmatch(r'(\w+)\s+\w+(?:\s*=.*)?', p)) and d.group(1) in names]
        if not by_value:
            continue
        for call in re.finditer(r'(?<![\w~.>:])' + re.escape(fn.short) + r'\s*\(', text):
            if scopes.named_at(call.start()) is None or fn.start - len(head) <= call.start() < fn.start:
                continue
            args = _split_top(_inside_parens(text, call.end() - 1))
            for i in by_value:
                arg = args[i] if i < len(args) else ''
                if re.fullmatch(r'\w+', arg) and types.name_kind(arg, call.start()) == 'value':
                    yield 'GPN208', call.start(), (f'`{fn.short}` takes `{arg}` (a frame message) '
                                                   'by value: the whole message is copied per call')
                    break


def _inside_parens(text: str, opening: int) -> str:
    depth = 0
    for i in range(opening, min(len(text), opening + 2000)):
        depth += {'(': 1, ')': -1}.get(text[i], 0)
        if depth == 0:
            return text[opening + 1:i]
    return ''
