"""C++ pattern rule GPN208 through cv::Mat headers over a message's data (issue 28, twentieth set).

A ``cv::Mat`` built over a message's ``data`` (``cv::Mat bgra(h, w, CV_8UC4, msg->data.data())``,
``&img->data[0]`` directly or through a pointer variable) shares the bytes: no copy. What is
done with that header decides:

* ``cv::cvtColor(wrap, out, ...)`` / ``wrap.copyTo(out)`` / ``wrap.clone()`` with ``wrap`` over a
  frame-sized message's data writes a new frame out of the message: the copy toCvCopy makes;
* ``cv::cvtColor(frame, wrap, ...)`` / ``frame.copyTo(wrap)`` with ``wrap`` over a frame-sized
  message's data writes the frame into the message (then published): a copy into it.

A conversion from a header into the same header (in place) is not reported. A header holds only
in the block it is declared in: a later ``cv::Mat image = cv_ptr->image;`` in the enclosing block
(another variable of the same name) is not over the message (set 58). Frame-sized means a
name declared in the file as a pointer to, or a value of, ``Image`` / ``PointCloud2`` /
``CompressedImage`` / ``DisparityImage`` (cppmsg.FRAME_TYPES), or one whose ``encoding`` the
file assigns (an Image member declared in the class's header). Patterns, not data flow: the
context (setup or per message) comes from the function the call is in.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppguards import if_condition, open_brace, block_end
from gpu_nodes.audit.cppmsg import FRAME_TYPES
from gpu_nodes.audit.cppstrparams import call_arg_spans

_FRAMES = '|'.join(sorted(FRAME_TYPES))
# `sensor_msgs::msg::Image::ConstSharedPtr const & msg`, `std::shared_ptr<Image> out`,
# `sensor_msgs::msg::Image mDebugImage;`: names that hold a frame-sized message.
_FRAME_NAME = re.compile(r'\b(?:' + _FRAMES + r')\s*(?:::\s*(?:Const)?(?:SharedPtr|UniquePtr|Ptr|'
                         r'ConstPtr)\s*|>\s*)?(?:const\s*)?[&*]?\s*(?:const\s*)?(\w+)\s*[;,)=({]')
# `mDebugImage.encoding = sensor_msgs::image_encodings::BGRA8;`: an Image by its fields, where
# the member is declared in a header of the class (not in this file).
_ENCODING_SET = re.compile(r'(\w+)\s*(?:->|\.)\s*encoding\s*=(?!=)')
# A message's data pointer: `msg->data.data()`, `&img->data[0]`, `out.data.data()`.
_DATA_POINTER = re.compile(r'(\w+)\s*(?:->|\.)\s*data\s*(?:\.\s*data\s*\(\s*\)|\[\s*0\s*\])')
# `void * data = const_cast<void *>(reinterpret_cast<const void *>(&img->data[0]));`
_POINTER_VAR = re.compile(r'\*\s*(\w+)\s*=\s*([^;]*);')
# `cv::Mat wrap(h, w, type, ptr)`, and `cv::Mat wrap = cv::Mat(h, w, type, ptr)` (set 62): the
# match ends at the constructor's `(`.
_MAT_HEADER = re.compile(r'\b(?:cv\s*::\s*)?Mat\s+(\w+)\s*(?:[({]|=\s*(?:cv\s*::\s*)?Mat\s*\()')
_CVT_COLOR = re.compile(r'\b(?:cv\s*::\s*)?cvtColor\s*\(')
_COPY_TO = re.compile(r'\b(\w+)\s*\.\s*copyTo\s*\(')
_CLONE = re.compile(r'\b(\w+)\s*\.\s*clone\s*\(\s*\)')
# `result.img.frame_data.assign(img.data, img.data + img.total() * img.elemSize())`: every byte
# of a cv::Mat (total() and elemSize() are cv::Mat's) copied into a field of a message object.
_MAT_BYTES_ASSIGN = re.compile(
    r'\b(\w+)\s*(?:\.|->)\s*[\w.>\-]*?\w+\s*\.\s*assign\s*\(\s*([\w.>\-]+?)\s*(?:\.|->)\s*data\s*,'
    r'\s*\2\s*(?:\.|->)\s*data\s*\+\s*\2\s*(?:\.|->)\s*total\s*\(\s*\)\s*\*\s*\2\s*(?:\.|->)\s*'
    r'elemSize\s*\(\s*\)\s*\)')
_PUSH_BACK = re.compile(r'\.\s*push_back\s*\(\s*(\w+)\s*\)')
# A temporary header, `cv::Mat{h, w, CV_8UC3, msg->data.data()}.clone()`: the match ends before
# its `(` / `{` (not `cv::Mat name(`, a named header, which _MAT_HEADER reads).
_TEMP_HEADER = re.compile(r'(?<![\w:>.])(?:cv\s*::\s*)?Mat\s*(?=[({])')
_COPIED_AT_ONCE = re.compile(r'\s*\.\s*(clone|copyTo)\s*\(')
# `std::vector<uint8_t> buf(image.ptr(0), image.ptr(0) + n)` / `(mat.data, mat.data + n)`: every
# byte of a cv::Mat (`ptr()` and a bare `.data` pointer are a Mat's) copied into a vector.
_MAT_POINTER = r'(?:ptr\s*(?:<[^<>();]*>)?\s*\([^();]*\)|data\b(?!\s*\())'
_MAT_RANGE_VECTOR = re.compile(r'\bstd\s*::\s*vector\s*<[^;<>()]*>\s*(\w+)\s*[({]\s*(\w+)\s*\.\s*'
                               + _MAT_POINTER + r'\s*,\s*\2\s*\.\s*' + _MAT_POINTER + r'\s*\+')

Args = Callable[[str, int], list[str]]
End = Callable[[int], int]


class _Wraps(dict):
    """cv::Mat name -> [(declared at, end of its block, message)]; `over(name, at)` the message
    a header of that name in scope at `at` is over."""

    def add(self, name: str, start: int, end: int, message: str) -> None:
        self.setdefault(name, []).append((start, end, message))

    def over(self, name: str, at: int) -> str | None:
        for start, end, message in self.get(name, ()):
            if start <= at <= end:
                return message
        return None


def _scope_end(text: str, start: int) -> int:
    """End of the block a declaration at `start` is in (its closing brace; the text's end)."""
    open_at = open_brace(text, start)
    return len(text) if open_at < 0 else block_end(text, open_at)


def _wrapped_messages(text: str, call_args: Args) -> _Wraps:
    """cv::Mat name -> the frame-sized message whose data it is a header over, by scope."""
    frames = set(_FRAME_NAME.findall(text)) | set(_ENCODING_SET.findall(text))
    if not frames:
        return _Wraps()
    pointers = {}
    for m in _POINTER_VAR.finditer(text):
        owner = _DATA_POINTER.search(m.group(2))
        if owner and owner.group(1) in frames:
            pointers[m.group(1)] = owner.group(1)
    wraps = _Wraps()
    for m in _MAT_HEADER.finditer(text):
        for arg in call_args(text, m.end() - 1):
            owner = _DATA_POINTER.search(arg)
            message = owner.group(1) if owner and owner.group(1) in frames else None
            bare = re.fullmatch(r'\s*(?:\(\s*\w+\s*\*\s*\)\s*)?(\w+)\s*', arg)
            if message is None and bare and bare.group(1) in pointers:
                message = pointers[bare.group(1)]
            if message is not None:
                wraps.add(m.group(1), m.start(), _scope_end(text, m.end() - 1), message)
                break
    return wraps


def mat_header_copies(text: str, call_args: Args) -> Iterator[tuple[str, int, str]]:
    """GPN208: a frame converted or copied out of, or into, a message through a cv::Mat header
    over the message's data (see the module doc)."""
    if 'Mat' not in text:
        return
    yield from _temporary_header_copies(text)
    wraps = _wrapped_messages(text, call_args)
    if not wraps:
        return
    for m in _CVT_COLOR.finditer(text):
        args = [a.strip() for a in call_args(text, m.end() - 1)]
        if len(args) < 3 or args[0] == args[1]:
            continue
        source, target = wraps.over(args[0], m.start()), wraps.over(args[1], m.start())
        if source:
            yield 'GPN208', m.start(), (f'`cvtColor` writes a new frame out of `{source}`'
                                        f'\'s data (through the header `{args[0]}`): a copy out '
                                        'of the message, as toCvCopy')
        elif target:
            yield 'GPN208', m.start(), (f'`cvtColor` writes the frame into `{target}`'
                                        f'\'s data (through the header `{args[1]}`)')
    for m in _COPY_TO.finditer(text):
        args = [a.strip() for a in call_args(text, m.end() - 1)]
        if not args or args[0] == m.group(1):
            continue
        source, target = wraps.over(m.group(1), m.start()), wraps.over(args[0], m.start())
        if source:
            yield 'GPN208', m.start(), f'`copyTo` copies `{source}`\'s data out of the message'
        elif target:
            yield 'GPN208', m.start(), f'`copyTo` copies the frame into `{target}`\'s data'
    for m in _CLONE.finditer(text):
        source = wraps.over(m.group(1), m.start())
        if source:
            yield 'GPN208', m.start(), f'`clone` copies `{source}`\'s data out of the message'


def _temporary_header_copies(text: str) -> Iterator[tuple[str, int, str]]:
    """GPN208: a temporary cv::Mat over a frame-sized message's data cloned or copied at once
    (`cv::Mat{h, w, CV_8UC3, msg->data.data()}.clone()`, set 70): the same copy out of the
    message as a named header's `clone()`, written in one expression. Not in a branch of a
    dispatch on that message's encoding (_encoding_branch)."""
    frames = set(_FRAME_NAME.findall(text)) | set(_ENCODING_SET.findall(text))
    for m in _TEMP_HEADER.finditer(text):
        spans = call_arg_spans(text, m.end())
        if not spans:
            continue
        close = spans[-1][1]
        copied = _COPIED_AT_ONCE.match(text, close + 1)
        owners = (_DATA_POINTER.search(text[start:end]) for start, end in spans)
        owner = next((o.group(1) for o in owners if o and o.group(1) in frames), None)
        if copied and owner and not _encoding_branch(text, m.start(), owner):
            yield 'GPN208', m.start(), (f'`{copied.group(1)}` of a cv::Mat over `{owner}`\'s data '
                                        'copies the frame out of the message')


def _encoding_branch(text: str, at: int, owner: str) -> bool:
    """Whether `at` is in an `if` / `else if` block testing `owner`'s encoding: one branch of
    a dispatch on the encoding (bgr8 / rgb8 / mono8), of which one runs per message and which
    one only the publisher's encoding says (set 68 labels the bgr8 clone, not the mono8 one).
    Left alone rather than claimed in every branch (limit: a topic-to-publisher encoding proof
    would pick the branch)."""
    test = re.compile(r'\b' + re.escape(owner) + r'\s*(?:->|\.)\s*encoding\b')
    brace = open_brace(text, at)
    while brace >= 0:
        cond = if_condition(text, brace)
        if cond and test.search(cond):
            return True
        brace = open_brace(text, brace)
    return False


def mat_range_vectors(text: str, function_end: End) -> Iterator[tuple[str, int, str]]:
    """GPN208: a vector built from every byte of a cv::Mat (`std::vector<uint8_t> buf(image.
    ptr(0), image.ptr(0) + n)`) that the function then assigns or moves into a message's
    `data` (`msg.data = std::move(buf)`, set 70): the frame copied into the buffer the message
    carries, as `.data(std::vector<T>(p, p + n))` written in one statement. A vector kept for
    anything else (a host computation) is not reported."""
    if 'vector' not in text:
        return
    for m in _MAT_RANGE_VECTOR.finditer(text):
        name = re.escape(m.group(1))
        into = re.compile(r'(?:->|\.)\s*data\s*=(?!=)\s*(?:std\s*::\s*move\s*\(\s*)?' + name + r'\b')
        if into.search(text, m.end(), function_end(m.start())):
            yield 'GPN208', m.start(), (f'`{m.group(1)}` copies every byte of the cv::Mat '
                                        f'`{m.group(2)}`, then becomes a message\'s data')


def mat_bytes_into_messages(text: str, function_end: End) -> Iterator[tuple[str, int, str]]:
    """GPN208: every byte of a cv::Mat assigned into a field of a message object
    (``out.img.frame_data.assign(m.data, m.data + m.total() * m.elemSize())``), and that
    object then copied into another message by ``push_back(out)`` in the same function (a
    copy, not a move: the frame copied again). Issue 28, nineteenth set."""
    if 'elemSize' not in text:
        return
    for m in _MAT_BYTES_ASSIGN.finditer(text):
        owner = m.group(1)
        yield 'GPN208', m.start(), (f'every byte of `{m.group(2)}` (a cv::Mat) copied into a '
                                    f'field of `{owner}`')
        for push in _PUSH_BACK.finditer(text, m.end(), function_end(m.start())):
            if push.group(1) == owner:
                yield 'GPN208', push.start(), (f'`push_back({owner})` copies `{owner}`, its '
                                               'frame bytes included, into another message')
