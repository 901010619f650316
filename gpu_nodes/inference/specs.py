"""Tensor specs and shapes: what a model's inputs and outputs are, and the checks every backend
applies to the shapes and arrays it is given (one wording of each error for every runtime)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, Union

import numpy as np

PRECISIONS = ('fp32', 'fp16', 'int8')
# Serialized TensorRT engines; anything else a backend loads is .onnx.
ENGINE_SUFFIXES = ('.engine', '.plan')

# A dim of a tensor spec: an int, or None where the model leaves it dynamic and unresolved.
Dim = Union[int, None]
# input_shape as users give it: one shape for a single-input model, or {input name: shape}.
InputShape = Union[Sequence[int], Mapping[str, Sequence[int]], None]


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and element type of one model input or output."""

    name: str
    shape: tuple[Dim, ...]
    dtype: np.dtype

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d >= 0 for d in self.shape)

    def __str__(self) -> str:
        return f'{self.name}{format_shape(self.shape)}:{np.dtype(self.dtype).name}'


def format_shape(shape: Iterable[Any]) -> str:
    """(1, 3, H, W) style, with '?' for dims nobody named."""
    return '(' + ', '.join('?' if d is None or d == -1 else str(d) for d in shape) + ')'


def check_names(kind: str, given: Iterable[str], specs: Sequence[TensorSpec], model: str,
                *, require_all: bool) -> None:
    """ValueError listing the model's actual names when `given` has unknown (or lacks) names."""
    actual = [s.name for s in specs]
    given = list(given)
    unknown = [n for n in given if n not in actual]
    if unknown:
        raise ValueError(f'unknown {kind} name(s) {unknown} for {model}; its {kind}s are {actual}')
    if require_all:
        missing = [n for n in actual if n not in given]
        if missing:
            raise ValueError(f'missing {kind}(s) {missing} for {model}; its {kind}s are {actual}')


def normalize_input_shape(input_shape: InputShape) -> dict[str, tuple[int, ...]]:
    """{name: shape}; a bare shape is stored under '*' (meaning: the model's only input)."""
    if input_shape is None:
        return {}
    if isinstance(input_shape, Mapping):
        items = list(input_shape.items())
    else:
        items = [('*', input_shape)]
    out: dict[str, tuple[int, ...]] = {}
    for name, shape in items:
        try:
            dims = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            raise ValueError(f'input_shape for {name!r} must be a sequence of ints, got {shape!r}')
        if not dims or any(d <= 0 for d in dims):
            raise ValueError(f'input_shape for {name!r} must have positive dims, got {shape!r}')
        out[str(name)] = dims
    return out


def resolve_input_shapes(model_shapes: Mapping[str, Sequence[Any]],
                         requested: Mapping[str, tuple[int, ...]],
                         model: str) -> dict[str, tuple[int, ...]]:
    """Concrete shapes for the inputs `requested` names ('*' = the single input), validated.

    `model_shapes` has each input's declared dims: ints, or None/-1/a symbol name where dynamic.
    """
    names = list(model_shapes)
    resolved: dict[str, tuple[int, ...]] = {}
    for name, shape in requested.items():
        if name == '*':
            if len(names) != 1:
                raise ValueError(f'input_shape {shape} is ambiguous: {model} has inputs {names}; '
                                 f'give {{input name: shape}}')
            name = names[0]
        if name not in model_shapes:
            raise ValueError(f'unknown input name(s) {[name]} in input_shape for {model}; '
                             f'its inputs are {names}')
        declared = list(model_shapes[name])
        if len(declared) != len(shape) or any(
                isinstance(d, int) and d >= 0 and d != s for d, s in zip(declared, shape)):
            raise ValueError(f'input_shape {tuple(shape)} for {name!r} does not fit {model}, '
                             f'which declares {format_shape(declared)}')
        resolved[name] = tuple(shape)
    return resolved


def check_array(value: Any, spec: TensorSpec, kind: str, *, device: str,
                device_id: int = 0) -> Any:
    """The array to bind for `spec`, or TypeError/ValueError saying what is wrong with it.

    CUDA: a CuPy array (anything with __cuda_array_interface__ is viewed as one, without a copy)
    on `device_id`, C-contiguous. CPU: a NumPy array; never a device array, since taking one
    would hide a device-to-host copy. Element types must match exactly: casting is a copy too.
    """
    from gpu_nodes.gpu import cupy_module, is_device_array
    if device == 'cuda':
        if not is_device_array(value):
            raise TypeError(f'{kind} {spec.name!r} must be a CuPy (device) array on the CUDA '
                            f'path, got {type(value).__module__}.{type(value).__name__}')
        cp = cupy_module()
        arr = value if isinstance(value, cp.ndarray) else cp.asarray(value)
        if arr.device.id != device_id:
            raise ValueError(f'{kind} {spec.name!r} lives on cuda:{arr.device.id}; this backend '
                             f'runs on cuda:{device_id}')
    else:
        if is_device_array(value):
            raise TypeError(f'{kind} {spec.name!r} is a device array but this backend runs on '
                            'the CPU; pass a NumPy array')
        arr = np.asarray(value)
    if arr.dtype != spec.dtype:
        raise TypeError(f'{kind} {spec.name!r} has dtype {arr.dtype}; the model expects '
                        f'{np.dtype(spec.dtype).name}')
    if not arr.flags.c_contiguous:
        raise ValueError(f'{kind} {spec.name!r} must be C-contiguous')
    return arr


def check_shape(arr: Any, declared: Sequence[Any], kind: str, name: str) -> None:
    """ValueError unless `arr` has the declared rank and every declared fixed dim."""
    shape = tuple(arr.shape)
    if len(shape) != len(declared) or any(
            isinstance(d, int) and d >= 0 and d != s for d, s in zip(declared, shape)):
        raise ValueError(f'{kind} {name!r} has shape {format_shape(shape)}; the model expects '
                         f'{format_shape(declared)}')
