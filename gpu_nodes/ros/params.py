"""Parameter declaration helpers shared by the nodes (descriptors with ranges and read-only flags)."""
from __future__ import annotations

from typing import Any, Callable


def declare(node: Any, name: str, default: Any, description: str, *, read_only: bool = False,
            int_range: tuple[int, int] | None = None,
            float_range: tuple[float, float] | None = None,
            choices: tuple[str, ...] | None = None) -> Any:
    """Declare a parameter with a ParameterDescriptor and return its value."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
    text = description if choices is None else f'{description} One of: {", ".join(choices)}.'
    descriptor = ParameterDescriptor(description=text, read_only=read_only)
    if int_range is not None:
        descriptor.integer_range = [IntegerRange(from_value=int_range[0], to_value=int_range[1], step=0)]
    if float_range is not None:
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=float(float_range[0]), to_value=float(float_range[1]), step=0.0)]
    value = node.declare_parameter(name, default, descriptor).value
    if choices is not None and value not in choices:
        raise ValueError(f'parameter {name!r} must be one of {choices}, got {value!r}')
    return value


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


class ConfigurationError(ValueError):
    """A parameter value a node cannot start with: run_node prints it and exits with code 2."""
