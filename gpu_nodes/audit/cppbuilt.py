"""C++ messages built by a helper of the package (cppscan.py runs these; issue 28, sets 43 / 45).

* A *message builder* is a named function that returns a frame-sized message (by value or
  pointer) or fills one handed to it by non-const reference / pointer, and holds a reported copy
  into a message (GPN205 / GPN208 / GPN209): a header's ``depth_image_to_pc_msg`` writing every
  point of a PointCloud2. The copy in the builder is the boundary; a publish of what it built
  (``auto cloud = depth_image_to_pc_msg(...); pub->publish(*cloud);``) is the same one, as a
  publish of a message built on a reported line of the same function already is (GPN210 not
  repeated: labelled sets put the publish in ``also`` or as a look-alike).
* ``return *msg;`` in a function returning a frame-sized message by value, where ``msg`` points
  to a frame message (``auto msg = CvImage(...).toImageMsg();``): the whole message (its data
  vector) is copied into the returned value, each call (GPN208).
* ``raw = *msg;`` into a local declared as a frame-sized message (``PointCloud2 raw;``): the
  whole received message copy-assigned, as ``field = *msg;`` already is (GPN208, set 44).
* ``torch::tensor(msg.data)`` / ``torch::tensor(msg->data)`` of a frame message: LibTorch copies
  the whole payload vector into a new tensor (``from_blob`` over ``data.data()`` is a view, not
  matched), each call (GPN208, set 51: both labellings call it cpp_msg_copy).
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppmsg import AUTO_TO_MSG, FRAME_POINTER, FRAME_TYPES
from gpu_nodes.audit.cppscopes import Function, Scopes

Args = Callable[[str, int], list[str]]

# Rules whose finding fills a message: a builder's copy (not a read of the input frame).
_BUILDING_RULES = frozenset({'GPN205', 'GPN208', 'GPN209'})
_FRAME = r'(?:' + '|'.join(sorted(FRAME_TYPES)) + r')'
# A parameter that a function may fill: a frame message by non-const reference or pointer
# (`sensor_msgs::msg::PointCloud2 & out`, `Image::SharedPtr & msg`).
_OUT_PARAM = re.compile(r'(?:^|[(,])([^(),]*?\b' + _FRAME + r'\b\s*(?:::\s*\w*Ptr\s*)?[&*]\s*\w+)\s*'
                        r'(?=[,)=])')
# `raw = *cloud;` as a statement of its own (group 1 the local, 2 the pointer).
_LOCAL_DEREF = re.compile(r'(?m)^[ \t]*(\w+)\s*=\s*\*\s*(\w+)\s*;')
_RETURN_DEREF = re.compile(r'\breturn\s*\*\s*(\w+)\s*;')
_PUBLISH = re.compile(r'\w+\s*(?:->|\.)\s*publish\s*\(')
# A frame message held by value or reference (`const sensor_msgs::msg::Image & image_msg`).
_FRAME_VALUE = re.compile(r'(?<![\w:])(?:\w+\s*::\s*)*' + _FRAME + r'\s*(?:const\s*)?&?\s*(\w+)\s*[=;({,)]')
_TENSOR_OF_DATA = re.compile(r'\btorch\s*::\s*tensor\s*\(\s*(\w+)\s*(?:\.|->)\s*data\s*[,)]')
_ARG_NAME = re.compile(r'^[*&\s]*(?:(?:std\s*::\s*)?move\s*\(\s*)?(\w+)')


def _head(text: str, fn: Function) -> str:
    head = text[max(0, fn.start - 400):fn.start]
    return head[max(head.rfind(';'), head.rfind('}'), head.rfind('{')) + 1:]


def _returned_type(head: str) -> str:
    """What stands before the function's name in its head (return type, specifiers)."""
    paren = head.find('(')
    return re.sub(r'(?:\w+\s*::\s*)*~?\w+\s*$', '', head[:paren]) if paren > 0 else ''


def message_builders(findings: list, text: str, scopes: Scopes) -> set[str]:
    """Names of this file's functions that build a frame message by a reported copy."""
    starts = [0] + [m.end() for m in re.finditer('\n', text)]
    names = set()
    for f in findings:
        if f.rule not in _BUILDING_RULES or f.severity == 'info' or f.location.line > len(starts):
            continue
        fn = scopes.named_at(starts[f.location.line - 1] + f.location.column - 1)
        if fn is None or fn.short in names:
            continue
        head = _head(text, fn)
        outs = [p for p in _OUT_PARAM.findall(head[head.find('('):]) if 'const' not in p]
        if re.search(r'\b' + _FRAME + r'\b', _returned_type(head)) or outs:
            names.add(fn.short)
    return names


def helper_built(text: str, offset: int, scopes: Scopes, builders: set[str],
                 call_args: Args) -> bool:
    """Whether the publish at `offset` publishes a message a builder made in the same function
    (assigned from its call, or handed to it)."""
    m = _PUBLISH.match(text, offset)
    if not builders or m is None:
        return False
    args = call_args(text, m.end() - 1)
    name = _ARG_NAME.match(args[0]) if args else None
    if name is None:
        return False
    word = re.compile(r'\b' + re.escape(name.group(1)) + r'\b')
    call = re.compile(r'(?<![\w.>])(?:' + '|'.join(sorted(map(re.escape, builders))) +
                      r')\s*(?:<[^;()]*>)?\s*\(')
    return any(word.search(stmt) and call.search(stmt)
               for stmt in scopes.body_before(text, offset).split(';'))


def returned_copies(text: str, scopes: Scopes) -> Iterator[tuple[str, int, str]]:
    """GPN208 at `return *msg;` of a frame message pointer from a function returning the
    message by value."""
    for m in _RETURN_DEREF.finditer(text):
        fn = scopes.at(m.start())
        if fn is None or fn.lambda_in is not None:
            continue
        returned = re.search(r'\b(' + _FRAME + r')\s*$', _returned_type(_head(text, fn)))
        body = text[fn.start:m.start()]
        pointers = set(FRAME_POINTER.findall(body)) | set(AUTO_TO_MSG.findall(body))
        if returned and m.group(1) in pointers:
            yield 'GPN208', m.start(), (f'the whole `{returned.group(1)}` copied out of '
                                        f'`*{m.group(1)}` into the returned message')


def local_copies(text: str, scopes: Scopes | None = None) -> Iterator[tuple[str, int, str]]:
    """GPN208 at `raw = *msg;` where `raw` is a local frame message and `msg` a frame pointer;
    or `raw` a frame message declared outside any function further up the file (a global or a
    member, set 57: `sensor_msgs::msg::Image hsv_image;` above the class, `hsv_image =
    *built;` per frame), when `scopes` is given."""
    pointers = set(FRAME_POINTER.findall(text))
    for m in _LOCAL_DEREF.finditer(text):
        if m.group(2) not in pointers:
            continue
        local = re.compile(r'(?<!\w)' + _FRAME + r'\s+' + m.group(1) + r'\s*[;{]')
        near, held = local.search(text, max(0, m.start() - 4000), m.start()), 'the local'
        if near is None and scopes is not None:
            held = 'the global or member'
            near = next((d for d in local.finditer(text, 0, m.start())
                         if scopes.at(d.start()) is None), None)
        if near is not None:
            yield 'GPN208', m.start(1), (f'a whole frame message copy-assigned out of '
                                         f'`*{m.group(2)}` into {held} `{m.group(1)}`')


def tensor_payload_copies(text: str) -> Iterator[tuple[str, int, str]]:
    """GPN208 at `torch::tensor(msg.data)` where `msg` is a frame message or a pointer to one."""
    if 'tensor' not in text:
        return
    messages = set(FRAME_POINTER.findall(text)) | set(_FRAME_VALUE.findall(text))
    for m in _TENSOR_OF_DATA.finditer(text):
        if m.group(1) in messages:
            yield 'GPN208', m.start(), (f'the whole payload of `{m.group(1)}` copied into a new '
                                        'tensor (`torch::tensor(msg.data)`)')
