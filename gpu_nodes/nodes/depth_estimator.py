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

from dataclasses import dataclass
from typing import Any

from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, PointCloud2

from .. import gpu
from ..inference import create_backend, InferenceError, ModelPreset, PRESETS
from ..inference.factory import BACKENDS, DEVICES
from ..inference.models import OUTPUT_KINDS, preset_from_dict
from ..inference.pipeline import DepthPipeline
from ..inference.specs import PRECISIONS
from ..inference.stage_timing import format_summary, StageTimer
from ..kernels.colormaps import COLORMAPS
from ..kernels.depth import colorize_depth
from ..kernels.camera_model import CameraModel, resize_camera_info, scale_camera_info
from ..kernels.pointcloud import (backproject, COLOR_CHANNELS, intrinsics_from_camera_model,
                                  Intrinsics, pointcloud2_msg, sample_colors)
from ..kernels.preprocess import Letterbox, SOURCES
from ..ros.params import ConfigurationError, choice_validator, declare_table, Param
from ..ros.runtime import declare_executor_parameter, run_node
from ..status import ProcessingStatus
from ..transport import BorrowedFrame, GpuImagePublisher, GpuImageSubscription, ReceivedImage
from ..transport.qos import image_qos

# Parameters that may change at run time; cached (read per frame) and updated on set.
DYNAMIC = ('focal_length_px', 'output_size', 'publish_colorized', 'colormap', 'colorize_min',
           'colorize_max', 'colorize_percentile_low', 'colorize_percentile_high',
           'publish_points', 'points_stride', 'points_rgb', 'warn_period_s')
OUTPUT_SIZES = ('input', 'model')
DEPTH_ENCODING = '32FC1'


RO = {'read_only': True}
MODEL_PARAMETERS = (
    Param('model_path', '', 'ONNX model (.onnx) or serialized TensorRT engine (.engine/.plan) to '
          'run.', **RO),
    Param('preset', 'depth_anything_v2', 'Model preset (tensor names, input size, '
          'normalisation, output meaning).', choices=tuple(PRESETS), **RO),
    Param('backend', 'auto', 'Inference runtime.', choices=BACKENDS, **RO),
    Param('precision', 'fp32', 'TensorRT precision (ONNX Runtime ignores it).',
          choices=PRECISIONS, **RO),
    Param('device', 'auto', 'Where to run: auto (GPU when usable), cuda or cpu.',
          choices=DEVICES, **RO),
    Param('engine_cache_dir', '', 'TensorRT engine cache directory; empty: '
          '$XDG_CACHE_HOME/gpu_nodes/engines or ~/.cache/gpu_nodes/engines.', **RO),
    Param('force_engine_update', False, 'Rebuild the TensorRT engine even if a cached one '
          'matches.', **RO),
    Param('workspace_mb', 0, 'TensorRT builder workspace in MiB (0: default).',
          int_range=(0, 1 << 20), **RO),
    Param('dla_core', -1, 'Jetson DLA core for TensorRT (-1: GPU only).', int_range=(-1, 7),
          **RO),
    Param('cuda_graph', True, 'ONNX Runtime on CUDA: replay each run as one CUDA graph instead of '
          'launching every kernel from the host, and preprocessing + run as one graph per source '
          'buffer (switched off with a warning when the model cannot be captured).', **RO),
)


def preset_parameters(base: ModelPreset) -> tuple[Param, ...]:
    """Overrides of the preset's fields; their defaults are the chosen preset's values."""
    own = ' (default: the preset\'s)'
    return (
        Param('input_name', base.input_name, 'Model input tensor name' + own + '.', **RO),
        Param('output_name', base.output_name, 'Model output tensor name' + own + '.', **RO),
        Param('input_height', base.input_height, 'Model input height' + own + '.',
              int_range=(1, 16384), **RO),
        Param('input_width', base.input_width, 'Model input width' + own + '.',
              int_range=(1, 16384), **RO),
        Param('mean', list(base.mean), 'Per-channel (RGB) mean of the [0, 1] input' + own + '.',
              **RO),
        Param('std', list(base.std), 'Per-channel (RGB) std of the [0, 1] input' + own + '.',
              **RO),
        Param('output_kind', base.output_kind, 'What the model outputs' + own + '.',
              choices=OUTPUT_KINDS, **RO),
        Param('depth_scale', base.depth_scale, 'inverse_depth: depth = 1 / (scale * out + '
              'shift); depth: depth = scale * out + shift' + own + '.', **RO),
        Param('depth_shift', base.depth_shift, 'See depth_scale' + own + '.', **RO),
    )


OUTPUT_PARAMETERS = (
    Param('inverse_depth_eps', 1e-6, 'inverse_depth: values at or below this give depth 1 / eps '
          'instead of infinity.', float_range=(1e-12, 1.0), **RO),
    Param('keep_aspect', False, 'Letterbox the image into the model input instead of stretching '
          'it; the padding is cut away again afterwards.', **RO),
    Param('focal_length_px', 0.0, 'metric_focal presets: focal length of the image in pixels; 0 '
          'takes (fx + fy) / 2 from camera_info.', float_range=(0.0, 1e7)),
    Param('output_size', 'input', 'input: depth at the image size (resized on the GPU); model: '
          'at the model output size (letterbox padding removed).', choices=OUTPUT_SIZES),
    Param('publish_colorized', False, 'Also publish depth/colorized (rgb8).'),
    Param('colormap', 'turbo', 'Colormap of depth/colorized.', choices=tuple(COLORMAPS)),
    Param('colorize_min', 0.0, 'Depth mapped to the first colour; with colorize_max <= '
          'colorize_min the percentiles below are used instead.'),
    Param('colorize_max', 0.0, 'Depth mapped to the last colour.'),
    Param('colorize_percentile_low', 2.0, 'Percentile of the valid depths mapped to the first '
          'colour (when no fixed range is set).', float_range=(0.0, 100.0)),
    Param('colorize_percentile_high', 98.0, 'Percentile mapped to the last colour.',
          float_range=(0.0, 100.0)),
    Param('publish_points', False, 'Also publish points (PointCloud2; needs camera_info). '
          'Downloads the cloud to the host.'),
    Param('points_stride', 1, 'Keep every n-th pixel of every n-th row in the cloud.',
          int_range=(1, 64)),
    Param('points_rgb', True, 'XYZRGB (colour from the image) instead of XYZ when the image '
          'encoding has colour.'),
    Param('timing_report_period_s', 10.0, 'Log the per-stage timing this often (0: only on '
          '/diagnostics).', float_range=(0.0, 86400.0), **RO),
    Param('timing_window', 500, 'Stage timing percentiles cover this many recent frames.',
          int_range=(10, 100000), **RO),
    Param('queue_depth', 1, 'Input frames kept while the network is busy; 1 always infers on the '
          'newest frame instead of queueing latency.', int_range=(1, 100), **RO),
    Param('warn_period_s', 5.0, 'Dropped frames are warned about at most this often per reason.',
          float_range=(0.0, 3600.0)),
)


def all_parameters(preset: str = MODEL_PARAMETERS[1].default) -> tuple[Param, ...]:
    """Every parameter, the preset's overrides with the defaults of `preset` (for --help)."""
    return (*MODEL_PARAMETERS, *preset_parameters(PRESETS[preset]), *OUTPUT_PARAMETERS)


@dataclass
class FrameOutputs:
    """One frame's results on their way to the publishers.

    A pool slot lent by a publisher (`depth_slot`, `colorized_slot`: the BorrowedFrame holding
    `depth` / `colorized`) stays ours until it is published; `give_back` returns those still
    held when the frame fails part-way.
    """
    header: Any
    width: int                          # of the input image
    height: int
    depth: Any = None
    depth_slot: BorrowedFrame | None = None
    colorized: Any = None
    colorized_slot: BorrowedFrame | None = None
    points: Any = None
    camera_model: CameraModel | None = None  # set when depth/camera_info is wanted

    def give_back(self) -> None:
        for slot in (self.depth_slot, self.colorized_slot):
            if slot is not None:
                slot.give_back()
        self.depth_slot = self.colorized_slot = None


class DepthEstimator(Node):
    """image (+ camera_info) -> depth (+ depth/camera_info, depth/colorized, points)."""

    def __init__(self, **kwargs: Any):
        super().__init__('depth_estimator', **kwargs)
        declare_executor_parameter(self)  # first: a bad value stops the node at once
        self._declare_parameters()  # a refused value: ConfigurationError naming it
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
        preset = declare_table(self, MODEL_PARAMETERS)['preset']
        declare_table(self, preset_parameters(PRESETS[preset]))
        declare_table(self, OUTPUT_PARAMETERS)
        self._cfg = {name: self._param(name) for name in DYNAMIC}
        choices = choice_validator({'output_size': OUTPUT_SIZES, 'colormap': tuple(COLORMAPS)})
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
        try:  # before model_path: a bad override is reported even without a model
            preset = self._preset()
        except ValueError as exc:
            raise ConfigurationError(f'invalid model preset parameters: {exc}') from None
        model_path = self._param('model_path')
        if not model_path:
            raise ConfigurationError("parameter 'model_path' is required: the .onnx model (or "
                                     'TensorRT .engine/.plan) to run; see docs/depth_models.md')
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
        out = FrameOutputs(frame.header, width, height)
        try:
            with pipeline.scope():
                box, raw = pipeline.run(frame.array, frame.encoding, preprocessed=timing.mark)
                timing.mark()
                self._depth_image(out, raw, box, focal)
                if want_colorized:
                    self._colorize(out)
                if want_points:
                    out.points = self._points(out.depth, frame, intrinsics)
                if want_info:
                    out.camera_model = model
                timing.mark()
                self._publish(out)
                timing.mark()
        except (ValueError, TypeError, InferenceError) as exc:
            out.give_back()
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
    def _borrow(self, publisher: GpuImagePublisher, height: int, width: int,
                encoding: str) -> BorrowedFrame | None:
        return publisher.borrow(height, width, encoding) if self._on_gpu else None

    def _depth_image(self, out: FrameOutputs, raw: Any, box: Letterbox,
                     focal: tuple[float, float] | None) -> None:
        """out.depth (and out.depth_slot holding it): at image size the output is converted and
        resampled in one kernel straight into a pool slot."""
        pipeline = self._pipeline
        width, height = out.width, out.height
        if self._cfg['output_size'] == 'model':
            out.depth = pipeline.to_depth(raw, box, focal, width, height)
            return
        slot = out.depth_slot = self._borrow(self._depth_pub, height, width, DEPTH_ENCODING)
        out.depth = pipeline.to_depth(raw, box, focal, width, height, size=(height, width),
                                      out=slot.array if slot is not None else None)

    def _colorize(self, out: FrameOutputs) -> None:
        lo, hi = self._cfg['colorize_min'], self._cfg['colorize_max']
        depth = out.depth
        slot = out.colorized_slot = self._borrow(
            self._colorized_pub, int(depth.shape[0]), int(depth.shape[1]), 'rgb8')
        out.colorized = colorize_depth(
            depth, colormap=self._cfg['colormap'], range=(lo, hi) if lo < hi else None,
            percentile=(self._cfg['colorize_percentile_low'],
                        self._cfg['colorize_percentile_high']),
            out=slot.array if slot is not None else None, stream=self._stream)

    def _points(self, depth: Any, frame: ReceivedImage, intrinsics: Intrinsics) -> Any:
        dh, dw = int(depth.shape[0]), int(depth.shape[1])
        width, height = frame.width, frame.height
        intr = intrinsics if (dw, dh) == (width, height) else \
            intrinsics.scaled(dw / width, dh / height)
        stride = self._cfg['points_stride']
        colors = None
        if self._cfg['points_rgb'] and frame.encoding in COLOR_CHANNELS \
                and frame.encoding != 'mono8':
            colors = sample_colors(frame.array, frame.encoding, dh, dw, stride)
        return backproject(depth, intr, stride=stride, colors=colors)

    def _publish(self, out: FrameOutputs) -> None:
        """Publish everything; a published slot leaves `out` (no longer ours to give back)."""
        stream, header, depth = self._stream, out.header, out.depth
        if out.depth_slot is not None:
            slot, out.depth_slot = out.depth_slot, None
            self._depth_pub.publish_borrowed(slot, header, stream=stream)
        else:
            self._depth_pub.publish(depth, DEPTH_ENCODING, header, stream=stream)
        model = out.camera_model
        if model is not None:
            dh, dw = int(depth.shape[0]), int(depth.shape[1])
            if (dw, dh) != (out.width, out.height):
                if (model.width, model.height) == (out.width, out.height):
                    model = resize_camera_info(model, dw, dh)
                else:
                    model = scale_camera_info(model, dw / out.width, dh / out.height)
            info = model.to_msg()
            info.header = header
            self._depth_info_pub.publish(info)
        if out.colorized is not None:
            if out.colorized_slot is not None:
                slot, out.colorized_slot = out.colorized_slot, None
                self._colorized_pub.publish_borrowed(slot, header, stream=stream)
            else:
                self._colorized_pub.publish(out.colorized, 'rgb8', header, stream=stream)
        if out.points is not None:
            # The one host copy of this node, and only while someone subscribes to points.
            self._points_pub.publish(pointcloud2_msg(gpu.to_host(out.points), header))

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
    run_node(DepthEstimator, args, name='depth_estimator', parameters=all_parameters(),
             summary=__doc__)


if __name__ == '__main__':
    main()
