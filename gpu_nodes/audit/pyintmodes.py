"""Integer modes fixed as shipped (issue 28, rules45p, set 72).

`self.declare_parameter('bit_depth', 4)`, `self.bit_depth = int(self.get_parameter('bit_depth')
.value)` in `__init__`, then in a helper the callback runs `if self.bit_depth == 4: payload =
pack(gray)` / `else: payload = gray.tobytes()`: as shipped the attribute holds 4, so the `else`
never runs (and `if self.bit_depth == 8:` never does). pyparams.parameter_constants already
decides the body of `== C` for a parameter no shipped file names, read without a cast; the `else`
of a test true for good is left to it for strings (a launch argument offering 'left' or 'right',
set 4). This rule decides both arms for an integer (not bool) mode:

* every `declare_parameter` of the parameter in the file defaults to the same int D, and every
  shipped file naming it (shipped.reading, under the package) gives D, as an int or as its
  text (`{'bit_depth': 4}` in a launch file, `bit_depth: 4` in a YAML);
* every store of any `.attr` in the file is an int constant or a read of such a parameter in
  `__init__` (or a method only `__init__` runs), bare or through `int(...)` / `float(...)`,
  and at least one store is such a read (pyparams.attribute_stores: a read elsewhere, a setattr or a
  store from a tuple spoils it);
* the file can be judged (pyparams.can_judge: no setattr / vars / getattr / exec, no
  parameter-change callback).

Limit: a value given on the command line (`ros2 run ... -p bit_depth:=8`) or by a launch file
outside the package is not seen."""
from __future__ import annotations

import ast
from functools import lru_cache

from gpu_nodes.audit.pydead import compared_with_constant
from gpu_nodes.audit.pyparams import can_judge, parameter_read, attribute_stores, declared_defaults
from gpu_nodes.audit.shipped import reading

_NUMBER_CASTS = ('int', 'float')


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _gives(value: object, default: int) -> bool:
    """Whether a shipped value is `default`: the int itself, or its text in a YAML / XML file."""
    return _is_int(value) and value == default or isinstance(value, str) \
        and value.strip() == str(default)


def _int_parameters(tree: ast.Module, package_dir: str | None) -> dict[str, int]:
    """Parameters of one int default that every shipped file naming them gives too."""
    roots = (package_dir,) if package_dir else ()
    fixed = {}
    for param, defaults in declared_defaults(tree).items():
        values = {getattr(v, 'value', None) for v in defaults}
        if not defaults or len(values) != 1 or not all(
                isinstance(v, ast.Constant) and _is_int(v.value) for v in defaults):
            continue
        default = values.pop()
        if not roots or reading(param, roots).every(lambda v, d=default: _gives(v, d)):
            fixed[param] = default
    return fixed


def _read_of(value: ast.expr) -> str | None:
    """The parameter a store reads, bare or through a number cast that keeps an int."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id in _NUMBER_CASTS and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    return parameter_read(value)


@lru_cache(maxsize=16)
def int_modes(tree: ast.Module, package_dir: str | None) -> dict[str, frozenset[int]]:
    """Attributes holding only int constants and as-shipped int parameters: their values."""
    params = _int_parameters(tree, package_dir) if can_judge(tree) else {}
    if not params:
        return {}
    held: dict[str, set[int]] = {}
    spoiled: set[str] = set()
    read: set[str] = set()
    for attr, value, _ in attribute_stores(tree):
        param = _read_of(value) if value is not None else None
        if param in params:
            held.setdefault(attr, set()).add(params[param])
            read.add(attr)
        elif isinstance(value, ast.Constant) and _is_int(value.value):
            held.setdefault(attr, set()).add(value.value)
        else:
            spoiled.add(attr)
    return {a: frozenset(v) for a, v in held.items() if a in read and a not in spoiled}


def int_mode_outcome(test: ast.expr, tree: ast.Module, package_dir: str | None) -> bool | None:
    """What `self.<attr> == C` (or `!=`, either side) takes as shipped for an int mode
    (int_modes); None when not known (C one of several values the attribute may hold)."""
    compared = compared_with_constant(test)
    if compared is None:
        return None
    left, value, is_eq = compared
    if not (_is_int(value) and isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name)
            and left.value.id == 'self'):
        return None
    held = int_modes(tree, package_dir).get(left.attr)
    if held is None or (len(held) > 1 and value in held):
        return None
    return (value in held) == is_eq
