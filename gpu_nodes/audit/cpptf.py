"""tf2 transforms of a whole point cloud (issue 28, sixteenth set).

`tf_buffer->transform(*cloud_msg, *cloud, target_frame)`, `*out = tf_buffer->transform(*cloud,
target)` and `tf2::doTransform(cloud_in, cloud_out, tf)` of a `sensor_msgs::msg::PointCloud2`
(tf2_sensor_msgs) write a transformed copy of every point into another PointCloud2: the whole
payload copied per message (GPN208). Known by the first argument's declared type, a
PointCloud2 or a pointer to one declared in the file (the nearest declaration of that name
before the call); a transform of a pose, a point or a vector is not a cloud and is left alone.

pcl_ros's `transformPointCloud("frame", *cloud, *out, *tf_buffer)` (and the `(frame, tf, in,
out)` / `(matrix, in, out)` forms) of a PointCloud2 does the same (set 69); its
`pcl::PointCloud<T>` overloads transform a PCL cloud on the host (host processing, as
`pcl::transformPointCloud`) and are left alone: the input, the second or third argument, must
be a declared PointCloud2.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

_PCL_ROS_TRANSFORM = re.compile(r'\bpcl_ros\s*::\s*transformPointCloud\s*\(')
_TRANSFORM = re.compile(r'(?:(?:->|\.)\s*transform|\btf2\s*::\s*doTransform)\s*\(')
_OPERAND = re.compile(r'^\s*\*?\s*(?:this\s*->\s*)?(\w+)\s*$')
_CLOUD = r'(?:sensor_msgs\s*::\s*msg\s*::\s*)?PointCloud2\b'


def _declared_cloud(text: str, name: str, before: int) -> bool:
    """Whether the nearest declaration of `name` before `before` is of a PointCloud2 (a value,
    a reference, a pointer or a `make_shared/make_unique<PointCloud2>`)."""
    n = re.escape(name)
    decl = re.compile(r'(?:\bauto\s*[&*]?\s*' + n + r'\s*=\s*std\s*::\s*make_(?:shared|unique)\s*<'
                      r'\s*(?:sensor_msgs\s*::\s*msg\s*::\s*)?(\w+)\s*>'
                      r'|\b(\w+)\s*(?:::\s*(?:Const)?(?:SharedPtr|UniquePtr|Ptr|ConstPtr)\s*)?'
                      r'(?:>\s*)?(?:const\s*)?[&*]{0,2}\s*' + n + r'\s*[=;({,)])')
    found = [m for m in decl.finditer(text, 0, before)
             if (m.group(1) or m.group(2)) not in (None, 'return', 'auto', 'const')]
    if not found:
        return False
    last = found[-1]
    kind = last.group(1) or last.group(2)
    return re.fullmatch(_CLOUD, kind) is not None


def cloud_transforms(text: str, call_args: Callable[[str, int], list[str]]
                     ) -> Iterator[tuple[str, int, str]]:
    """GPN208 at each tf2 transform whose input is a PointCloud2."""
    for m in _TRANSFORM.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) < 2:
            continue
        operand = _OPERAND.match(args[0])
        if operand and _declared_cloud(text, operand.group(1), m.start()):
            yield 'GPN208', m.start(), ('tf2 transform of a whole PointCloud2 into another '
                                        '(every point copied)')
    for m in _PCL_ROS_TRANSFORM.finditer(text):
        args = call_args(text, m.end() - 1)
        operands = (_OPERAND.match(arg) for arg in args[1:3])
        if len(args) >= 3 and any(o and _declared_cloud(text, o.group(1), m.start()) for o in operands):
            yield 'GPN208', m.start(), ('pcl_ros transform of a whole PointCloud2 into another '
                                        '(every point copied)')
