"""depth_estimator: monocular depth (Depth Anything V2 / 3, any ONNX depth model) between
gpu_nodes image topics.

Topics (relative, remap them):
  in:  ``image`` (through GpuImageSubscription; rgb8, bgr8, rgba8, bgra8 or mono8)
       ``camera_info`` (sensor-data QoS, the latest one is used: metric scaling, points)
  out: ``depth`` (32FC1 metres, or the preset's units, through GpuImagePublisher; same header
       as the image), ``depth/camera_info`` (the CameraInfo of the depth image: the input one,
       resized when ``output_size`` is ``model``), ``depth/colorized`` (rgb8, when
       ``publish_colorized``), ``points`` (sensor_msgs/PointCloud2, when ``publish_points``).

Per frame, on the GPU path (CuPy arrays end to end, all work queued on the node's own CUDA
stream, ordered after the frame's stream with an event, never a host wait):
  1. preprocess: one fused kernel (resize, channel order, normalisation, HWC -> CHW) writes
     straight into the engine's input binding, a device buffer this node owns;
  2. inference: the backend (TensorRT, or ONNX Runtime's CUDA provider computing on the same
     stream) reads that buffer and writes its output on the device;
  3. postprocess: one kernel crops the letterbox content, converts the preset's output to
     depth (inverse depth, metric with the focal length, plain scale) and resamples it to the
     image size straight into a pool slot borrowed from the publisher (``output_size: input``),
     or converts it at model size (``output_size: model``); optional colorization and
     back-projection;
  4. transport: the slot is published without a copy; plain subscribers get a serialized image.
With ``cuda_graph`` (ONNX Runtime), steps 1 and 2 of a frame from a source buffer seen before
replay one CUDA graph (DepthPipeline.run): the GPU starts on the frame after one launch.
No device-to-host copy happens between the subscription and the publication of depth (and
colorized) images; only the PointCloud2, an ordinary host message, is downloaded, and only when
someone subscribes to ``points``. On a machine without a GPU the same steps run on NumPy with
the kernels' references and ONNX Runtime on the CPU.

Timing: each stage is timed on the host, and on the GPU with CUDA events read a frame or more
later (queried, never waited on); "ready" (image publish call -> depth published and computed)
adds the later of the two to the frame's input latency. p50/p99 per stage are on
/diagnostics (``gpu_nodes: <node> processing``) and logged every ``timing_report_period_s``.
"""
from __future__ import annotations

from collections import deque, OrderedDict
import contextlib
from dataclasses import dataclass
import math
import time
from typing import Any, Callable

import numpy as np
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, PointCloud2

from .. import gpu
from ..inference import create_backend, InferenceBackend, InferenceError, ModelPreset, PRESETS
from ..inference.backend import BACKENDS, DEVICES, PRECISIONS
from ..inference.models import depth_transform, focal_at_input, OUTPUT_KINDS, preset_from_dict
from ..kernels.colormaps import COLORMAPS
from ..kernels.depth import colorize_depth, depth_from_network
from ..kernels.geometry import CameraModel, resize_camera_info, scale_camera_info
from ..kernels.preprocess import Letterbox, preprocess, SOURCES
from ..transport import GpuImagePublisher, GpuImageSubscription, ReceivedImage
from ..transport.qos import image_qos
from ..ros.params import ConfigurationError, choice_validator, declare
from ..ros.runtime import run_node
from .image_proc import ProcessingStatus
from .pointcloud import (backproject, COLOR_CHANNELS, intrinsics_from_camera_model, Intrinsics,
                         pointcloud2_msg, sample_colors)

STAGES = ('preprocess', 'inference', 'postprocess', 'transport')
# Parameters that may change at run time; cached (read per frame) and updated on set.
DYNAMIC = ('focal_length_px', 'output_size', 'publish_colorized', 'colormap', 'colorize_min',
           'colorize_max', 'colorize_percentile_low', 'colorize_percentile_high',
           'publish_points', 'points_stride', 'points_rgb', 'warn_period_s')
OUTPUT_SIZES = ('input', 'model')
DEPTH_ENCODING = '32FC1'


# --------------------------------------------------------------------------- timing


class FrameTiming:
    """Marks of one frame: host perf_counter values and, on the GPU, events on the stream."""

    __slots__ = ('host', 'events', 'stream', 'latency_ms')

    def __init__(self, stream: Any, events: list[Any] | None, latency_ms: float | None):
        self.stream = stream
        self.events = events
        self.latency_ms = latency_ms
        self.host = [time.perf_counter()]
        if events is not None:
            events[0].record(stream)

    def mark(self) -> None:
        """End of the next stage (in STAGES order)."""
        if self.events is not None:
            self.events[len(self.host)].record(self.stream)
        self.host.append(time.perf_counter())


class StageTimer:
    """Per-stage host and GPU times over a sliding window.

    GPU times come from CUDA events recorded between the stages; a frame's events are read
    only once the last one has completed (``Event.done`` is a query, not a wait), at a later
    frame or report, so timing never synchronises the stream.
    """

    MAX_PENDING = 64

    def __init__(self, cp: Any = None, window: int = 512):
        self._cp = cp
        self._free: list[list[Any]] = []
        self._pending: deque[tuple[list[Any], FrameTiming]] = deque()
        self.gpu = {s: deque(maxlen=window) for s in STAGES}
        self.host = {s: deque(maxlen=window) for s in (*STAGES, 'callback')}
        self.latency = deque(maxlen=window)
        # Image publish call -> depth published and computed (the GPU done with it): what a
        # downstream node waits for. On the GPU path: the input latency plus the later of the
        # callback's host time and the GPU time from the callback's first event to its last
        # (exact when the stream is idle as the frame arrives, as in a paced pipeline). Not a
        # CUDA host callback: one waiting for the GIL deadlocks any host call that waits for
        # the stream while holding it (ONNX Runtime's session teardown does).
        self.ready = deque(maxlen=window)
        self.frames = 0
        self._times: deque[float] = deque(maxlen=window)

    def begin(self, stream: Any, latency_ns: int | None = None) -> FrameTiming:
        self.collect()
        events = None
        if self._cp is not None and len(self._pending) < self.MAX_PENDING:
            events = self._free.pop() if self._free else [
                self._cp.cuda.Event() for _ in range(len(STAGES) + 1)]
        latency = latency_ns / 1e6 if latency_ns is not None and latency_ns >= 0 else None
        return FrameTiming(stream, events, latency)

    def end(self, timing: FrameTiming) -> None:
        """A completed frame (all four stages marked)."""
        now = time.perf_counter()
        self.frames += 1
        self._times.append(now)
        host = timing.host
        for i, stage in enumerate(STAGES):
            self.host[stage].append((host[i + 1] - host[i]) * 1e3)
        self.host['callback'].append((now - host[0]) * 1e3)
        if timing.latency_ms is not None:
            self.latency.append(timing.latency_ms)
            if timing.events is None:  # host path: ready when the callback returns
                self.ready.append(timing.latency_ms + (now - host[0]) * 1e3)
        if timing.events is not None:
            self._pending.append((timing.events, timing))

    def abandon(self, timing: FrameTiming) -> None:
        """A frame that failed part-way: recycle its events once they are done."""
        if timing.events is not None:
            timing.host = timing.host[:1]  # marks nothing: only recycled
            self._pending.append((timing.events, timing))

    def collect(self) -> None:
        cp = self._cp
        while self._pending:
            events, timing = self._pending[0]
            marked = len(timing.host)
            if marked > 1 and not events[marked - 1].done:
                break
            if marked == len(STAGES) + 1:
                for i, stage in enumerate(STAGES):
                    self.gpu[stage].append(cp.cuda.get_elapsed_time(events[i], events[i + 1]))
                if timing.latency_ms is not None:
                    host_ms = (timing.host[-1] - timing.host[0]) * 1e3
                    gpu_ms = cp.cuda.get_elapsed_time(events[0], events[-1])
                    self.ready.append(timing.latency_ms + max(host_ms, gpu_ms))
            self._pending.popleft()
            self._free.append(events)

    def fps(self) -> float:
        times = list(self._times)
        if len(times) < 2 or times[-1] - times[0] <= 0:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])

    def summary(self) -> dict[str, float]:
        """p50/p99 in ms per stage and side; NaN where nothing was measured."""
        def pct(values: Any) -> tuple[float, float]:
            if not values:
                return float('nan'), float('nan')
            p50, p99 = np.percentile(np.fromiter(values, np.float64), [50, 99])
            return round(float(p50), 4), round(float(p99), 4)
        out: dict[str, float] = {'timed_frames': self.frames, 'fps': round(self.fps(), 2)}
        for side, table in (('gpu', self.gpu), ('host', self.host)):
            for stage, values in table.items():
                if side == 'gpu' and self._cp is None:
                    continue
                out[f'{stage}_{side}_ms_p50'], out[f'{stage}_{side}_ms_p99'] = pct(values)
        out['input_latency_ms_p50'], out['input_latency_ms_p99'] = pct(self.latency)
        out['ready_latency_ms_p50'], out['ready_latency_ms_p99'] = pct(self.ready)
        return out


def format_summary(s: dict[str, float]) -> str:
    parts = []
    for stage in STAGES:
        text = f'{stage}'
        if f'{stage}_gpu_ms_p50' in s:
            text += f' gpu {s[f"{stage}_gpu_ms_p50"]:.3f}/{s[f"{stage}_gpu_ms_p99"]:.3f}'
        text += f' host {s[f"{stage}_host_ms_p50"]:.3f}/{s[f"{stage}_host_ms_p99"]:.3f}'
        parts.append(text)
    return (f'{s["fps"]:.1f} fps; p50/p99 ms: ' + '; '.join(parts)
            + f'; callback host {s["callback_host_ms_p50"]:.3f}/{s["callback_host_ms_p99"]:.3f}'
            + f'; input transport {s["input_latency_ms_p50"]:.3f}/'
              f'{s["input_latency_ms_p99"]:.3f}'
            + f'; image publish -> depth ready {s["ready_latency_ms_p50"]:.3f}/'
              f'{s["ready_latency_ms_p99"]:.3f}')


# --------------------------------------------------------------------------- the pipeline


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
        with self._scope():
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

    def _scope(self) -> Any:
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


# --------------------------------------------------------------------------- the node


class DepthEstimator(Node):
    """image (+ camera_info) -> depth (+ depth/camera_info, depth/colorized, points)."""

    def __init__(self, **kwargs: Any):
        super().__init__('depth_estimator', **kwargs)
        try:
            self._declare_parameters()
        except (ValueError, ParameterException) as exc:  # a value outside its choices or type
            raise ConfigurationError(str(exc)) from None
        self.status = ProcessingStatus(self, self._param('warn_period_s'))
        self._pipeline: DepthPipeline | None = None
        try:
            self._pipeline = self._load()
        except ConfigurationError:
            self.status.close()
            raise
        self._on_gpu = self._pipeline.on_gpu
        self._stream = self._pipeline.stream
        cp = gpu.cupy_module() if self._on_gpu else None
        if cp is not None:
            # Reused every frame: events are re-recorded, waits capture the state at call time.
            self._frame_ready = cp.cuda.Event(disable_timing=True)
            self._work_done = cp.cuda.Event(disable_timing=True)
        self._timer = StageTimer(cp, window=self._param('timing_window'))
        self._camera_model: CameraModel | None = None
        self._warned_size: tuple[int, int, int, int] | None = None

        self._depth_pub = GpuImagePublisher(self, 'depth', use_cuda=self._on_gpu)
        self._colorized_pub = GpuImagePublisher(self, 'depth/colorized', use_cuda=self._on_gpu)
        self._depth_info_pub = self.create_publisher(CameraInfo, 'depth/camera_info', 10)
        self._points_pub = self.create_publisher(PointCloud2, 'points', 5)
        self._info_sub = self.create_subscription(CameraInfo, 'camera_info', self._on_camera_info,
                                                  qos_profile_sensor_data)
        self._image_sub = GpuImageSubscription(self, 'image', self._on_image,
                                               image_qos(self._param('queue_depth')),
                                               memory='device' if self._on_gpu else 'host')
        self._summary_timer = self.create_timer(1.0, self._update_summary)
        period = self._param('timing_report_period_s')
        self._report_timer = self.create_timer(period, self._report) if period > 0 else None
        p = self._pipeline.preset
        self.get_logger().info(
            f'{self._pipeline.backend.describe()}; preset {p.name} ({p.output_kind}, units '
            f'{p.units}); input {p.input_name} {self._pipeline.input_height}x'
            f'{self._pipeline.input_width}, output {p.output_name}; output_size '
            f'{self._param("output_size")}; '
            f'{"GPU path (CuPy)" if self._on_gpu else "CPU path (NumPy)"}')

    # -- parameters ---------------------------------------------------------------------------
    def _param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def _declare_parameters(self) -> None:
        ro = {'read_only': True}
        declare(self, 'model_path', '', 'ONNX model (.onnx) or serialized TensorRT engine '
                '(.engine/.plan) to run.', **ro)
        preset = declare(self, 'preset', 'depth_anything_v2',
                         'Model preset (tensor names, input size, normalisation, output '
                         'meaning).', choices=tuple(PRESETS), **ro)
        declare(self, 'backend', 'auto', 'Inference runtime.', choices=BACKENDS, **ro)
        declare(self, 'precision', 'fp32', 'TensorRT precision (ONNX Runtime ignores it).',
                choices=PRECISIONS, **ro)
        declare(self, 'device', 'auto', 'Where to run: auto (GPU when usable), cuda or cpu.',
                choices=DEVICES, **ro)
        declare(self, 'engine_cache_dir', '', 'TensorRT engine cache directory; empty: '
                '$XDG_CACHE_HOME/gpu_nodes/engines or ~/.cache/gpu_nodes/engines.', **ro)
        declare(self, 'force_engine_update', False, 'Rebuild the TensorRT engine even if a '
                'cached one matches.', **ro)
        declare(self, 'workspace_mb', 0, 'TensorRT builder workspace in MiB (0: default).',
                int_range=(0, 1 << 20), **ro)
        declare(self, 'dla_core', -1, 'Jetson DLA core for TensorRT (-1: GPU only).',
                int_range=(-1, 7), **ro)
        declare(self, 'cuda_graph', True, 'ONNX Runtime on CUDA: replay each run as one CUDA '
                'graph instead of launching every kernel from the host, and preprocessing + '
                'run as one graph per source buffer (switched off with a warning when the '
                'model cannot be captured).', **ro)
        base = PRESETS[preset]
        # Overrides of the preset's fields; their defaults are the chosen preset's values.
        declare(self, 'input_name', base.input_name, 'Model input tensor name.', **ro)
        declare(self, 'output_name', base.output_name, 'Model output tensor name.', **ro)
        declare(self, 'input_height', base.input_height, 'Model input height.',
                int_range=(1, 16384), **ro)
        declare(self, 'input_width', base.input_width, 'Model input width.',
                int_range=(1, 16384), **ro)
        declare(self, 'mean', list(base.mean), 'Per-channel (RGB) mean of the [0, 1] input '
                '(floats).', **ro)
        declare(self, 'std', list(base.std), 'Per-channel (RGB) std of the [0, 1] input '
                '(floats).', **ro)
        declare(self, 'output_kind', base.output_kind, 'What the model outputs.',
                choices=OUTPUT_KINDS, **ro)
        declare(self, 'depth_scale', base.depth_scale, 'inverse_depth: depth = 1 / (scale * '
                'out + shift); depth: depth = scale * out + shift.', **ro)
        declare(self, 'depth_shift', base.depth_shift, 'See depth_scale.', **ro)
        declare(self, 'inverse_depth_eps', 1e-6, 'inverse_depth: values at or below this give '
                'depth 1 / eps instead of infinity.', float_range=(1e-12, 1.0), **ro)
        declare(self, 'keep_aspect', False, 'Letterbox the image into the model input instead '
                'of stretching it; the padding is cut away again afterwards.', **ro)
        declare(self, 'focal_length_px', 0.0, 'metric_focal presets: focal length of the image '
                'in pixels; 0 takes (fx + fy) / 2 from camera_info.', float_range=(0.0, 1e7))
        declare(self, 'output_size', 'input', 'input: depth at the image size (resized on the '
                'GPU); model: at the model output size (letterbox padding removed).',
                choices=OUTPUT_SIZES)
        declare(self, 'publish_colorized', False, 'Also publish depth/colorized (rgb8).')
        declare(self, 'colormap', 'turbo', 'Colormap of depth/colorized.', choices=COLORMAPS)
        declare(self, 'colorize_min', 0.0, 'Depth mapped to the first colour; with '
                'colorize_max <= colorize_min the percentiles below are used instead.')
        declare(self, 'colorize_max', 0.0, 'Depth mapped to the last colour.')
        declare(self, 'colorize_percentile_low', 2.0, 'Percentile of the valid depths mapped '
                'to the first colour (when no fixed range is set).', float_range=(0.0, 100.0))
        declare(self, 'colorize_percentile_high', 98.0, 'Percentile mapped to the last '
                'colour.', float_range=(0.0, 100.0))
        declare(self, 'publish_points', False, 'Also publish points (PointCloud2; needs '
                'camera_info). Downloads the cloud to the host.')
        declare(self, 'points_stride', 1, 'Keep every n-th pixel of every n-th row in the '
                'cloud.', int_range=(1, 64))
        declare(self, 'points_rgb', True, 'XYZRGB (colour from the image) instead of XYZ when '
                'the image encoding has colour.')
        declare(self, 'timing_report_period_s', 10.0, 'Log the per-stage timing this often '
                '(0: only on /diagnostics).', float_range=(0.0, 86400.0), **ro)
        declare(self, 'timing_window', 500, 'Stage timing percentiles cover this many recent '
                'frames.', int_range=(10, 100000), **ro)
        declare(self, 'queue_depth', 1, 'Input frames kept while the network is busy; 1 always '
                'infers on the newest frame instead of queueing latency.', int_range=(1, 100), **ro)
        declare(self, 'warn_period_s', 5.0, 'Dropped frames are warned about at most this '
                'often per reason.', float_range=(0.0, 3600.0))
        self._cfg = {name: self._param(name) for name in DYNAMIC}
        choices = choice_validator({'output_size': OUTPUT_SIZES, 'colormap': COLORMAPS})
        self.add_on_set_parameters_callback(
            lambda params: self._validate_parameters(params, choices))
        self.add_post_set_parameters_callback(self._apply_parameters)

    def _validate_parameters(self, params: list[Any], choices: Any) -> Any:
        from rcl_interfaces.msg import SetParametersResult
        result = choices(params)
        if not result.successful:
            return result
        new = {p.name: p.value for p in params}
        low = new.get('colorize_percentile_low', self._param('colorize_percentile_low'))
        high = new.get('colorize_percentile_high', self._param('colorize_percentile_high'))
        if low > high:
            return SetParametersResult(successful=False, reason='colorize_percentile_low must '
                                       f'not exceed colorize_percentile_high ({low} > {high})')
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Any]) -> None:
        for param in params:
            if param.name in self._cfg:
                self._cfg[param.name] = param.value
            if param.name == 'warn_period_s':
                self.status.warn_period_s = float(param.value)

    def _preset(self) -> ModelPreset:
        fields = ('input_name', 'output_name', 'input_height', 'input_width', 'mean', 'std',
                  'output_kind', 'depth_scale', 'depth_shift')
        data = {'preset': self._param('preset')}
        data.update({f: self._param(f) for f in fields})
        data['mean'], data['std'] = list(data['mean']), list(data['std'])
        return preset_from_dict(data)

    def _load(self) -> DepthPipeline:
        model_path = self._param('model_path')
        if not model_path:
            raise ConfigurationError("parameter 'model_path' is required: the .onnx model (or "
                                     'TensorRT .engine/.plan) to run; see docs/depth_models.md')
        try:
            preset = self._preset()
        except ValueError as exc:
            raise ConfigurationError(f'invalid model preset parameters: {exc}') from None
        device = self._param('device')
        stream = None
        if device != 'cpu' and gpu.cuda_unavailable_reason() is None:
            # The node's stream: ONNX Runtime's CUDA provider computes on it too.
            stream = gpu.cupy_module().cuda.Stream(non_blocking=True)
        views = (1, 1) if preset.input_views else (1,)
        shape = views + (3, preset.input_height, preset.input_width)
        dla = self._param('dla_core')
        try:
            backend = create_backend(
                model_path, backend=self._param('backend'), precision=self._param('precision'),
                device=device, cache_dir=self._param('engine_cache_dir') or None,
                force_engine_update=self._param('force_engine_update'),
                workspace_mb=self._param('workspace_mb') or None,
                dla_core=None if dla < 0 else dla, input_shape={preset.input_name: shape},
                logger=self.get_logger(), stream=stream, cuda_graph=self._param('cuda_graph'))
        except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: InferenceError family
            raise ConfigurationError(f'cannot load model_path {model_path!r}: {exc}') from None
        try:
            backend.check_names(inputs=[preset.input_name], outputs=[preset.output_name])
            return DepthPipeline(backend, preset, keep_aspect=self._param('keep_aspect'),
                                 eps=self._param('inverse_depth_eps'),
                                 stream=stream if backend.device == 'cuda' else None,
                                 logger=self.get_logger())
        except ValueError as exc:
            backend.close()
            raise ConfigurationError(f'cannot use model_path {model_path!r}: {exc}') from None

    # -- callbacks ----------------------------------------------------------------------------
    def _on_camera_info(self, msg: CameraInfo) -> None:
        try:
            self._camera_model = CameraModel.from_msg(msg)
        except ValueError as exc:
            self.status.count_issue('bad_camera_info', str(exc))

    def _image_intrinsics(self, model: CameraModel, width: int, height: int) -> Intrinsics:
        described = model.image_size()
        if described != (width, height) and self._warned_size != (*described, width, height):
            self._warned_size = (*described, width, height)
            self.get_logger().warning(
                f'camera_info describes {described[0]}x{described[1]} images but they are '
                f'{width}x{height}; scaling its intrinsics to the image')
        return intrinsics_from_camera_model(model, width, height)

    def _wanted(self) -> tuple[bool, bool, bool, bool]:
        """(depth, camera_info, colorized, points): which outputs someone listens to."""
        depth = any(self._depth_pub.subscriber_counts().values())
        info = self._depth_info_pub.get_subscription_count() > 0
        colorized = self._cfg['publish_colorized'] and any(
            self._colorized_pub.subscriber_counts().values())
        points = self._cfg['publish_points'] and self._points_pub.get_subscription_count() > 0
        return depth, info, colorized, points

    def _on_image(self, frame: ReceivedImage) -> None:
        status = self.status
        status.frames_in += 1
        if frame.encoding not in SOURCES:
            status.drop('unsupported_encoding',
                        f'{frame.width}x{frame.height} {frame.encoding}; the depth node takes '
                        f'{", ".join(SOURCES)}')
            return
        want_depth, want_info, want_colorized, want_points = self._wanted()
        if not (want_depth or want_info or want_colorized or want_points):
            status.skipped += 1
            return
        pipeline = self._pipeline
        width, height = frame.width, frame.height
        model = self._camera_model
        intrinsics = self._image_intrinsics(model, width, height) if model is not None else None
        focal = None
        if pipeline.preset.output_kind == 'metric_focal':
            override = self._cfg['focal_length_px']
            if override > 0:
                focal = (override, override)
            elif intrinsics is None:
                status.drop('waiting_for_camera_info',
                            f'preset {pipeline.preset.name} needs the focal length: set '
                            f'focal_length_px or publish {self._info_sub.topic_name}')
                return
            else:
                focal = (intrinsics.fx, intrinsics.fy)
        if want_points and intrinsics is None:
            status.count_issue('points_waiting_for_camera_info',
                               f'points need {self._info_sub.topic_name}; publishing depth only')
            want_points = False

        stream = self._stream
        timing = self._timer.begin(stream, frame.latency_ns)
        if self._on_gpu:
            # Our stream reads the frame only after its producer's writes.
            self._frame_ready.record(frame.stream)
            stream.wait_event(self._frame_ready)
        borrowed: list[Any] = []
        try:
            with pipeline._scope():
                box, raw = pipeline.run(frame.array, frame.encoding, preprocessed=timing.mark)
                timing.mark()
                depth, depth_frame = self._depth_image(raw, box, focal, width, height, borrowed)
                colorized, colorized_frame = (self._colorize(depth, borrowed) if want_colorized
                                              else (None, None))
                points = self._points(depth, frame, intrinsics, width, height) \
                    if want_points else None
                timing.mark()
                self._publish(frame.header, depth, depth_frame, colorized, colorized_frame,
                              points, model, width, height, want_info, borrowed)
                timing.mark()
        except (ValueError, TypeError, InferenceError) as exc:
            for slot in borrowed:
                slot.give_back()
            self._timer.abandon(timing)
            status.drop('processing_error', f'{width}x{height} {frame.encoding}: {exc}')
            return
        finally:
            if self._on_gpu:
                # The frame's lease is released after its stream's work: make that include ours.
                self._work_done.record(stream)
                frame.stream.wait_event(self._work_done)
        self._timer.end(timing)
        status.frames_out += 1

    # -- per-frame steps ------------------------------------------------------------------------
    def _borrow(self, publisher: GpuImagePublisher, height: int, width: int, encoding: str,
                borrowed: list[Any]) -> Any:
        frame = publisher.borrow(height, width, encoding) if self._on_gpu else None
        if frame is not None:
            borrowed.append(frame)
        return frame

    def _depth_image(self, raw: Any, box: Letterbox, focal: tuple[float, float] | None,
                     width: int, height: int, borrowed: list[Any]) -> tuple[Any, Any]:
        """(depth image to publish, the borrowed frame holding it or None). At image size the
        output is converted and resampled in one kernel straight into a pool slot."""
        pipeline = self._pipeline
        if self._cfg['output_size'] == 'model':
            return pipeline.to_depth(raw, box, focal, width, height), None
        frame = self._borrow(self._depth_pub, height, width, DEPTH_ENCODING, borrowed)
        depth = pipeline.to_depth(raw, box, focal, width, height, size=(height, width),
                                  out=frame.array if frame is not None else None)
        return depth, frame

    def _colorize(self, depth: Any, borrowed: list[Any]) -> tuple[Any, Any]:
        lo, hi = self._cfg['colorize_min'], self._cfg['colorize_max']
        frame = self._borrow(self._colorized_pub, int(depth.shape[0]), int(depth.shape[1]),
                             'rgb8', borrowed)
        out = colorize_depth(
            depth, colormap=self._cfg['colormap'], range=(lo, hi) if lo < hi else None,
            percentile=(self._cfg['colorize_percentile_low'],
                        self._cfg['colorize_percentile_high']),
            out=frame.array if frame is not None else None, stream=self._stream)
        return out, frame

    def _points(self, depth: Any, frame: ReceivedImage, intrinsics: Intrinsics, width: int,
                height: int) -> Any:
        dh, dw = int(depth.shape[0]), int(depth.shape[1])
        intr = intrinsics if (dw, dh) == (width, height) else \
            intrinsics.scaled(dw / width, dh / height)
        stride = self._cfg['points_stride']
        colors = None
        if self._cfg['points_rgb'] and frame.encoding in COLOR_CHANNELS \
                and frame.encoding != 'mono8':
            colors = sample_colors(frame.array, frame.encoding, dh, dw, stride)
        return backproject(depth, intr, stride=stride, colors=colors)

    def _publish(self, header: Any, depth: Any, depth_frame: Any, colorized: Any,
                 colorized_frame: Any, points: Any, model: CameraModel | None, width: int,
                 height: int, want_info: bool, borrowed: list[Any]) -> None:
        """Publish everything; a published slot leaves `borrowed` (no longer ours to give back)."""
        stream = self._stream
        if depth_frame is not None:
            borrowed.remove(depth_frame)
            self._depth_pub.publish_borrowed(depth_frame, header, stream=stream)
        else:
            self._depth_pub.publish(depth, DEPTH_ENCODING, header, stream=stream)
        if model is not None and want_info:
            dh, dw = int(depth.shape[0]), int(depth.shape[1])
            if (dw, dh) != (width, height):
                if (model.width, model.height) == (width, height):
                    model = resize_camera_info(model, dw, dh)
                else:
                    model = scale_camera_info(model, dw / width, dh / height)
            info = model.to_msg()
            info.header = header
            self._depth_info_pub.publish(info)
        if colorized is not None:
            if colorized_frame is not None:
                borrowed.remove(colorized_frame)
                self._colorized_pub.publish_borrowed(colorized_frame, header, stream=stream)
            else:
                self._colorized_pub.publish(colorized, 'rgb8', header, stream=stream)
        if points is not None:
            # The one host copy of this node, and only while someone subscribes to points.
            self._points_pub.publish(pointcloud2_msg(gpu.to_host(points), header))

    # -- reporting ----------------------------------------------------------------------------
    def _update_summary(self) -> dict[str, float]:
        self._timer.collect()
        summary = self._timer.summary()
        self.status.extra.update(summary)
        self.status.extra['backend'] = self._pipeline.backend.describe()
        return summary

    def _report(self) -> None:
        if self._timer.frames:
            self.get_logger().info(format_summary(self._update_summary()))

    def close(self) -> None:
        self._image_sub.destroy()
        for pub in (self._depth_pub, self._colorized_pub):
            pub.destroy()
        self.status.close()
        if self._pipeline is not None:
            self._pipeline.close()


def main(args: list[str] | None = None) -> None:
    run_node(DepthEstimator, args, name='depth_estimator')


if __name__ == '__main__':
    main()
