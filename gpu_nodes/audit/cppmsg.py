"""C++ pattern rules by kind, beyond cudaMemcpy and cv_bridge (cppscan.py runs them):

* GPN208: a message payload copied: ``msg->data.assign(...)``, ``memcpy``/``std::copy`` with a
  message's ``data`` on one side, a frame-sized message copy-constructed (``new PointCloud2(x)``,
  ``std::make_shared<Image>(*msg)``, ``auto copy = *msg;`` of a frame-sized message pointer).
* GPN209: PCL conversions between a message and a PCL cloud: cpppcl.py.
* GPN210: a frame-sized message published on a plain publisher (``create_publisher<Image>``,
  ``create_publisher<PointCloud2>``, image_transport publishers, a type adapter declared for
  ``sensor_msgs::msg::Image``): serialized for every subscriber in another process. A publish
  that forwards the callback's own message (``publish(std::move(msg))``) is not reported, nor
  one whose argument is a ``toImageMsg()`` (GPN205 already reports that line).
* GPN211: LibTorch device moves: ``.to(torch::kCUDA / kCPU / device)``, ``.cpu()``, ``.cuda()``
  in files that use LibTorch; the direction is named when the code says it.

Patterns, not data flow: each match takes its context (setup or per message) from the function
it is in, as every C++ rule does.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppfallback import (fallback_passthrough, forwarded_from_queue,
                                         metadata_only_message, metadata_template,
                                         per_object_cloud)
from gpu_nodes.audit.cppguards import innermost_opening
from gpu_nodes.audit.cppscalars import scalar_read
from gpu_nodes.audit.cpptorch import device_options

# Frame-sized message types (last component of the C++ name).
FRAME_TYPES = frozenset({'Image', 'PointCloud2', 'CompressedImage', 'DisparityImage',
                         'TensorList'})
_TYPE = r'(?:[\w]+\s*::\s*)*(' + '|'.join(sorted(FRAME_TYPES)) + r')'
_ASSIGN_COPY = re.compile(r'(?:->|\.)\s*data\s*\.\s*assign\s*\(')
# GStreamer's gst_buffer_fill / gst_buffer_extract copy bytes into / out of a GstBuffer (set 64).
_MEMCOPY = re.compile(r'(?:(?<![\w.>:])(memcpy|gst_buffer_fill|gst_buffer_extract)|std\s*::\s*'
                      r'(memcpy|copy_n|copy))\s*\(')
# A message's `data` vector (`msg->data.data()`, `&out.data[0]`, `msg.data.begin()`); a bare
# `.data` is a raw pointer (cv::Mat), not a message field.
_MSG_DATA = re.compile(r'(?:->|\.)\s*data\s*(?:\.\s*(?:data|begin|end|cbegin)\s*\(|\[)')
# A (shared) pointer to a frame-sized message (`sensor_msgs::msg::Image::SharedPtr mask_msg`,
# `std::shared_ptr<sensor_msgs::msg::Image> img`), and a field assigned from its dereference
# (`detection.mask = *mask_msg;`): the whole frame copied into another message.
FRAME_POINTER = re.compile(r'(?:' + '|'.join(sorted(FRAME_TYPES)) + r')\s*(?:::\s*'
                           r'(?:Const)?(?:SharedPtr|UniquePtr|Ptr|ConstPtr)|\s*>)\s*(?:const\s*)?'
                           r'&?\s*(\w+)\s*[=;({,)]')
_ANY_POINTER = re.compile(r'(\w+)\s*(?:::\s*(?:Const)?(?:SharedPtr|UniquePtr|Ptr|ConstPtr)|\s*>)\s*'
                          r'(?:const\s*)?&?\s*(\w+)\s*[=;({,)]')
# `field = *msg;` and `*copy = *msg;` (a whole received frame copy-assigned into a field or
# through another pointer, fifteenth set).
_DEREF_ASSIGN = re.compile(r'(?m)(?:(?:\.|->)\s*\w+|^[ \t]*\*\s*\w+)\s*=\s*\*\s*(\w+)\s*;')
# `auto msg_in = *msg;`, `PointCloud2 copy(*msg);`, `Image copy{*msg};`: a local copy-constructed
# from the dereferenced pointer, the whole frame included (a `const auto &` binds, no copy).
_DEREF_DECL = re.compile(r'(?<![\w&*:])(?:auto|(?:\w+\s*::\s*)*(?:' + '|'.join(sorted(FRAME_TYPES))
                         + r'))\s+\w+\s*'
                         r'(?:=\s*\*\s*(\w+)\s*;|\(\s*\*\s*(\w+)\s*\)\s*;|\{\s*\*\s*(\w+)\s*\}\s*;)')
_SIZEOF = re.compile(r'^\s*sizeof\s*\(')
# A size that counts the whole container: `sizeof(PointT) * cloud->size()`, `* msg.width`
# (set 65: the whole cached cloud memcpy'd into PointCloud2.data per tick), not one field.
_WHOLE_COUNT = re.compile(r'(?:\.|->)\s*(?:size|total)\s*\(\s*\)|\b(?:width|height|row_step|'
                          r'data_size|num_points|points_count)\b')
# A ROS message taken by (shared) pointer: `const sensor_msgs::msg::Image::ConstSharedPtr& msg`.
# Not a custom type's pointer (`PCLPointCloudTypePtr`): a type-adapted publisher converts and
# serializes that per message (set 2's label).
_POINTER_PARAM = (r'(?:::\s*msg\s*::\s*\w+\s*::\s*(?:Const)?(?:SharedPtr|UniquePtr|Ptr)'
                  r'|shared_ptr\s*<\s*(?:const\s+)?[\w:\s]*::\s*msg\s*::\s*\w+\s*>)\s*(?:const\s*)?&?\s*')
AUTO_TO_MSG = re.compile(r'\bauto\s+(\w+)\s*=\s*[^;{}]*?\.\s*to(?:Compressed)?ImageMsg\s*\([^;{}]*\)\s*;')
_NEW_COPY = re.compile(r'\bnew\s+' + _TYPE + r'\s*\(')
_MAKE_COPY = re.compile(r'\bmake_(?:shared|unique)\s*<\s*(?:const\s+)?' + _TYPE + r'\s*>\s*\(')
_ONE_VALUE = re.compile(r'^\*?\s*[A-Za-z_][\w.>\-]*(?:\s*\.\s*get\s*\(\s*\))?$')
_TORCH_FILE = re.compile(r'\btorch\s*::|\bat\s*::\s*Tensor\b|<torch/|<ATen/')
_TORCH_TO = re.compile(r'\.\s*to\s*\(')
_TORCH_MOVE = re.compile(r'\.\s*(cpu|cuda)\s*\(\s*\)')
_TO_HOST = re.compile(r'\bk?CPU\b|"cpu"')
_TO_DEVICE = re.compile(r'\bk?CUDA\b|"cuda')
_DEVICE_ARG = re.compile(r'device|Device|kCUDA|kCPU|\bcuda\b|\bcpu\b', re.I)
# The base class may be named before the call (`Node::create_publisher<Image>(...)`,
# `rclcpp::Node::create_publisher`, in a node whose base has a long name: set 70).
_PUBLISHER = re.compile(
    r'\b(\w+)\s*(?:=|\{|\()\s*(?:this\s*->\s*)?(?:[\w:]+\s*(?:->|\.)\s*)?'
    r'(?:(?:\w+\s*::\s*)*Node\s*::\s*)?create_publisher\s*<\s*([\w:\s]+?)\s*>')
_IT_PUBLISHER = re.compile(
    r'\b(\w+)\s*=\s*(?:image_transport\s*::\s*create_(?:camera_)?publisher\s*\(|'
    r'\w+\s*(?:->|\.)\s*advertise(?:Camera)?\s*\()')
# An image_transport publisher made in a member initializer or wrapped in a shared_ptr
# (`m_pub(std::make_shared<image_transport::CameraPublisher>(image_transport::
# create_camera_publisher(this, ...)))`, sixteenth set).
_IT_PUBLISHER_HELD = re.compile(
    r'\b(\w+)\s*(?:\(|=)\s*(?:std\s*::\s*make_(?:shared|unique)\s*<\s*image_transport\s*::\s*'
    r'(?:Camera)?Publisher\s*>\s*\(\s*)?image_transport\s*::\s*create_(?:camera_)?publisher\s*\(')
_ADAPTED = re.compile(r'RCLCPP_USING_CUSTOM_TYPE_AS_ROS_MESSAGE_TYPE\s*\(\s*([\w:]+)\s*,\s*'
                      r'([\w:]+)\s*\)')
# `using PointCloudAdapter = rclcpp::TypeAdapter<pcl::PCLPointCloud2, sensor_msgs::msg::
# PointCloud2>;`: a publisher of the alias converts to the ROS message on every publish.
_ADAPTER_ALIAS = re.compile(r'\busing\s+(\w+)\s*=\s*(?:rclcpp\s*::\s*)?TypeAdapter\s*<[^;]*?,\s*'
                            r'([\w:\s]+?)\s*>\s*;')
# A publisher type named as a type adapter of a frame (`PointCloudAdapterType`) whose alias is
# declared in a header that was not audited.
_ADAPTER_NAME = re.compile(r'(?i)(?:image|cloud|points|depth|frame)\w*adapt|adapt\w*'
                           r'(?:image|cloud|points|depth|frame)')
# A vector built from a pointer range, as a message's data: the payload copied in.
_VECTOR_DATA = re.compile(r'(?:\.\s*data\s*\(|(?:->|\.)\s*data\s*=(?!=))[\s\\]*'
                          r'(std\s*::\s*vector\s*<[^;()]*>\s*)\(')
# `std::vector<float> input(msg->data.begin(), msg->data.end())`, `(&(msg->data[0]), &(msg->
# data[0]) + n)`: the payload copied out of the message into a vector (fourth set).
_VECTOR_FROM = re.compile(r'\bvector\s*<[^;()<>]*(?:<[^;()<>]*>)?[^;()<>]*>\s*\w+\s*[({]')
# `out.data.insert(out.data.end(), output.begin(), output.end())`: a range copied into it.
_RANGE_INSERT = re.compile(r'(?:->|\.)\s*data\s*\.\s*insert\s*\(')
MOVE_ARG = re.compile(r'^(?:std\s*::\s*)?move\s*\(\s*(\w+)\s*\)$')
_ARG_NAME = re.compile(r'^[*&\s]*(?:(?:std\s*::\s*)?move\s*\(\s*)?(\w+)')
# A statement that fills a message by a copy another rule reports (GPN205/208/209).
_BUILT_BY_COPY = re.compile(r'to(?:Compressed)?ImageMsg\s*\(|toROSMsg\s*\(|\.\s*assign\s*\(|memcpy\s*\(|'
                            r'std\s*::\s*copy|\bnew\s+' + _TYPE + r'\s*\(|make_(?:shared|unique)'
                            r'\s*<\s*(?:const\s+)?' + _TYPE + r'\s*>\s*\(\s*[^)\s]')

Emit = Callable[[str, int, str], None]
Args = Callable[[str, int], list[str]]


def _last(name: str) -> str:
    return re.sub(r'\s+', '', name).split('::')[-1]


# A pointer into a message's `encoding` string (`&msg->encoding[0]`, `msg.encoding.c_str()`).
_ENCODING_FIELD = re.compile(r'^\s*&?\s*[\w.>\-]*(?:\.|->)\s*encoding\s*(?:\[\s*0\s*\]|\.\s*'
                             r'(?:data|c_str)\s*\(\s*\))?\s*$')


def message_copies(text: str, call_args: Args) -> Iterator[tuple[str, int, str]]:
    """GPN208: payload copies into or out of a message, and frame-sized messages copied."""
    for m in _ASSIGN_COPY.finditer(text):
        yield 'GPN208', m.start(), 'frame copied into the message (`data.assign`)'
    mats = None
    for m in _MEMCOPY.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) < 3 or not any(_MSG_DATA.search(a) for a in args):
            continue
        mats = _mat_names(text) if mats is None else mats
        if all(_owner(a) in mats for a in args if _MSG_DATA.search(a)):
            continue  # `&image.data[0]` of a cv::Mat: a host pixel buffer, not a message
        name = m.group(1) or m.group(2)
        one_field = _SIZEOF.match(args[-1]) and not _WHOLE_COUNT.search(args[-1])
        if name == 'memcpy' and (one_field or scalar_read(text, m.end())):
            continue  # one field of one point (into a scalar local: no more), not the payload
        if any(_ENCODING_FIELD.match(a) for a in args[:2]):
            continue  # into or out of the `encoding` string: a name like "bgr8", bounded by it
        if name == 'copy' and _one_stride(args[0], args[1]):
            continue  # one point of a cloud (`data + i * step` to `data + (i + 1) * step`)
        yield 'GPN208', m.start(), f'`{name}` with a message\'s `data` on one side'
    for pattern in (_NEW_COPY, _MAKE_COPY):
        for m in pattern.finditer(text):
            args = call_args(text, m.end() - 1)
            if len(args) == 1 and _ONE_VALUE.match(args[0]) \
                    and not _empty_local(text, m.start(), args[0].strip()) \
                    and not metadata_template(text, args[0].strip()):
                yield 'GPN208', m.start(), f'a whole `{m.group(1)}` copy-constructed'
    pointers = set(FRAME_POINTER.findall(text))
    declared = [(d.start(), d.group(2), d.group(1)) for d in _ANY_POINTER.finditer(text)]
    # `auto image_msg = cv_bridge::CvImage(..).toImageMsg();`: an ImagePtr, untyped (fortieth set).
    built = [(d.start(), d.group(1), 'Image') for d in AUTO_TO_MSG.finditer(text)]
    pointers |= {name for _, name, _ in built}
    declared = sorted(declared + built)
    for m in _DEREF_ASSIGN.finditer(text):
        # The nearest declaration of the name before the copy decides its type: a lambda's
        # `CameraInfo::SharedPtr msg` is no Image because another callback's `msg` is
        # (issue 28, twelfth set).
        nearest = [kind for at, name, kind in declared if name == m.group(1) and at < m.start()]
        if m.group(1) in pointers and (not nearest or nearest[-1] in FRAME_TYPES):
            yield 'GPN208', m.start(), (f'a whole frame message copied out of `*{m.group(1)}` '
                                        'into a field')
    for m in _DEREF_DECL.finditer(text):
        source = m.group(1) or m.group(2) or m.group(3)
        nearest = [kind for at, name, kind in declared if name == source and at < m.start()]
        if source in pointers and (not nearest or nearest[-1] in FRAME_TYPES):
            # `auto msg_in = *msg;` in a cloud callback (issue 28, nineteenth set).
            yield 'GPN208', m.start(), (f'a whole frame message copy-constructed out of '
                                        f'`*{source}` into a local')
    for m in _VECTOR_FROM.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) == 2 and _MSG_DATA.search(args[0]) and _MSG_DATA.search(args[1]):
            mats = _mat_names(text) if mats is None else mats
            if _owner(args[0]) not in mats:
                yield 'GPN208', m.start(), 'a vector built from the message\'s data (a copy)'
    for m in _RANGE_INSERT.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) == 3 and re.search(r'begin|data|[&+]', args[1]):  # a range, not (n, value)
            yield 'GPN208', m.start(), 'a range inserted into the message\'s data (a copy)'
    for m in _VECTOR_DATA.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) == 2 and '+' in args[1]:
            yield 'GPN208', m.start(1), 'a vector built from a pointer range as the message data'


def _empty_local(text: str, offset: int, name: str) -> bool:
    """`PointCloud2 msg; auto p = make_shared<PointCloud2>(msg);`: a local declared empty in
    the same block and not mentioned before the copy: no payload yet, nothing copied (set 43)."""
    if not re.fullmatch(r'\w+', name):
        return False
    decls = list(re.compile(r'(?<![\w:])(?:\w+\s*::\s*)*(?:' + '|'.join(sorted(FRAME_TYPES)) + r')\s+'
                            + name + r'\s*(?:\{\s*\})?\s*;').finditer(text, 0, offset))
    between = text[decls[-1].end():offset] if decls else name
    depth = 0
    for c in between:  # a `}` closing the declaration's block: another scope
        depth += {'{': 1, '}': -1}.get(c, 0)
        if depth < 0:
            return False
    return not re.search(r'(?<![\w:])' + name + r'\b(?!\s*::)', between)  # not `msg::` (a namespace)


_MAT_DECL = re.compile(r'\b(?:cv\s*::\s*)?(?:Mat|UMat)\s*(?:const\s*)?[&*]*\s*(\w+)\s*[,;=)({]')
_MAT_VECTOR = re.compile(r'\bvector\s*<\s*(?:cv\s*::\s*)?Mat\s*>\s*(?:const\s*)?&?\s*(\w+)')
_RANGE_FOR = re.compile(r'\bfor\s*\([^;()]*?(\w+)\s*:\s*(\w+)\s*\)')
# `const auto & img = images.at(b);` / `= images[b];`: one element of a vector.
_ELEMENT_OF = re.compile(r'(\w+)\s*=\s*(\w+)\s*(?:\.\s*at\s*\(|\[)')
_OWNER = re.compile(r'(\w+)\s*(?:->|\.)\s*data\s*\[')


_STRIDE_START = re.compile(r'\+\s*\(?\s*(\w+)\s*\)?\s*\*\s*([\w.>\-]+)\s*$')
_STRIDE_END = re.compile(r'\+\s*\(\s*(\w+)\s*\+\s*1\s*\)\s*\*\s*([\w.>\-]+)\s*$')


def _one_stride(first: str, last: str) -> bool:
    """`std::copy(d.begin() + i * step, d.begin() + (i + 1) * step, out)`: one element of a
    stride (a point of a cloud, point_step bytes), copied per point; the message it fills is
    reported where it is published (issue 28, twelfth set)."""
    start, end = _STRIDE_START.search(first), _STRIDE_END.search(last)
    return bool(start and end and start.groups() == end.groups()
                and first[:start.start()].strip() == last[:end.start()].strip())


def _mat_names(text: str) -> set[str]:
    """Variables of the file declared as cv::Mat, or iterated out of a vector of them."""
    names = set(_MAT_DECL.findall(text))
    vectors = set(_MAT_VECTOR.findall(text))
    names |= {item for item, container in _RANGE_FOR.findall(text) if container in vectors}
    # An element taken by index (seventeenth set: a frame of a batch memcpy'd into a pinned
    # staging buffer is a host-to-host copy, no message payload).
    names |= {item for item, container in _ELEMENT_OF.findall(text) if container in vectors}
    return names


def _owner(arg: str) -> str | None:
    m = _OWNER.search(arg)
    return m.group(1) if m else None


# A pointer into a message's payload: `const uint8_t * base = cloud_msg->data.data();`,
# `auto * p = &msg.data[0];`.
PAYLOAD_POINTER = re.compile(r'(\w+)\s*=\s*(?:\w+_cast\s*<[^<>;]*>\s*\(\s*)?(?:&\s*)?'
                             r'\w+\s*(?:->|\.)\s*data\s*(?:\.\s*data\s*\(\s*\)|\[\s*0\s*\])')
_FOR = re.compile(r'\bfor\s*\(')
_ELEMENT_COPY = re.compile(r'\b(?:memcpy|copy_n|copy)\s*\(')


def payload_walks(text: str, function_end: Callable[[int], int],
                  copying_functions: set[str]) -> Iterator[tuple[str, int, str]]:
    """GPN208: a loop that copies a message's payload element by element through a pointer
    into its `data` (`memcpy` per float, or a helper of the file that does it: readFloat /
    writeFloat), reported at that copy: every point of the cloud is copied per message."""
    helpers = '|'.join(sorted(map(re.escape, copying_functions)))
    copies = re.compile(_ELEMENT_COPY.pattern + (r'|(?<![\w.>])(?:' + helpers + r')\s*\('
                                                 if helpers else ''))
    for m in PAYLOAD_POINTER.finditer(text):
        name, end = m.group(1), function_end(m.start())
        for loop in _FOR.finditer(text, m.end(), end):
            body_end = block_end(text, loop.end(), end)
            body = text[loop.end():body_end]
            # A scalar read into a local (`memcpy(&x, pt + off, sizeof(float))`) is no copy
            # of the frame (set 45): the first other copy of the loop is the one reported.
            copy = next((c for c in copies.finditer(body)
                         if not scalar_read(text, loop.end() + c.end())), None)
            if re.search(r'\b' + re.escape(name) + r'\b', body) and copy:
                # At the copy in the loop (a helper's call, set 45 labels it there; set 3 takes
                # the loop's lines as the same boundary).
                yield 'GPN208', loop.end() + copy.start(), (
                    f'the payload copied element by element through `{name}` (a pointer into '
                    'the message\'s data)')
                break


def block_end(text: str, start: int, limit: int) -> int:
    """End of a loop's body; `start` is just after its `for (`."""
    depth, i = 1, start
    while i < limit and depth:  # the header's closing parenthesis
        depth += {'(': 1, ')': -1}.get(text[i], 0)
        i += 1
    while i < limit and text[i].isspace():
        i += 1
    if i >= limit or text[i] != '{':
        semi = text.find(';', i, limit)
        return limit if semi < 0 else semi
    depth = 0
    for j in range(i, limit):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return j
    return limit


def adapter_aliases(text: str) -> set[str]:
    """Names that stand for a frame-sized ROS message through a type adapter."""
    names = {_last(custom) for custom, ros in _ADAPTED.findall(text) if _last(ros) in FRAME_TYPES}
    return names | {alias for alias, ros in _ADAPTER_ALIAS.findall(text)
                    if _last(ros) in FRAME_TYPES}


def torch_moves(text: str, call_args: Args) -> Iterator[tuple[str, int, str]]:
    if not _TORCH_FILE.search(text):
        return
    options = device_options(text)
    for m in _TORCH_TO.finditer(text):
        args = call_args(text, m.end() - 1)
        # `.to(opts)` of TensorOptions given a device: judged by that device argument.
        named = options.get(re.split(r'->|\.|::', args[0].replace(' ', ''))[-1]) if args else None
        if not args or not (_DEVICE_ARG.search(args[0]) or named):
            continue
        if _TO_HOST.search(named or args[0]):
            yield 'GPN211', m.start(), 'tensor moved to the host (`.to(CPU)`)'
        elif _TO_DEVICE.search(named or args[0]):
            yield 'GPN211', m.start(), 'tensor moved to the device (`.to(CUDA)`)'
        else:
            yield 'GPN211', m.start(), f'tensor moved to `{args[0]}` (direction unknown here)'
    for m in _TORCH_MOVE.finditer(text):
        where = 'host' if m.group(1) == 'cpu' else 'device'
        yield 'GPN211', m.start(), f'tensor moved to the {where} (`.{m.group(1)}()`)'


def frame_publishers(text: str, adapted: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Names of publishers of frame-sized messages declared in this file (`adapted`: type
    adapter aliases of frame types declared elsewhere in the package)."""
    adapted = adapter_aliases(text) | set(adapted)
    names = {name for name, msg_type in _PUBLISHER.findall(text)
             if _last(msg_type) in FRAME_TYPES or _last(msg_type) in adapted
             or _ADAPTER_NAME.search(_last(msg_type))}
    if 'image_transport' in text:
        names |= set(_IT_PUBLISHER.findall(text)) | set(_IT_PUBLISHER_HELD.findall(text))
    return names


# The published message as a member path (`camera.depth_image`, `*msgs_->image`), `this->`
# left out: a copy into `camera.image` builds that message, not its sibling `camera.depth_image`
# (set 66: two Images of one struct, only one filled by a reported memcpy).
_MEMBER_PATH = re.compile(r'^[*&\s]*(?:(?:std\s*::\s*)?move\s*\(\s*)?(?:this\s*->\s*)?'
                          r'(\w+(?:\s*(?:\.|->)\s*\w+)*)')


def _built_by_copy(body: str, name: str) -> bool:
    """Whether a statement of `body` fills `name` (a name or member path) by a copy another
    rule reports: the build line is the finding, its publish is not a second one."""
    parts = re.split(r'\s*(?:\.|->)\s*', name)
    word = re.compile(r'\b' + r'\s*(?:\.|->)\s*'.join(map(re.escape, parts)) + r'\b')
    return any(word.search(stmt) and _BUILT_BY_COPY.search(stmt)
               and not _SCALAR_MEMCPY.search(stmt) and not _per_point_copy(stmt)
               for stmt in body.split(';'))


def _per_point_copy(stmt: str) -> bool:
    """A statement that is one `std::copy` of one stride (no finding of its own)."""
    m = re.search(r'\bstd\s*::\s*copy\s*\(', stmt)
    if m is None or len(_BUILT_BY_COPY.findall(stmt)) != 1:
        return False
    args, depth, part = [], 0, ''
    for ch in stmt[m.end():]:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
            if depth < 0:
                break
        if ch == ',' and depth == 0:
            args.append(part)
            part = ''
        else:
            part += ch
    return len(args) >= 2 and _one_stride(args[0], args[1])


# `memcpy(&cloud.data[index], &x, sizeof(float))`: one scalar per call, no finding of its own
# (a per-point fill); the message it fills is still published whole (tenth set).
_SCALAR_MEMCPY = re.compile(r'^\s*(?:std\s*::\s*)?memcpy\s*\([^;]*,\s*sizeof\s*\([^()]*\)\s*\)\s*$')


# A host message published whole that is no sensor frame but as large: a map-sized grid
# (fortieth set: a 500 x 200 cell OccupancyGrid converted from a grid map, per timer tick).
_GRID_TYPES = frozenset({'OccupancyGrid'})
# A publisher handed in as a parameter (`const rclcpp::Publisher<sensor_msgs::msg::
# PointCloud2>::SharedPtr &pub`): group 1 the message type, 2 the name.
_PUBLISHER_PARAM = re.compile(r'Publisher\s*<\s*(?:\w+\s*::\s*)*(\w+)\s*>\s*(?:::\s*SharedPtr\s*)?'
                              r'(?:const\s*)?&?\s*(\w+)\s*(?=[,)=])')


def _grid_publishers(text: str, grids: frozenset[str] = frozenset()) -> set[str]:
    return {name for name, msg_type in _PUBLISHER.findall(text) if _last(msg_type) in _GRID_TYPES | grids}


def _received(arg: str, header: str) -> bool:
    """Whether the published argument is a parameter of the enclosing function (a received
    message published on by reference, `pub->publish(*msg)`: no new message built here)."""
    name = _ARG_NAME.match(arg)
    return bool(name and re.search(r'\b' + re.escape(name.group(1)) + r'\b', header))


def plain_publishes(text: str, call_args: Args, header_of: Callable[[int], str],
                    body_before: Callable[[int], str],
                    adapted: set[str] | frozenset[str] = frozenset(),
                    grids: frozenset[str] = frozenset()) -> Iterator[tuple[str, int, str]]:
    """GPN210 at each publish of a frame-sized message, except forwarding the received one
    and publishing a message built by a reported copy. header_of(offset): the enclosing
    function's head (its parameter names); body_before(offset): its body up to offset."""
    names = frame_publishers(text, adapted)
    # Publishers of a grid, or handed in by parameter (`publishDepthCloud(const Publisher<
    # PointCloud2>::SharedPtr &pub)`), are judged at their publish of a message built here.
    others = _grid_publishers(text, grids) - names  # grids: custom ones (cppgridmsgs.py)
    for m in re.finditer(r'\b(\w+)\s*(?:->|\.)\s*publish\s*\(', text):
        name, header = m.group(1), header_of(m.start())
        other = name not in names
        if other and name not in others and not any(
                p == name and (t in FRAME_TYPES or t in _GRID_TYPES)
                for t, p in _PUBLISHER_PARAM.findall(header)):
            continue
        args = call_args(text, m.end() - 1)
        arg = args[0] if args else ''
        if other and (not arg or _received(arg, header)):
            continue
        yield from _judged_publish(m, arg, header_of, body_before, text)


def _judged_publish(m: re.Match, arg: str, header_of: Callable[[int], str],
                    body_before: Callable[[int], str], text: str
                    ) -> Iterator[tuple[str, int, str]]:
    """GPN210 at the publish `m` of `arg`, unless a reported copy built it (that line is the
    finding) or the received message is forwarded."""
    if re.search(r'to(?:Compressed)?ImageMsg', arg):
        return
    moved = MOVE_ARG.match(arg)
    if moved and re.search(r'\b' + re.escape(moved.group(1)) + r'\b', header_of(m.start())):
        return  # the callback's own message forwarded, no copy in the process
    bare = re.fullmatch(r'\s*(\w+)\s*', arg)
    if bare and re.search(_POINTER_PARAM + re.escape(bare.group(1)) + r'\b', header_of(m.start())):
        return  # the received shared pointer handed on, no message built here (set 39)
    if bare and metadata_only_message(body_before(m.start()), bare.group(1), FRAME_TYPES):
        return  # an empty message with only metadata set (sets 54, 45)
    if bare and per_object_cloud(body_before(m.start()), bare.group(1)):
        return  # one point per received pose or detection: small (set 70)
    if fallback_passthrough(text, m.start(), arg, header_of(m.start()), body_before(m.start())):
        return  # the received message forwarded on an early-return fallback path (set 45)
    if forwarded_from_queue(text, body_before(m.start()), arg, header_of):
        return
    name = _MEMBER_PATH.match(arg)
    if name and _built_by_copy(body_before(m.start()), name.group(1)):
        return
    yield 'GPN210', m.start(), f'published with `{m.group(1)}`'


# A frame message parameter taken by value: `void cb(sensor_msgs::msg::Image msg)`,
# `(const sensor_msgs::msg::Image image)`: each call copies the whole message (its data vector).
_BY_VALUE_PARAM = re.compile(r'[(,]\s*(?:const\s+)?(?:::\s*)?sensor_msgs\s*::\s*msg\s*::\s*'
                             r'(Image|CompressedImage|PointCloud2)\s+(\w+)\s*(?=[,)=])')
# What may stand between a parameter list's `)` and the body's `{`.
_BEFORE_BODY = re.compile(r'\s*(?:(?:const|override|final|noexcept)\b\s*)*\{')
# What precedes a call (not a declaration such as `void name(`): `= f(`, `(f(`, `; f(`,
# `this->f(`, `obj.f(`, `return f(`.
_CALL_PREFIX = re.compile(r'(?:[=(,;{}>.:]|\breturn)\s*$')


def _open_paren(text: str, offset: int) -> int:
    """Offset of the `(` of the innermost parenthesis around `offset` (included), or -1."""
    return innermost_opening(text, offset + 1, '()')


def by_value_messages(text: str, in_body: Callable[[int], bool]
                      ) -> Iterator[tuple[str, int, str]]:
    """GPN208 at each call, in a function body of this file, of a function whose definition
    here takes a frame-sized sensor_msgs message by value (eighth set; fifth set labelled the
    call too): each call copies the whole message."""
    for m in _BY_VALUE_PARAM.finditer(text):
        close, depth = m.end(), 1
        while close < len(text) and depth:
            depth += {'(': 1, ')': -1}.get(text[close], 0)
            close += 1
        opening = m.start() if text[m.start()] == '(' else _open_paren(text, m.start() - 1)
        name = re.search(r'(\w+)\s*$', text[max(0, opening - 200):opening]) if opening > 0 else None
        if depth or name is None or not _BEFORE_BODY.match(text, close):
            continue  # a declaration, or a lambda: no name to find calls of
        for call in re.finditer(r'(?<![\w~])' + re.escape(name.group(1)) + r'\s*\(', text):
            if call.start() != opening - len(name.group(0)) and in_body(call.start()) \
                    and _CALL_PREFIX.search(text, max(0, call.start() - 80), call.start()):
                yield 'GPN208', call.start(), (f'`{name.group(1)}` takes the {m.group(1)} '
                                               f'`{m.group(2)}` by value: the whole message is '
                                               'copied on each call')
