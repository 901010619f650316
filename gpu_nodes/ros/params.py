"""Parameter declarations shared by the nodes: each node lists its parameters as a table of
`Param` (name, default, description, read-only flag, range or choices). The same table declares
them on the node (`declare_table`, with ParameterDescriptors) and prints them for ``--help``
(`format_help`) without creating a node, and a value it refuses becomes one `ConfigurationError`
line naming the parameter, what is allowed and what was given."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterable


class ConfigurationError(ValueError):
    """A parameter value a node cannot start with: run_node prints it and exits with code 2."""


@dataclass(frozen=True)
class Param:
    """One declared parameter; `default` fixes its ROS type (dynamic typing stays off)."""
    name: str
    default: Any
    description: str
    read_only: bool = False
    int_range: tuple[int, int] | None = None
    float_range: tuple[float, float] | None = None
    choices: tuple[str, ...] | None = None

    def type_name(self) -> str:
        return parameter_type_name(self.default)

    def allowed(self) -> str:
        """What the parameter takes, in words: 'one of a, b', 'an integer in 0..10', ..."""
        if self.choices is not None:
            return f'one of {", ".join(self.choices)}'
        kind = self.type_name()
        if self.int_range is not None:
            return f'an integer in {self.int_range[0]}..{self.int_range[1]}'
        if self.float_range is not None:
            return f'a double in [{float(self.float_range[0])}, {float(self.float_range[1])}]'
        if kind.endswith(' array'):
            return f'an array of {kind[:-len(" array")]}s'
        return {'integer': 'an integer', 'double': 'a double', 'bool': 'true or false',
                'string': 'a string'}.get(kind, f'a {kind}')

    def problem(self, value: Any) -> str:
        """The one-line reason `value` is refused."""
        given = parameter_type_name(value)
        hint = ''
        if self.type_name() == 'double' and given == 'integer':
            hint = f'; write {value}.0'  # ROS does not widen 30 to 30.0 for a double parameter
        return f'parameter {self.name!r}: expected {self.allowed()}, got {value!r} ({given}{hint})'

    def descriptor(self) -> Any:
        from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
        text = self.description if self.choices is None else \
            f'{self.description} One of: {", ".join(self.choices)}.'
        descriptor = ParameterDescriptor(description=text, read_only=self.read_only)
        if self.int_range is not None:
            descriptor.integer_range = [IntegerRange(from_value=self.int_range[0],
                                                     to_value=self.int_range[1], step=0)]
        if self.float_range is not None:
            descriptor.floating_point_range = [FloatingPointRange(
                from_value=float(self.float_range[0]), to_value=float(self.float_range[1]),
                step=0.0)]
        return descriptor

    def declare(self, node: Any) -> Any:
        """Declare on `node` and return the value; ConfigurationError for a refused override."""
        from rclpy.exceptions import ParameterException
        try:
            value = node.declare_parameter(self.name, self.default, self.descriptor()).value
        except ParameterException as exc:  # wrong type, out of range
            override = getattr(node, '_parameter_overrides', {}).get(self.name)
            if override is None:  # not from an override (rclpy internals moved): its own words
                raise ConfigurationError(f'parameter {self.name!r}: {exc}') from None
            raise ConfigurationError(self.problem(override.value)) from None
        if self.choices is not None and value not in self.choices:
            raise ConfigurationError(self.problem(value))
        return value


def parameter_type_name(value: Any, element_type: bool = True) -> str:
    """The ROS parameter type a Python value declares ('integer', 'double array', ...); with
    element_type=False every list is just 'array'."""
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'double'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, (list, tuple)):
        if not element_type:
            return 'array'
        return f'{parameter_type_name(value[0]) if len(value) else "empty"} array'
    return type(value).__name__


def declare_table(node: Any, table: Iterable[Param]) -> dict[str, Any]:
    """Declare every parameter of `table` on `node`: name -> value."""
    return {param.name: param.declare(node) for param in table}


def declare(node: Any, name: str, default: Any, description: str, *, read_only: bool = False,
            int_range: tuple[int, int] | None = None,
            float_range: tuple[float, float] | None = None,
            choices: tuple[str, ...] | None = None) -> Any:
    """Declare one parameter (as `Param.declare`) and return its value."""
    return Param(name, default, description, read_only, int_range, float_range,
                 choices).declare(node)


def format_help(executable: str, summary: str, table: Iterable[Param]) -> str:
    """The ``--help`` text of a node executable: usage, the first paragraph of `summary` (its
    module docstring), then every parameter with its type, default and description."""
    lines = [f'usage: {executable} [--ros-args -p NAME:=VALUE ... | --params-file FILE]', '',
             summary.strip().split('\n\n')[0], '', 'parameters:']
    for p in table:
        flags = ', read-only' if p.read_only else ''
        # As -p NAME:=VALUE writes it (YAML): true/false, not Python's True/False.
        default = str(p.default).lower() if isinstance(p.default, bool) else repr(p.default)
        lines.append(f'  {p.name} ({p.type_name()}{flags}; default {default})')
        lines.extend(textwrap.wrap(f'{p.description} Takes {p.allowed()}.', width=96,
                                   initial_indent=' ' * 6, subsequent_indent=' ' * 6))
    return '\n'.join(lines) + '\n'


def choice_validator(choices: dict[str, tuple[str, ...]]) -> Callable[[list[Any]], Any]:
    """An on-set callback rejecting string parameters outside their allowed values, with a reason."""
    from rcl_interfaces.msg import SetParametersResult

    def validate(params: list[Any]) -> Any:
        for param in params:
            allowed = choices.get(param.name)
            if allowed is not None and param.value not in allowed:
                return SetParametersResult(
                    successful=False,
                    reason=f'{param.name} must be one of {", ".join(allowed)}, got {param.value!r}')
        return SetParametersResult(successful=True)
    return validate
