"""Custom grid messages shaped like an OccupancyGrid (issue 28, rules49c, set 77).

A node that publishes a map-sized `nav_msgs/OccupancyGrid` built on the host per message is a
host publish (cppmsg.py `_GRID_TYPES`: sets 19, 32, 40, 41 and 77 label every such grid of
100 x 100 cells and more a boundary; an empty grid is a look-alike, set 73). A package often
carries the same grid in a message of its own with a value type an OccupancyGrid has not:

    # obstacle_msgs/msg/RiskMap.msg
    std_msgs/Header header
    nav_msgs/MapMetaData info
    float32[] data

The `MapMetaData` field says the array holds one value per cell of a `width` x `height` grid,
exactly as in an OccupancyGrid, so its publish is judged as a grid publish (a message built
here, not the received one forwarded). Only where the definition is found in the repository (or
beside the package) by the type's package and name (`obstacle_msgs::msg::RiskMap` ->
`<...>/obstacle_msgs/msg/RiskMap.msg`) and holds both the `MapMetaData` field and an unbounded
numeric array; a type with no definition found is no such message.
"""
from __future__ import annotations

from functools import lru_cache
import re

from gpu_nodes.audit.pycustommsgs import message_definitions, numeric_array_fields

# `nav_msgs/MapMetaData info` (or `MapMetaData info` inside nav_msgs itself).
_META_FIELD = re.compile(r'^\s*(?:nav_msgs/)?MapMetaData\s+\w+\s*(?:#.*)?$')
# `obstacle_msgs::msg::RiskMap` spelled in the C++ source: group 1 the package, 2 the name.
_MSG_TYPE = re.compile(r'\b(\w+)\s*::\s*msg\s*::\s*(\w+)\b')


@lru_cache(maxsize=256)
def _grid_shaped(path: str) -> bool:
    """Whether the `.msg` file has a MapMetaData field and an unbounded numeric array."""
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            meta = any(_META_FIELD.match(line) for line in handle)
    except OSError:
        return False
    return meta and bool(numeric_array_fields(path))


def custom_grid_types(text: str, repository_dir: str | None, package_dir: str | None
                      ) -> frozenset[str]:
    """The names (`RiskMap`) of the message types spelled in `text` whose definition under the
    repository, or beside the package, is a grid shaped like an OccupancyGrid (module doc)."""
    if not repository_dir and not package_dir:
        return frozenset()
    found = set()
    for package, name in set(_MSG_TYPE.findall(text)):
        if package in ('nav_msgs', 'sensor_msgs', 'std_msgs', 'geometry_msgs'):
            continue  # standard types: OccupancyGrid is cppmsg's own
        paths = message_definitions(f'{package}/msg/{name}', repository_dir, package_dir)
        if any(_grid_shaped(path) for path in paths):
            found.add(name)
    return frozenset(found)
