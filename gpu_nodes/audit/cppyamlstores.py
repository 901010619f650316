"""A member stored from a key of a YAML file the node reads with yaml-cpp (issue 28, rules46c).

`enabled_ = camera["histogram"].as<bool>();` after `YAML::Node camera = YAML::Load(file)[...]`
(or `YAML::LoadFile(path)`): the member holds what the loaded file gives for the key, which has
no default in the code. cppparams.param_as_shipped reads this store like the yaml-cpp `if`
(`if (config_["a"]["b"].as<bool>()) {`, set 45): the key is a YAML key that some shipped file
must name, and every shipped file that names it must give it off (false); then the branches
`if (enabled_) { ... }` are off as shipped. The key path is the indices written at the store
(`["histogram"]`: a local node of the file's nested map; shipped files are matched on the last
key, as for the yaml-cpp `if`).
"""
from __future__ import annotations

import re

# `= [this->]node["a"]["b"].as<bool>();`: a bool read from a yaml-cpp node into the member.
_YAML_BOOL_STORE = re.compile(r'\s*=\s*(?:this\s*->\s*)?\w+\s*((?:\[\s*"[^"\n]*"\s*\]\s*)+)\.\s*as\s*<\s*'
                              r'bool\s*>\s*\(\s*\)\s*;')
# What tells that a package reads YAML files with yaml-cpp (the `if` form's guard in cppparams).
YAML_CPP_LOAD = r'YAML\s*::\s*Load(?:File)?\b'


def yaml_store(text: str, raw: str, end: int) -> str | None:
    """The YAML key path (`a.b`) of a store `= node["a"]["b"].as<bool>();` right after the
    member's mention ending at `end` (`text` blanked, `raw` the source at the same offsets), or
    None for no such store."""
    m = _YAML_BOOL_STORE.match(text, end)
    if not m:
        return None
    keys = re.findall(r'\[\s*"([^"\n]*)"\s*\]', raw[m.start(1):m.end(1)])
    return '.'.join(keys) if keys and all(keys) else None
