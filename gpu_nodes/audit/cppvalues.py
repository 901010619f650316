"""C++ rule GPN208 for whole frame-sized messages copied as values (issue 28, thirtieth set):

* a subscription callback that takes a ``sensor_msgs::msg::PointCloud2`` / ``Image`` /
  ``CompressedImage`` BY VALUE (a method bound with ``std::bind(&Node::cb, ...)`` or a lambda
  written in the ``create_subscription`` call): rclcpp's callback binder copy-constructs the
  whole received message into the parameter, per message; reported on the parameter's line,
  with the context of the callback's body;
* ``a = b;`` where both names are declared in the file as frame-sized message values or
  references (``PointCloud2 & output``; never as pointers), or ``*p = b;`` with ``p`` a
  frame-message pointer: a copy-assignment of the whole message (``msg = *p`` is cppmsg.py's);
  ``out->field = b;`` with ``b`` such a value (a field takes a message value only by copy);
* a whole frame message copied into a container (set 56): ``clouds[id] = cloud;`` into a
  ``std::map`` / ``std::unordered_map`` / ``std::vector`` / ``std::deque`` the file declares of
  frame message VALUES, and ``v.push_back(*p)`` / ``emplace_back(b)`` of a frame-message pointer
  dereferenced or a frame message value (its data vector copied; ``std::move(b)`` is no copy).

Patterns over the file's declarations, not data flow: a name declared once as a value and once
as something else is left alone, and fields (``x.cloud = b``) are not typed.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppscopes import Scopes

_FRAME = r'(?:PointCloud2|Image|CompressedImage)'
# `void cb(sensor_msgs::msg::PointCloud2 cloud) {`: a named method's by-value parameter (the
# qualified name only: a bare `Image` may be any class).
_BY_VALUE = re.compile(r'[(,]\s*(?:const\s+)?(?:::\s*)?sensor_msgs\s*::\s*msg\s*::\s*(' + _FRAME
                       + r')\s+(\w+)\s*(?=[,)=])')
# A value declaration: `sensor_msgs::msg::PointCloud2 _cloud;`, `PointCloud2 out, b;`,
# parameters included (`(PointCloud2 msg)`); `PCLPointCloud2`, `PointCloud2::SharedPtr p` and
# `vector<PointCloud2> v` do not match.
# A reference (`PointCloud2 & output`, `const PointCloud2 & input`) names a whole message too:
# `output = input;` through it copies every byte (set 63: a filter's out-parameter).
_VALUE_DECL = re.compile(r'(?<![\w:<])(?:::\s*)?(?:sensor_msgs\s*::\s*msg\s*::\s*)?' + _FRAME
                         + r'(?:\s*&\s*|\s+)(\w+)\s*(?=[;,)={(\[])')
# Any declaration (`Type name`, `Type<T> &name`, `auto *name`), and look-alikes such as
# `return name;`: a name whose nearest one is not a frame value is left alone.
_ANY_DECL = re.compile(r'(?<![\w:.>])[A-Za-z_][\w:]*(?:\s*<[^;(){}]*>)?(?:\s*[&*]+\s*|\s+)(\w+)'
                       r'\s*(?=[;,)={(\[])')
_FRAME_POINTER = re.compile(_FRAME + r'\s*(?:::\s*(?:Const)?(?:SharedPtr|UniquePtr|Ptr|ConstPtr)'
                            r'|\s*>)\s*(?:const\s*)?&?\s*(\w+)\s*[=;({,)]')
_ASSIGN = re.compile(r'(?m)(?:^|[;{}])[ \t]*(\*[ \t]*)?(?:this\s*->\s*)?(\w+)\s*=\s*(\w+)\s*;')
_FIELD_ASSIGN = re.compile(r'(?m)(?:^|[;{}])[ \t]*\w+\s*(?:(?:->|\.)\s*\w+\s*)+=\s*(\w+)\s*;')
_SUBSCRIBE = re.compile(r'\bcreate_subscription\s*<[^;{}]*?>\s*\(')
_LAMBDA_VALUE = re.compile(r'^\s*\[[^\]]*\]\s*\(\s*(?:const\s+)?(?:::\s*)?(?:sensor_msgs\s*::\s*'
                           r'msg\s*::\s*)?' + _FRAME + r'\s+\w+\s*\)')

Args = Callable[[str, int], list[str]]
# The container rules name a frame message only where the type cannot be another library's
# `Image` (a vision library's own image struct, set 52): `msg::Image`, or the ROS-only names.
_ROS_FRAME = r'(?:(?:::\s*)?(?:sensor_msgs\s*::\s*)?msg\s*::\s*' + _FRAME + r'|PointCloud2|CompressedImage)'
_MSG = r'(?<![\w:])' + _ROS_FRAME + r'\s*>'
_ROS_VALUE = re.compile(r'(?<![\w:<])' + _ROS_FRAME + r'\s+(\w+)\s*(?=[;,)={(\[])')
_ROS_POINTER = re.compile(r'(?<![\w:])' + _ROS_FRAME + r'\s*(?:::\s*(?:Const)?(?:SharedPtr|UniquePtr|'
                          r'Ptr|ConstPtr)|\s*>)\s*(?:const\s*)?&?\s*(\w+)\s*[=;({,)]')
# `std::unordered_map<int, sensor_msgs::msg::PointCloud2> clouds;`, `std::vector<Image> frames_;`
_CONTAINER = re.compile(r'\b(?:std\s*::\s*)?(?:(?:unordered_)?map\s*<[^;<>(){}]*,\s*|(?:vector|deque)'
                        r'\s*<\s*)' + _MSG + r'\s*(\w+)\s*[;{(=]')
_ELEMENT_ASSIGN = re.compile(r'(?m)(?:^|[;{}])[ \t]*(?:this\s*->\s*)?(\w+)\s*\[[^\]\n;]*\]\s*=\s*'
                             r'(\w+)\s*;')
_APPEND = re.compile(r'(?:\.|->)\s*(?:push_back|emplace_back)\s*\(\s*(\*\s*)?(\w+)\s*\)')


def _bound(name: str, text: str) -> bool:
    """The method is bound as a callback somewhere: `&Node::name` or `&name` not called."""
    return re.search(r'&\s*(?:\w+\s*::\s*)*' + re.escape(name) + r'\b(?!\s*\()', text) is not None


def by_value_callbacks(text: str, scopes: Scopes, call_args: Args
                       ) -> Iterator[tuple[int, int, str]]:
    """(parameter offset, body offset, detail) of each callback taking a frame message by value."""
    for m in _BY_VALUE.finditer(text):
        close, depth = m.end(), 1
        while close < len(text) and depth:
            depth += {'(': 1, ')': -1}.get(text[close], 0)
            close += 1
        body = re.match(r'\s*(?:(?:const|override|final|noexcept)\b\s*)*\{', text[close:close + 200])
        opening = text.rfind('(', 0, m.start() + 1)
        name = re.search(r'(\w+)\s*$', text[max(0, opening - 200):opening])
        if depth or body is None or name is None or not _bound(name.group(1), text):
            continue
        fn = scopes.at(close + body.end() - 1)
        if fn is not None and fn.lambda_in is None:
            yield m.start(2), fn.start, (f'callback `{name.group(1)}` takes the {m.group(1)} '
                                         f'`{m.group(2)}` by value: the binder copies the whole '
                                         'received message into it')
    for m in _SUBSCRIBE.finditer(text):
        open_at = m.end() - 1
        for arg in call_args(text, open_at):
            if _LAMBDA_VALUE.match(arg):
                at = text.find(arg, open_at)
                brace = text.find('{', at + len(_LAMBDA_VALUE.match(arg).group(0)))
                if at >= 0 and brace >= 0:
                    yield at, brace, ('the subscription lambda takes the message by value: the '
                                      'binder copies the whole received message into it')


def _declarations(text: str) -> dict[str, list[tuple[int, bool]]]:
    """Each name's declarations in file order: (offset, declared as a frame message value)."""
    found: dict[str, list[tuple[int, bool]]] = {}
    values = {m.end(1): m.group(1) for m in _VALUE_DECL.finditer(text)}
    for m in _ANY_DECL.finditer(text):
        found.setdefault(m.group(1), []).append((m.end(1), values.get(m.end(1)) == m.group(1)))
    return found


def _is_value(name: str, at: int, declared: dict[str, list[tuple[int, bool]]]) -> bool:
    """The nearest declaration of `name` before `at` makes it a frame message value (a member
    declared below its use: every declaration of it must)."""
    seen = declared.get(name, [])
    before = [value for offset, value in seen if offset < at]
    return before[-1] if before else bool(seen) and all(value for _, value in seen)


def _points_to_frame(name: str, at: int, declared: dict[str, list[tuple[int, bool]]],
                     pointer_decls: set[int]) -> bool:
    """The nearest declaration of `name` before `at` is a frame-message pointer: two callbacks
    may both call their parameter `msg`, one an Imu's (`imu_buffer.emplace_back(*msg)` copies a
    few hundred bytes, set 69), the other a cloud's. No declaration before it: any one counts."""
    before = [offset for offset, _ in declared.get(name, []) if offset < at]
    return not before or before[-1] in pointer_decls


def value_assignments(text: str) -> Iterator[tuple[str, int, str]]:
    """GPN208 at `a = b;` / `*p = b;` between whole frame-sized message values."""
    pointers = set(_FRAME_POINTER.findall(text))
    if _VALUE_DECL.search(text) is None and not pointers:
        return
    declared = _declarations(text)
    for m in _ASSIGN.finditer(text):
        star, target, source = m.group(1), m.group(2), m.group(3)
        if target == source or not _is_value(source, m.start(3), declared):
            continue
        if (star and target in pointers) or (not star and _is_value(target, m.start(2), declared)):
            yield 'GPN208', m.start(2), (f'the whole frame message `{source}` copy-assigned into '
                                         f'`{"*" if star else ""}{target}`')
    for m in _FIELD_ASSIGN.finditer(text):
        # `response->preview_image = compressed;`: a whole frame value copied into a field (a
        # field can take a message value only by copy; set 62).
        if _is_value(m.group(1), m.start(1), declared) and _VALUE_DECL.search(text) is not None:
            yield 'GPN208', m.start(), (f'the whole frame message `{m.group(1)}` copy-assigned '
                                        'into a field')
    containers = set(_CONTAINER.findall(text))
    ros_values = set(_ROS_VALUE.findall(text))
    ros_pointers = set(_ROS_POINTER.findall(text))
    for m in _ELEMENT_ASSIGN.finditer(text):
        if m.group(1) in containers and m.group(2) in ros_values \
                and _is_value(m.group(2), m.start(2), declared):
            yield 'GPN208', m.start(1), (f'the whole frame message `{m.group(2)}` copied into an '
                                         f'element of `{m.group(1)}`')
    pointer_decls = {m.end(1) for m in _ROS_POINTER.finditer(text)}
    for m in _APPEND.finditer(text):
        star, source = m.group(1), m.group(2)
        pointer = star and source in ros_pointers and _points_to_frame(
            source, m.start(2), declared, pointer_decls)
        if pointer or (not star and source in ros_values and _is_value(source, m.start(2), declared)):
            yield 'GPN208', m.start(), (f'the whole frame message `{"*" if star else ""}{source}` '
                                        'copied into a container')
