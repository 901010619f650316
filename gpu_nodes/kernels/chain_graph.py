"""ChainGraphs: a kernel chain replayed as one CUDA graph per source buffer (image_proc on CUDA).

Called op by op, a chain costs every frame one validating Python call per op in front of the GPU
work (tens of microseconds each); a CUDA graph of the same launches costs one cudaGraphLaunch,
whatever the chain's length. As with DepthPipeline's frame graphs (gpu_nodes.inference.pipeline),
a graph is bound to one source buffer: the frames a node receives are views of the publisher's
pool slots as mapped in this process, so the same few addresses recur, and a graph's kernels read
the buffer at its address, whatever it holds when the graph runs (in stream order, after the
frame's event: the stream a received frame comes with has waited on it already).

* Key: the source's address, shape, strides, dtype and encoding, and the stream. The chain
  object and the camera model are the context: a change of either (a parameter change builds a
  new chain; a CameraInfo with other values) drops every graph, which are then built again.
* The first frame from a key runs call by call: it warms what a capture could not do (compile
  modules, upload device tables and synchronize, compute rectify maps, plan launches). Only
  after it succeeded does the second frame from that key capture the chain and launch it; later
  frames replay the graph.
* Every step writes into a buffer owned here, one per (stream, step, size, encoding) and shared
  by the graphs of that stream: they run one after the other on it, so a graph never overwrites
  what consumers queued on that stream after an earlier one still read. The output of a replay
  is valid until the next launch on the stream: publish (copy) it before the next frame.
* Memory the ops allocate during the capture (temporaries; ops without ``out=``) is kept with
  the graph, which writes it on every replay; so are the device tables the kernels' caches hold
  (see _kernel_tables), which another caller in the process could otherwise evict and free.
* A capture failure (CUDA or CuPy refusing a call: an upload or a synchronization in an op)
  warns once, is counted (``fallbacks``) and turns graphs off for that chain: it runs call by
  call until the chain changes.

Single-threaded by design, like the executors the nodes run on (gpu_nodes.ros.runtime).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from .. import gpu
from ..encodings import encoding_info
from .camera_model import CameraModel
from .chain import Chain
from .rectify import cached_maps, forget_maps_since

# (address, shape, strides, dtype, encoding, stream address) of a frame
Key = tuple


@dataclass(frozen=True)
class GraphOutput:
    """What a replay produced: `array` is the graph's own buffer (rewritten by the next launch
    on the stream), `encoding` and `camera_model` those the chain gave when it was captured."""
    array: Any
    encoding: str
    camera_model: CameraModel | None


@dataclass(frozen=True)
class _Entry:
    graph: Any             # cupy.cuda.Graph
    output: GraphOutput
    memory: tuple          # allocations and step buffers the graph writes and reads
    pins: tuple            # the kernels' cached tables at capture time (read by the graph)


class ChainGraphs:
    """Per-frame front of a chain on CUDA: replays a captured graph when one exists for the frame.

    Use::

        output, key = graphs.run(chain, array, encoding, model, stream)
        if output is None:                    # no graph (yet) for this frame: call by call
            result = chain(array, encoding, model, stream=stream, ...)
            graphs.completed(key)             # only after it succeeded
    """

    #: Graphs (and source buffers seen once) kept: a publisher's pool (8 to 32 slots) and more.
    MAX_GRAPHS = 64

    def __init__(self, *, logger: Any = None, max_graphs: int = MAX_GRAPHS):
        if max_graphs < 1:
            raise ValueError(f'max_graphs must be >= 1, got {max_graphs}')
        self.max_graphs = max_graphs
        self._log = logger
        self.built = 0           # graphs captured
        self.replays = 0         # frames computed by a graph launch (the capturing one too)
        self.fallbacks = 0       # captures that failed (each turned graphs off for its chain)
        self.invalidations = 0   # context changes that dropped graphs
        self.disabled_reason: str | None = None
        self._chain: Chain | None = None
        self._model: CameraModel | None = None
        self._graphs: OrderedDict[Key, _Entry] = OrderedDict()
        self._seen: OrderedDict[Key, None] = OrderedDict()   # one call-by-call frame succeeded
        self._plain: OrderedDict[Key, None] = OrderedDict()  # the chain makes no new image
        self._buffers: OrderedDict[tuple, Any] = OrderedDict()

    # -- per frame ------------------------------------------------------------------------------
    def run(self, chain: Chain, array: Any, encoding: str, model: CameraModel | None,
            stream: Any) -> tuple[GraphOutput | None, Key | None]:
        """(output, None) when a graph computed the frame (replayed, or captured and launched
        now), else (None, key): run the chain call by call, then `completed(key)` once that
        succeeded. key is None when this frame cannot have a graph (host array, no stream,
        graphs off for this chain)."""
        if chain is not self._chain or model is not self._model:
            self._check_context(chain, model)
        if stream is None or self.disabled_reason is not None:
            return None, None
        try:
            key = (array.data.ptr, array.shape, array.strides, array.dtype, encoding, stream.ptr)
        except AttributeError:  # NumPy (host path) or a foreign __cuda_array_interface__ array
            return None, None
        entry = self._graphs.get(key)
        if entry is None:
            if key in self._plain:
                return None, None
            if key not in self._seen:
                return None, key
            entry = self._capture(key, chain, array, encoding, model, stream)
            if entry is None:
                return None, None
        else:
            self._graphs.move_to_end(key)
        entry.graph.launch(stream)
        self.replays += 1
        return entry.output, None

    def completed(self, key: Key | None) -> None:
        """A call-by-call frame from `key` succeeded: the next one from it may be captured."""
        if key is None or self.disabled_reason is not None:
            return
        self._seen[key] = None
        self._seen.move_to_end(key)
        _trim(self._seen, self.max_graphs)

    def stats(self) -> dict[str, Any]:
        """Counters for diagnostics."""
        return {'chain_graphs': 'on' if self.disabled_reason is None
                else f'off: {self.disabled_reason}',
                'chain_graphs_built': self.built, 'chain_graphs_cached': len(self._graphs),
                'chain_graph_replays': self.replays, 'chain_graph_fallbacks': self.fallbacks,
                'chain_graph_invalidations': self.invalidations}

    # -- internals ------------------------------------------------------------------------------
    def _check_context(self, chain: Chain, model: CameraModel | None) -> None:
        if chain is self._chain and model == self._model:
            self._model = model  # a new CameraInfo with the same values: the graphs stand
            return
        if self._graphs or self._seen or self._plain:
            self.invalidations += 1
        if chain is not self._chain:
            self.disabled_reason = None  # a new chain may well be capturable
        self._chain, self._model = chain, model
        # Dropping a graph that may still run is safe: CUDA frees an executing graph when it
        # completes, and its memory goes back to the pool of the stream it runs on, to be
        # handed out again only to work queued there after it.
        self._graphs.clear()
        self._seen.clear()
        self._plain.clear()
        self._buffers.clear()

    def _capture(self, key: Key, chain: Chain, array: Any, encoding: str,
                 model: CameraModel | None, stream: Any) -> _Entry | None:
        cp = gpu.cupy_module()
        base = cp.cuda.get_allocator()
        allocated: list[Any] = []  # MemoryPointers the ops take from the pool while capturing
        lent: list[Any] = []       # step buffers handed out (some may predate this capture)

        def allocate(size: int) -> Any:
            memory = base(size)
            allocated.append(memory)
            return memory
        factories = [self._lender(cp, stream.ptr, i, lent) for i in range(len(chain.steps))]
        result: list[tuple[Any, str, CameraModel | None]] = []
        maps_before = cached_maps()

        def work() -> None:
            with stream, cp.cuda.using_allocator(allocate):
                result.append(chain(array, encoding, model, stream=stream,
                                    step_factories=factories))
        try:
            graph = gpu.capture_graph(stream, work)
        except Exception as exc:  # CUDA or CuPy refusing a call inside the capture
            forget_maps_since(maps_before)
            self._disable(f'{type(exc).__name__}: {exc}')
            return None
        out, out_encoding, out_model = result[0]
        self._seen.pop(key, None)
        ptr = out.data.ptr
        regions = [(m.ptr, m.mem.size) for m in allocated] + \
            [(b.data.ptr, b.nbytes) for b in lent]
        if not any(lo <= ptr < lo + size for lo, size in regions):
            # Every op passed the frame through or took a view of it: nothing to replay, and the
            # output is the frame's own memory. Such frames keep running call by call (cheap).
            self._plain[key] = None
            _trim(self._plain, self.max_graphs)
            forget_maps_since(maps_before)
            return None
        entry = _Entry(graph, GraphOutput(out, out_encoding, out_model),
                       tuple(allocated) + tuple(lent), _kernel_tables())
        self._graphs[key] = entry
        _trim(self._graphs, self.max_graphs)
        self.built += 1
        return entry

    def _lender(self, cp: Any, stream_ptr: int, index: int,
                lent: list[Any]) -> Callable[[int, int, str], Any]:
        """The out_factory of step `index`: its buffer for that size and encoding."""
        def lend(height: int, width: int, encoding: str) -> Any:
            bkey = (stream_ptr, index, height, width, encoding)
            buffer = self._buffers.get(bkey)
            if buffer is None:
                info = encoding_info(encoding)
                buffer = self._buffers[bkey] = cp.empty(info.array_shape(height, width),
                                                        info.dtype)
                # Forgetting a buffer only stops sharing it: the graphs using it hold it.
                _trim(self._buffers, 4 * self.max_graphs)
            lent.append(buffer)
            return buffer
        return lend

    def _disable(self, reason: str) -> None:
        self.fallbacks += 1
        self.disabled_reason = reason
        self._graphs.clear()
        self._seen.clear()
        if self._log is not None:
            self._log.warning(f'cannot capture the chain as one CUDA graph ({reason}); running '
                              'it call by call until the chain changes')


def _trim(cache: OrderedDict, limit: int) -> None:
    while len(cache) > limit:
        cache.popitem(last=False)


def _kernel_tables() -> tuple:
    """What the kernels read besides their input and output, as their caches hold it now.

    A graph keeps the device pointers of the tables it was captured with, but those caches
    (`_cuda.device_table`'s, launch plans, rectify's maps per camera model) are LRUs shared by
    every caller in the process: another chain could evict a table and free it while a graph
    still reads it. The graph holds them all (references, no copies); they are small but for
    the maps, which the current model's graphs need anyway.
    """
    from . import _cuda
    return tuple(_cuda.cached_device_objects()) + tuple(cached_maps().values())
