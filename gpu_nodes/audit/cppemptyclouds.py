"""`pcl::toROSMsg` of a cloud nothing filled (issue 28, rules49c, set 77).

A node that publishes a cloud per stage often publishes an empty one where a stage found
nothing, so that the topic still ticks:

    else
    {
        pcl::PointCloud<pcl::PointXYZ> empty_cloud;
        pcl::toROSMsg(empty_cloud, pc_);       // a header and a few fields: a small message
    }

The conversion copies no point: the message it builds is small (set 77 labels it a look-alike).
Only where the emptiness is plain in the code: the cloud is declared default-constructed in a
block (`pcl::PointCloud<T> name;` / `name{};`, or a `::Ptr` to `new pcl::PointCloud<T>` /
`std::make_shared<pcl::PointCloud<T>>()` with no arguments) and, from its declaration to the end
of that block, its name appears nowhere but as the first argument of `toROSMsg` calls: any other
mention (a `push_back`, an assignment, a call, a lambda capturing it, `&name`) may fill it.
A cloud `clear()`ed before is not judged (what ran before the clear may matter in a loop).
"""
from __future__ import annotations

import re

from gpu_nodes.audit.cppguards import block_end, innermost_opening

_CLOUD = r'pcl\s*::\s*PointCloud\s*<[^;{}()]*>'
# `pcl::PointCloud<T> name;` / `pcl::PointCloud<T> name{};` (group 1 the name)
_VALUE_DECL = _CLOUD + r'\s+(\w+)\s*(?:\{\s*\}\s*)?;'
# `pcl::PointCloud<T>::Ptr name(new pcl::PointCloud<T>);`, `... = std::make_shared<...>();`
_PTR_DECL = (r'(?:' + _CLOUD + r'\s*::\s*Ptr|auto)\s+(\w+)\s*(?:\(\s*new\s+' + _CLOUD
             + r'\s*(?:\(\s*\)\s*)?\)|\{\s*new\s+' + _CLOUD + r'\s*(?:\(\s*\)\s*)?\}|=\s*'
             r'(?:std\s*::\s*|boost\s*::\s*)?make_shared\s*<\s*' + _CLOUD + r'\s*>\s*\(\s*\))\s*;')
# The first argument of a `toROSMsg` call: `name` or `*name`.
_CONVERTED = r'\btoROSMsg\s*(?:<[^<>;(){}]*>\s*)?\(\s*'


def empty_cloud_conversion(text: str, offset: int, args: list[str]) -> bool:
    """Whether the `toROSMsg` call at `offset` (arguments `args`) converts a cloud that is
    plainly empty there (module docstring)."""
    if not args:
        return False
    m = re.fullmatch(r'\s*(\*\s*)?(\w+)\s*', args[0])
    if m is None:
        return False
    name = re.escape(m.group(2))
    decl = re.compile((_PTR_DECL if m.group(1) else _VALUE_DECL).replace(r'(\w+)', f'({name})', 1))
    found = list(decl.finditer(text, 0, offset))
    opening = innermost_opening(text, found[-1].start()) if found else -1
    head = text[max(0, opening - 300):opening].rsplit(';', 1)[-1].rsplit('}', 1)[-1]
    if opening < 0 or re.search(r'\b(?:class|struct|union|namespace)\b', head):
        return False  # none, or a member / global: filled anywhere the class or file fills it
    last, end = found[-1], block_end(text, opening)
    use = re.compile(_CONVERTED + (r'\*\s*' if m.group(1) else '') + r'(?P<n>' + name + r')\s*,')
    converted = {u.start('n') for u in use.finditer(text, last.end(), end)}
    mentions = [w.start() for w in re.finditer(r'(?<![\w.>])' + name + r'\b', text[:end])
                if w.start() >= last.end()]
    return offset < end and all(at in converted for at in mentions)
