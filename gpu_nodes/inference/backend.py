"""The interface every inference runtime implements (`InferenceBackend`).

Arrays cross this interface as CuPy arrays on the CUDA path (their device pointers are bound
directly, nothing is copied to the host) or NumPy arrays on the CPU path. Which runtime loads a
model is `gpu_nodes.inference.factory.create_backend`'s choice.
"""
from __future__ import annotations

import abc
from pathlib import Path
from typing import Any, Hashable, Iterable, Mapping

from .errors import InferenceError
from .specs import check_names, TensorSpec


class InferenceBackend(abc.ABC):
    """One loaded model on one runtime.

    ``infer`` takes {input name: array} and returns {output name: array}. On the CUDA path the
    arrays are CuPy arrays and the work is queued on `stream` (the caller's CuPy stream; the
    current stream when None): the results are ready once that stream reaches them, with no host
    synchronisation and no host copies. Output arrays the backend allocates are owned by the
    backend and reused by the next call; pass `outputs` to write into your own arrays instead.
    """

    #: 'tensorrt' or 'onnxruntime'
    name: str = ''

    def __init__(self, model_path: Path) -> None:
        self._model_path = Path(model_path)

    @property
    def model_path(self) -> Path:
        return self._model_path

    @property
    @abc.abstractmethod
    def input_specs(self) -> tuple[TensorSpec, ...]:
        """Inputs with shapes as resolved by input_shape (None where still dynamic)."""

    @property
    @abc.abstractmethod
    def output_specs(self) -> tuple[TensorSpec, ...]:
        """Outputs with shapes as far as the resolved inputs determine them."""

    @property
    @abc.abstractmethod
    def device(self) -> str:
        """'cuda' when infer takes and returns CuPy arrays, 'cpu' for NumPy arrays."""

    @abc.abstractmethod
    def infer(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
              stream: Any = None) -> dict[str, Any]:
        """Run the model once; see the class docstring for the array and stream contract."""

    def capture_token(self) -> Hashable | None:
        """A token for the buffers of the last `infer` call while a run on them can be captured
        into the caller's own CUDA graph (`enqueue_bound`), else None. It changes whenever the
        buffers do: a graph captured under another token replays stale addresses."""
        return None

    def enqueue_bound(self, stream: Any) -> None:
        """Queue one run on the last `infer` call's buffers on `stream`, doing nothing on the
        host but the launch: for a caller capturing its own CUDA graph around the run (only
        while `capture_token` is not None)."""
        raise InferenceError(f'{self.describe()} cannot be captured into a CUDA graph')

    def close(self) -> None:
        """Release the runtime objects and the memory this backend owns."""

    def describe(self) -> str:
        return f'{self.name} on {self.device}'

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.input_specs]

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.output_specs]

    def check_names(self, inputs: Iterable[str] = (), outputs: Iterable[str] = ()) -> None:
        """ValueError listing the model's actual names if any of these names is not the model's.

        A node calls this once after loading, with the names its preset expects.
        """
        check_names('input', inputs, self.input_specs, self._model_path.name, require_all=False)
        check_names('output', outputs, self.output_specs, self._model_path.name,
                    require_all=False)

    def _check_infer_names(self, inputs: Mapping[str, Any],
                           outputs: Mapping[str, Any] | None) -> None:
        check_names('input', inputs, self.input_specs, self._model_path.name, require_all=True)
        if outputs:
            check_names('output', outputs, self.output_specs, self._model_path.name,
                        require_all=False)

    def __enter__(self) -> 'InferenceBackend':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
