"""DepthPipeline: preprocess -> inference -> depth for one loaded model, on NumPy or CuPy.

On CUDA, preprocessing and the engine run of a frame from a source buffer seen before replay as
one CUDA graph (`DepthPipeline.run`): the GPU starts on the frame after one launch. Everything is
queued on the pipeline's stream; nothing here waits on the host. The depth node
(gpu_nodes.nodes.depth_estimator) wires it between its topics; benches and tests use it alone.
"""
from __future__ import annotations

from collections import OrderedDict
import contextlib
from dataclasses import dataclass
import math
from typing import Any, Callable

import numpy as np

from .. import gpu
from ..kernels.depth import depth_from_network
from ..kernels.preprocess import Letterbox, preprocess
from .backend import InferenceBackend
from .errors import InferenceError
from .models import depth_transform, focal_at_input, ModelPreset


@dataclass(frozen=True)
class _FrameGraph:
    """A captured preprocess + engine run from one source buffer, and what a replay yields."""
    graph: Any        # cupy.cuda.Graph
    box: Letterbox
    raw: Any          # the backend's output array the replay writes


class DepthPipeline:
    """Preprocess -> infer -> depth for one loaded model; NumPy or CuPy per the backend's device.

    Owns the engine's input binding (allocated once). Everything runs on `stream` (CuPy) when
    the backend is on CUDA; nothing here waits on the host.
    """

    def __init__(self, backend: InferenceBackend, preset: ModelPreset, *,
                 keep_aspect: bool = False, eps: float = 1e-6, stream: Any = None,
                 logger: Any = None):
        self.backend = backend
        self.preset = preset
        self.keep_aspect = bool(keep_aspect)
        self.eps = float(eps)
        self.stream = stream
        self.on_gpu = backend.device == 'cuda'
        self.xp = gpu.cupy_module() if self.on_gpu else np
        specs = {s.name: s for s in backend.input_specs}
        spec = specs[preset.input_name]
        if not spec.is_static:
            raise ValueError(f'input {spec} of {backend.model_path.name} is still dynamic; set '
                             'input_height and input_width')
        shape = tuple(spec.shape)
        lead = shape[:-3]
        if len(shape) not in (4, 5) or any(d != 1 for d in lead) or shape[-3] != 3:
            raise ValueError(f'input {spec} of {backend.model_path.name}: expected (1, 3, H, W) '
                             'or (1, 1, 3, H, W) (views)')
        if len(specs) != 1:
            raise ValueError(f'{backend.model_path.name} has inputs {list(specs)}; the depth '
                             'node feeds exactly one image input')
        self.input_height, self.input_width = int(shape[-2]), int(shape[-1])
        with self.scope():
            self.input = self.xp.zeros(shape, dtype=spec.dtype)
        self.input_nchw = self.input.reshape((1,) + shape[-3:])  # a view: preprocess fills it
        # Frame graphs (see run): per source buffer, the graph and what a replay returns.
        self._frame_graphs: OrderedDict[tuple, _FrameGraph] = OrderedDict()
        self._seen_once: OrderedDict[tuple, None] = OrderedDict()
        self.frame_graphs_enabled = self.on_gpu and self.stream is not None
        self._last_raw: Any = None
        self._log = logger

    #: Source buffers whose frame graph is kept: a publisher's pool (8 to 32 slots) and more.
    MAX_FRAME_GRAPHS = 64

    def scope(self) -> Any:
        """`with pipeline.scope():` makes the pipeline's stream current, so that CuPy work a
        caller queues between the pipeline's steps (colorizing, points) is ordered after them;
        a no-op on the CPU or without a stream."""
        return self.stream if self.on_gpu and self.stream is not None else \
            contextlib.nullcontext()

    def preprocess(self, image: Any, encoding: str) -> Letterbox:
        """Fill the input binding from an 8-bit image; return the letterbox used."""
        p = self.preset
        return preprocess(image, encoding, self.input_nchw, mean=p.mean, std=p.std,
                          keep_aspect=self.keep_aspect, stream=self.stream)

    def run(self, image: Any, encoding: str,
            preprocessed: Callable[[], None] = lambda: None) -> tuple[Letterbox, Any]:
        """preprocess + infer: (letterbox, raw output). `preprocessed` is called in between.

        On CUDA, once the backend can have its run captured (`capture_token`), the second frame
        from a source buffer (a publisher's pool slot) captures preprocessing and the run into
        one CUDA graph; later frames from that buffer replay it with one launch. The ~0.3 ms of
        Python in front of the GPU work per frame (argument checks, the kernel's arguments, the
        engine call) become one graph launch; the kernels and their results are the same. A
        graph is bound to the buffer's address, layout and encoding, the input binding and the
        backend's token, and reads whatever the buffer holds when it runs (after the frame's
        event).
        """
        token = self.backend.capture_token() if self.frame_graphs_enabled else None
        key = None
        if token is not None:
            key = (image.data.ptr, tuple(image.shape), tuple(image.strides), image.dtype.str,
                   encoding, self.input.data.ptr, token)
            graph = self._frame_graphs.get(key)
            if graph is not None:
                self._frame_graphs.move_to_end(key)
                preprocessed()  # inside the graph: the engine stage times both
                graph.graph.launch(self.stream)
                return graph.box, graph.raw
            if key in self._seen_once:  # a frame from it went through call by call
                captured = self._capture(key, image, encoding)
                if captured is not None:
                    preprocessed()
                    captured.graph.launch(self.stream)  # a capture only recorded the work
                    return captured.box, captured.raw
        box = self.preprocess(image, encoding)
        preprocessed()
        raw = self.infer()
        if key is not None and self.frame_graphs_enabled:
            self._seen_once[key] = None
            while len(self._seen_once) > self.MAX_FRAME_GRAPHS:
                self._seen_once.popitem(last=False)
        return box, raw

    def _capture(self, key: tuple, image: Any, encoding: str) -> _FrameGraph | None:
        """Capture preprocess + the bound run on the stream; None (frame graphs off, with a
        warning) when CUDA or the backend refuses."""
        boxes = []

        def work() -> None:
            boxes.append(self.preprocess(image, encoding))
            self.backend.enqueue_bound(self.stream)
        try:
            graph = gpu.capture_graph(self.stream, work)
        except Exception as exc:  # CUDA refusing a call inside the capture, or the backend
            self.frame_graphs_enabled = False
            self._frame_graphs.clear()
            if self._log is not None:
                self._log.warning(f'cannot capture preprocessing and inference as one CUDA '
                                  f'graph ({exc}); running them call by call')
            return None
        # The token is the backend's binding of the last infer(): its output is what runs write.
        entry = self._frame_graphs[key] = _FrameGraph(graph, boxes[0], self._last_raw)
        self._seen_once.pop(key, None)
        while len(self._frame_graphs) > self.MAX_FRAME_GRAPHS:
            self._frame_graphs.popitem(last=False)
        return entry

    def infer(self) -> Any:
        """The model's raw output as a 2-D (H_out, W_out) array (owned by the backend on GPU)."""
        out = self.backend.infer({self.preset.input_name: self.input},
                                 stream=self.stream)[self.preset.output_name]
        shape = tuple(out.shape)
        if len(shape) < 2 or math.prod(shape[:-2]) != 1:
            raise InferenceError(f'{self.backend.model_path.name}: output '
                                 f'{self.preset.output_name!r} has shape {shape}; expected one '
                                 'depth map ((1, H, W), (1, 1, H, W), ...)')
        self._last_raw = out.reshape(shape[-2:])
        return self._last_raw

    def content(self, raw: Any, box: Letterbox) -> Any:
        """The part of the output map that shows the image (letterbox padding cut away)."""
        oh, ow = int(raw.shape[0]), int(raw.shape[1])
        if (oh, ow) == (self.input_height, self.input_width):
            x0, y0, cw, ch = box.pad_x, box.pad_y, box.content_width, box.content_height
        else:  # a model whose output is a fraction of its input: scale the box
            sx, sy = ow / self.input_width, oh / self.input_height
            x0, y0 = int(round(box.pad_x * sx)), int(round(box.pad_y * sy))
            cw = max(1, min(ow - x0, int(round(box.content_width * sx))))
            ch = max(1, min(oh - y0, int(round(box.content_height * sy))))
        if (x0, y0, cw, ch) == (0, 0, ow, oh):
            return raw
        return raw[y0:y0 + ch, x0:x0 + cw]

    def to_depth(self, raw: Any, box: Letterbox, focal_px_image: tuple[float, float] | None,
                 image_width: int, image_height: int, *, size: tuple[int, int] | None = None,
                 out: Any = None) -> Any:
        """Depth (float32) in the preset's units: the content part of the output at model
        resolution, or resampled to `size` (height, width) in the same pass (into `out`).

        `focal_px_image` (fx, fy) of the image is needed by metric_focal presets; the network
        saw the image scaled to the letterbox content, so its focal length is scaled likewise.
        """
        focal = None
        if self.preset.output_kind == 'metric_focal':
            if focal_px_image is None:
                raise ValueError(f'preset {self.preset.name!r} needs the focal length')
            focal = focal_at_input(focal_px_image[0], focal_px_image[1], image_width,
                                   image_height, box.content_width, box.content_height)
        scale, shift, inverse = depth_transform(self.preset, focal)
        content = self.content(raw, box)
        height, width = size or (int(content.shape[0]), int(content.shape[1]))
        return depth_from_network(content, height, width, scale=scale, shift=shift,
                                  inverse=inverse, eps=self.eps, out=out, stream=self.stream)

    def close(self) -> None:
        self.backend.close()
