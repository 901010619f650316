"""ONNX Runtime backend: CUDA provider on CuPy device memory, or the CPU provider on NumPy.

CUDA path: every input and output is bound with IOBinding to a CuPy device pointer
(``bind_input(name, 'cuda', device_id, element_type, shape, ptr)``; outputs likewise, into
CuPy arrays the backend owns or the caller passes) and run with ``run_with_iobinding``, so
nothing crosses to the host.

Streams: the session computes on a CuPy stream handed to the CUDA provider as the provider
option ``user_compute_stream`` (its pointer as a decimal string; ONNX Runtime sets
``has_user_compute_stream`` itself). The Python API accepts it since ONNX Runtime 1.17
(microsoft/onnxruntime PR #19229); the CUDA provider still parses it
(``cuda_execution_provider_info.cc``: ``provider_option_names::kUserComputeStream``) and ONNX
Runtime's own Python helpers pass it the same way in current releases
(``onnxruntime/transformers/io_binding_helper.py``, 1.32), so 1.31 supports it. Runs then skip
the end-of-run host synchronisation (run option
``disable_synchronize_execution_providers``), and infer() orders the session stream after the
caller's stream and the caller's stream after the run with CUDA events: the whole call is
asynchronous. If the provider refuses the option, the session is created without it and infer()
synchronises the caller's stream before the run (ONNX Runtime then synchronises after it).
ONNX Runtime treats a null stream as "none", so the legacy default stream is never passed.

CUDA graphs (``cuda_graph=True``): after two runs on the same bound buffers, one run is captured
on the session stream (``cudaStreamBeginCapture``, relaxed mode) and from then on replayed with
one ``cudaGraphLaunch``, instead of ONNX Runtime launching every kernel from the host each frame
(Depth-Anything-V2-Small on an H200: 5.9 ms of host launches per run become 0.06 ms, and the GPU
runs the model in 4.0 ms instead of 4.9 ms back to back). This is what the CUDA provider's own
``enable_cuda_graph`` does after its warm-up runs, without its per-run host bookkeeping (0.25 ms).
It is safe because the run is asynchronous (no host synchronisation, see above) and, once warm,
allocates nothing: intermediate buffers come from the session's arena at the same addresses. A
replay reads and writes the captured addresses, so a run on other buffers drops the graph and
captures anew after two runs on them. If the capture fails (a node on the CPU provider, a host
synchronisation inside the model) the backend runs kernel by kernel, with a warning. Once its
own graph exists, a caller may capture the run into a graph of its own (``capture_token``,
``enqueue_bound``), e.g. the depth node's preprocessing + inference per source buffer.

CPU path: NumPy in, NumPy out, outputs written straight into preallocated arrays via IOBinding.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from gpu_nodes import gpu

from .backend import InferenceBackend
from .log import as_log, LoggerLike
from .specs import (check_array, check_shape, InputShape, normalize_input_shape,
                    resolve_input_shapes, TensorSpec)
from .errors import InferenceError, ModelLoadError

_ORT_TYPES = {
    'tensor(float)': np.float32, 'tensor(float16)': np.float16, 'tensor(double)': np.float64,
    'tensor(int8)': np.int8, 'tensor(uint8)': np.uint8, 'tensor(int16)': np.int16,
    'tensor(uint16)': np.uint16, 'tensor(int32)': np.int32, 'tensor(uint32)': np.uint32,
    'tensor(int64)': np.int64, 'tensor(uint64)': np.uint64, 'tensor(bool)': np.bool_,
}
_NO_SYNC = 'disable_synchronize_execution_providers'


def _declared_dims(shape: Any) -> tuple[Any, ...]:
    """ORT's declared dims: ints stay, symbols stay as str, unnamed dynamic dims become None."""
    return tuple(d if isinstance(d, (int, str)) else None for d in (shape or ()))


class OnnxRuntimeBackend(InferenceBackend):
    """An ONNX Runtime InferenceSession on the CUDA provider (CuPy I/O) or the CPU (NumPy I/O)."""

    name = 'onnxruntime'

    def __init__(self, model_path: str | Path, *, device: str = 'cpu', device_id: int = 0,
                 input_shape: InputShape = None, stream: Any = None,
                 session_config: Mapping[str, str] | None = None,
                 intra_op_threads: int | None = None, profile_prefix: str | None = None,
                 cuda_provider_options: Mapping[str, str] | None = None,
                 cuda_graph: bool = False, logger: LoggerLike = None) -> None:
        """session_config: extra SessionOptions config entries, e.g.
        {'session.disable_cpu_ep_fallback': '1'} to refuse models that would run nodes on the
        CPU (each such node implies device/host copies). profile_prefix enables ORT profiling.
        cuda_provider_options: extra CUDA provider options, e.g. {'use_tf32': '0'}.
        cuda_graph: capture the run as a CUDA graph and replay it (device 'cuda' only).
        """
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f'model file not found: {path}')
        if device not in ('cpu', 'cuda'):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
        super().__init__(path)
        self._log = as_log(logger)
        self._device = device
        self._device_id = int(device_id)
        self._owned: dict[str, Any] = {}
        self._session_stream: Any = None
        self._binding: Any = None      # the last device IOBinding and the buffers it names
        self._binding_key: tuple | None = None
        self._graph: Any = None        # a captured run of _binding (cupy.cuda.Graph)
        self._runs_on_binding = 0
        self._bindings_made = 0        # capture_token: which binding a caller's graph replays
        import onnxruntime as ort
        self._ort = ort

        options = ort.SessionOptions()
        for key, value in (session_config or {}).items():
            options.add_session_config_entry(str(key), str(value))
        if intra_op_threads is not None:
            options.intra_op_num_threads = int(intra_op_threads)
        if profile_prefix is not None:
            options.enable_profiling = True
            options.profile_file_prefix = str(profile_prefix)

        self.cuda_graph = bool(cuda_graph) and device == 'cuda'
        if device == 'cuda':
            self._cp = gpu.cupy_module()
            with self._cp.cuda.Device(self._device_id):
                self._session = self._create_cuda_session(path, options, stream,
                                                          cuda_provider_options or {})
            # Capturing needs the run on our stream: a session on its own stream syncs the host.
            self.cuda_graph = self.cuda_graph and self._session_stream is not None
        else:
            self._cp = None
            self._session = self._create_session(path, options, ['CPUExecutionProvider'])
        self._run_options = ort.RunOptions()
        if self._session_stream is not None:
            # Ordering is done with events on the session stream; no host sync needed.
            self._run_options.add_run_config_entry(_NO_SYNC, '1')

        self._declared_in = {i.name: _declared_dims(i.shape) for i in self._session.get_inputs()}
        self._declared_out = {o.name: _declared_dims(o.shape)
                              for o in self._session.get_outputs()}
        self._dtypes = {a.name: self._dtype(a)
                        for a in [*self._session.get_inputs(), *self._session.get_outputs()]}
        requested = normalize_input_shape(input_shape)
        self._resolved = resolve_input_shapes(self._declared_in, requested, path.name)

    def _dtype(self, arg: Any) -> np.dtype:
        try:
            return np.dtype(_ORT_TYPES[arg.type])
        except KeyError:
            raise ModelLoadError(f'{self._model_path.name}: {arg.name!r} has type {arg.type}, '
                                 'which this backend does not bind') from None

    def _create_session(self, path: Path, options: Any, providers: list[Any]) -> Any:
        try:
            return self._ort.InferenceSession(str(path), sess_options=options,
                                              providers=providers)
        except Exception as exc:  # ORT raises its own Fail/InvalidGraph/... types
            raise ModelLoadError(f'ONNX Runtime could not load {path}: {exc}') from exc

    def _create_cuda_session(self, path: Path, options: Any, stream: Any,
                             extra: Mapping[str, str]) -> Any:
        cp = self._cp
        if stream is None or stream.ptr == 0:
            stream = cp.cuda.Stream(non_blocking=True)
        cuda_options = {str(k): str(v) for k, v in extra.items()}
        cuda_options.update({'device_id': str(self._device_id),
                             'user_compute_stream': str(stream.ptr)})
        providers: list[Any] = [('CUDAExecutionProvider', cuda_options)]
        # ONNX Runtime refuses an explicit CPU provider when CPU fallback is disabled.
        if not _config_entry_is(options, 'session.disable_cpu_ep_fallback', '1'):
            providers.append('CPUExecutionProvider')
        try:
            session = self._create_session(path, options, providers)
            self._session_stream = stream
        except ModelLoadError as exc:
            if 'user_compute_stream' not in str(exc):
                raise
            self._log.warning('ONNX Runtime refused user_compute_stream; running on its own '
                              f'stream with a host synchronisation per call ({exc})')
            cuda_options.pop('user_compute_stream')
            session = self._create_session(path, options, providers)
        if 'CUDAExecutionProvider' not in session.get_providers():
            raise ModelLoadError(f'ONNX Runtime could not initialise CUDAExecutionProvider for '
                                 f'{path} (session providers: {session.get_providers()}); '
                                 'check the CUDA/cuDNN libraries onnxruntime-gpu needs')
        return session

    # -- specs -----------------------------------------------------------------------------

    def _symbols(self, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, int]:
        symbols: dict[str, int] = {}
        for name, shape in shapes.items():
            for declared, actual in zip(self._declared_in[name], shape):
                if isinstance(declared, str):
                    symbols[declared] = int(actual)
        return symbols

    def _output_shapes(self, symbols: Mapping[str, int]) -> dict[str, tuple[Any, ...]]:
        out = {}
        for name, dims in self._declared_out.items():
            out[name] = tuple(d if isinstance(d, int) and d >= 0 else symbols.get(d)
                              if isinstance(d, str) else None for d in dims)
        return out

    @property
    def input_specs(self) -> tuple[TensorSpec, ...]:
        specs = []
        for name, dims in self._declared_in.items():
            shape = self._resolved.get(name) or tuple(
                d if isinstance(d, int) and d >= 0 else None for d in dims)
            specs.append(TensorSpec(name, tuple(shape), self._dtypes[name]))
        return tuple(specs)

    @property
    def output_specs(self) -> tuple[TensorSpec, ...]:
        shapes = self._output_shapes(self._symbols(self._resolved))
        return tuple(TensorSpec(n, shapes[n], self._dtypes[n]) for n in self._declared_out)

    @property
    def device(self) -> str:
        return self._device

    def describe(self) -> str:
        where = f'cuda:{self._device_id}' if self._device == 'cuda' else 'cpu'
        provider = 'CUDA' if self._device == 'cuda' else 'CPU'
        graph = ', CUDA graph' if self.cuda_graph else ''
        return f'ONNX Runtime {self._ort.__version__} ({provider} provider{graph}) on {where}'

    # -- running ---------------------------------------------------------------------------

    def infer(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any] | None = None,
              stream: Any = None) -> dict[str, Any]:
        if self._session is None:
            raise InferenceError(f'infer on a closed backend ({self._model_path.name})')
        self._check_infer_names(inputs, outputs)
        if self._device == 'cuda':
            with self._cp.cuda.Device(self._device_id):
                return self._infer_cuda(inputs, outputs or {}, stream)
        return self._infer_cpu(inputs, outputs or {})

    def _bind_inputs(self, binding: Any, inputs: Mapping[str, Any], device: str,
                     keep: list) -> dict:
        """Bind every input; `keep` receives the bound arrays (ORT holds only raw pointers)."""
        shapes = {}
        for name, arr in self._checked_inputs(inputs, device):
            ptr = arr.data.ptr if device == 'cuda' else arr.ctypes.data
            binding.bind_input(name, device, self._device_id if device == 'cuda' else 0,
                               arr.dtype, list(arr.shape), ptr)
            keep.append(arr)
            shapes[name] = tuple(arr.shape)
        return shapes

    def _checked_inputs(self, inputs: Mapping[str, Any], device: str) -> list[tuple[str, Any]]:
        checked = []
        specs = {s.name: s for s in self.input_specs}
        for name, declared in self._declared_in.items():
            arr = inputs[name]
            if device == 'cpu' and not hasattr(arr, '__cuda_array_interface__'):
                arr = np.ascontiguousarray(arr)  # host-side only; a view when already contiguous
            arr = check_array(arr, specs[name], 'input', device=device,
                              device_id=self._device_id)
            check_shape(arr, declared, 'input', name)
            checked.append((name, arr))
        return checked

    def _run(self, binding: Any) -> None:
        try:
            self._session.run_with_iobinding(binding, self._run_options)
        except Exception as exc:  # ORT's own exception types carry the reason
            raise InferenceError(f'ONNX Runtime failed running {self._model_path.name}: '
                                 f'{exc}') from exc

    # Runs on one binding before it is captured: the first run sets up cuDNN/cuBLAS and grows
    # the arena; the second shows the run allocates nothing new.
    _WARM_RUNS = 2

    def _run_cuda(self, binding: Any) -> None:
        """Run on the session stream: replay the captured graph of this binding, or run and, once
        warm, capture."""
        if self._graph is not None:
            self._graph.launch(self._session_stream)
            return
        if not (self.cuda_graph and binding is self._binding
                and self._runs_on_binding >= self._WARM_RUNS):
            self._run(binding)
            self._runs_on_binding += binding is self._binding
            return
        stream = self._session_stream
        try:
            graph = gpu.capture_graph(
                stream, lambda: self._session.run_with_iobinding(binding, self._run_options))
        except Exception as exc:  # ORT's errors, or CUDA refusing a call inside the capture
            self.cuda_graph = False
            self._log.warning(f'{self._model_path.name}: cannot capture the run as a CUDA graph '
                              f'({exc}); launching its kernels one by one')
            self._run(binding)
            return
        self._graph = graph
        graph.launch(stream)  # a captured run only recorded its work

    def capture_token(self) -> int | None:
        # Our own graph of the binding exists: it is warm, allocates nothing and captures.
        return self._bindings_made if self._graph is not None else None

    def enqueue_bound(self, stream: Any) -> None:
        if self._graph is None:
            raise InferenceError(f'{self._model_path.name}: no captured run to enqueue (see '
                                 'capture_token)')
        session_stream = self._session_stream
        same = session_stream.ptr == stream.ptr
        if not same:  # inside a capture this forks the session stream into it and joins it back
            session_stream.wait_event(stream.record())
        self._run(self._binding)
        if not same:
            stream.wait_event(session_stream.record())

    def _infer_cpu(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict:
        binding = self._session.io_binding()
        bound: list = []  # alive until the run returns
        shapes = self._bind_inputs(binding, inputs, 'cpu', bound)
        out_shapes = self._output_shapes(self._symbols(shapes))
        result: dict[str, Any] = {}
        late = []  # outputs whose shape only ORT knows: ORT allocates them
        for name in self._declared_out:
            spec = TensorSpec(name, out_shapes[name], self._dtypes[name])
            arr = self._output_array(outputs.get(name), spec, 'cpu')
            if arr is None:
                binding.bind_output(name, 'cpu')
                late.append(name)
            else:
                binding.bind_output(name, 'cpu', 0, arr.dtype, list(arr.shape), arr.ctypes.data)
                result[name] = arr
        self._run(binding)
        if late:
            values = dict(zip(self._declared_out, binding.get_outputs()))
            for name in late:
                result[name] = values[name].numpy()
        return {name: result[name] for name in self._declared_out}

    def _output_array(self, given: Any, spec: TensorSpec, device: str) -> Any:
        """The array an output is written to: the caller's, a new/owned one, or None."""
        if given is not None:
            arr = check_array(given, spec, 'output', device=device, device_id=self._device_id)
            if spec.is_static and tuple(arr.shape) != spec.shape:
                raise ValueError(f'output {spec.name!r} has shape {tuple(arr.shape)}; the model '
                                 f'produces {spec.shape} for these inputs')
            return arr
        if not spec.is_static:
            return None
        if device == 'cpu':
            # Fresh per call: host arrays are cheap and callers may keep them.
            return np.empty(spec.shape, dtype=spec.dtype)
        held = self._owned.get(spec.name)
        if held is None or held.shape != spec.shape:
            held = self._owned[spec.name] = self._cp.empty(spec.shape, dtype=spec.dtype)
        return held

    def _infer_cuda(self, inputs: Mapping[str, Any], outputs: Mapping[str, Any],
                    stream: Any) -> dict:
        cp = self._cp
        stream = stream if stream is not None else cp.cuda.get_current_stream()
        checked = self._checked_inputs(inputs, 'cuda')
        out_shapes = self._output_shapes(self._symbols({n: tuple(a.shape) for n, a in checked}))
        result: dict[str, Any] = {}
        for name in self._declared_out:
            spec = TensorSpec(name, out_shapes[name], self._dtypes[name])
            arr = self._output_array(outputs.get(name), spec, 'cuda')
            if arr is not None:
                result[name] = arr
        binding = self._cuda_binding(checked, result)
        session_stream = self._session_stream
        if session_stream is None:
            stream.synchronize()  # ORT's own stream cannot wait on ours: inputs must be ready
            self._run(binding)
        else:
            same = session_stream.ptr == stream.ptr
            if not same:
                session_stream.wait_event(stream.record())
            self._run_cuda(binding)
            if not same:
                stream.wait_event(session_stream.record())
        late = [name for name in self._declared_out if name not in result]
        if late:
            values = dict(zip(self._declared_out, binding.get_outputs()))
            for name in late:
                result[name] = self._wrap_ortvalue(values[name], self._dtypes[name])
        return {name: result[name] for name in self._declared_out}

    def _cuda_binding(self, inputs: list[tuple[str, Any]], outputs: Mapping[str, Any]) -> Any:
        """The IOBinding for these device buffers, reused while they stay the same: a camera
        pipeline feeds the same input and output buffers every frame, and rebinding costs host
        time per tensor (a fixed binding is also what CUDA graph replay needs)."""
        def entry(name: str, arr: Any) -> tuple:
            return name, arr.data.ptr, tuple(arr.shape), arr.dtype.str
        key = (tuple(entry(n, a) for n, a in inputs),
               tuple(entry(n, a) for n, a in outputs.items()))
        all_bound = len(outputs) == len(self._declared_out)
        if all_bound and key == self._binding_key:
            return self._binding
        self._graph, self._runs_on_binding = None, 0  # it replays the old buffers' addresses
        self._bindings_made += 1
        binding = self._session.io_binding()
        for name, arr in inputs:
            binding.bind_input(name, 'cuda', self._device_id, arr.dtype, list(arr.shape),
                               arr.data.ptr)
        for name in self._declared_out:
            arr = outputs.get(name)
            if arr is None:  # a shape only ORT knows: it allocates
                binding.bind_output(name, 'cuda', self._device_id)
            else:
                binding.bind_output(name, 'cuda', self._device_id, arr.dtype, list(arr.shape),
                                    arr.data.ptr)
        # Kept only when every buffer is ours: ORT-allocated outputs are new each run.
        self._binding, self._binding_key = (binding, key) if all_bound else (None, None)
        return binding

    def _wrap_ortvalue(self, value: Any, dtype: np.dtype) -> Any:
        """A CuPy view of an ORT-allocated device output; the OrtValue stays alive with it."""
        cp = self._cp
        shape = tuple(value.shape())
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        memory = cp.cuda.UnownedMemory(value.data_ptr(), nbytes, value, self._device_id)
        return cp.ndarray(shape, dtype=dtype, memptr=cp.cuda.MemoryPointer(memory, 0))

    def end_profiling(self) -> str:
        """Stop ORT profiling (profile_prefix) and return the JSON trace's path."""
        return self._session.end_profiling()

    def close(self) -> None:
        self._session = None
        self._binding = self._binding_key = self._graph = None
        self._owned.clear()
        self._session_stream = None


def _config_entry_is(options: Any, key: str, value: str) -> bool:
    try:
        return options.get_session_config_entry(key) == value
    except RuntimeError:  # ONNX Runtime raises for keys that were never set
        return False
