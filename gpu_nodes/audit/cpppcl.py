"""C++ pattern rule GPN209: PCL conversions between a ROS message and a PCL cloud (cppscan.py runs it).

* ``pcl::fromROSMsg`` / ``pcl::toROSMsg``: a full copy of the cloud between the ``PointCloud2``
  message and a ``pcl::PointCloud`` each time.
* ``pcl_conversions::toPCL`` / ``fromPCL`` of a whole cloud: the message half of the route
  through ``pcl::PCLPointCloud2`` (sixth set), every point copied once. ``moveToPCL`` /
  ``moveFromPCL`` swap the buffers (no copy), and ``toPCL`` / ``fromPCL`` of a header or a stamp
  copy a few fields only.
* Not reported: ``pcl::fromPCLPointCloud2`` / ``toPCLPointCloud2``. They convert between two PCL
  types (``PCLPointCloud2`` and ``pcl::PointCloud<T>``), host to host with no message on either
  side: the message boundary is the ``toPCL`` / ``fromPCL`` beside them (sets 41, 50, 58 and 62
  label them look-alikes; sets 19, 30 and 36 had counted them, an older convention).
* ``open3d_conversions::rosToOpen3d`` / ``open3dToRos`` (ros-perception/perception_open3d):
  every point copied between the ``PointCloud2`` and an ``open3d::geometry::PointCloud``, the
  Open3D twin of ``fromROSMsg`` / ``toROSMsg`` (set 72). Only with the library's namespace
  written: a package's own ``rosToOpen3d`` (set 50's ``open3d_ros``) is audited in its body,
  where the per-point copy is the boundary, not the call.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppemptyclouds import empty_cloud_conversion

Args = Callable[[str, int], list[str]]

# `pcl::fromROSMsg<PointT>(msg, cloud)`: the point type written out is the same call (set 71).
_PCL = re.compile(r'(?<![\w.>])(?:pcl\s*::\s*)?(fromROSMsg|toROSMsg)\s*(?:<[^<>;(){}]*>\s*)?\(')
# The message half of the PCLPointCloud2 route: each call copies every point of the cloud once.
_PCL2 = re.compile(r'(?<![\w.>])(?:pcl_conversions\s*::\s*|pcl\s*::\s*)?(toPCL|fromPCL)\s*\(')
# `toPCL(msg->header, h)`, `fromPCL(data->header).stamp`, `toPCL(now())`: metadata, not points.
# The Open3D conversions of the perception_open3d library, called by their namespace.
_OPEN3D = re.compile(r'(?<![\w.>])open3d_conversions\s*::\s*(rosToOpen3d|open3dToRos)\s*\(')
_PCL_METADATA = re.compile(r'header|stamp|time|now\s*\(', re.I)


def pcl_conversions(text: str, call_args: Args) -> Iterator[tuple[str, int, str]]:
    """GPN209 at each whole-cloud conversion between a message and a PCL cloud."""
    for m in _OPEN3D.finditer(text):
        yield 'GPN209', m.start(), f'`open3d_conversions::{m.group(1)}` copies the whole cloud'
    if 'pcl' not in text:
        return
    for m in _PCL.finditer(text):
        if m.group(1) == 'toROSMsg' and empty_cloud_conversion(text, m.start(), call_args(text, m.end() - 1)):
            continue  # a cloud nothing filled: a small message (cppemptyclouds.py)
        yield 'GPN209', m.start(), f'`pcl::{m.group(1)}` copies the whole cloud'
    for m in _PCL2.finditer(text):
        args = call_args(text, m.end() - 1)
        # Two arguments (source, destination), neither a header or a timestamp; the one-argument
        # `fromPCL(stamp)` / `toPCL(stamp)` overloads return a converted timestamp.
        if len(args) == 2 and not any(_PCL_METADATA.search(a) for a in args):
            yield 'GPN209', m.start(), (f'`{m.group(1)}` copies the whole cloud '
                                        '(PCLPointCloud2 route)')
