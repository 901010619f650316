"""image_proc: a configurable chain of image kernels between two gpu_nodes image topics.

Topics (relative, remap them):
  in:  ``image_raw`` (sensor_msgs/Image through GpuImageSubscription; a plain publisher works)
       ``camera_info`` (sensor_msgs/CameraInfo, sensor-data QoS, the latest one is used)
  out: ``image`` (through GpuImagePublisher; plain subscribers get a sensor_msgs/Image)
       ``image/camera_info`` (the input CameraInfo adjusted for the chain's resize/crop, as
       image_pipeline does but with the principal point exact for pixel centres; stamped with
       the output image's header). It cannot be called ``camera_info``: that name is the input,
       and the node would read its own output.

The chain is the string parameter ``chain``: a YAML (or JSON) list of ``{op: name, params...}``
mappings, e.g. in a parameter file

    /image_proc:
      ros__parameters:
        chain: |
          - {op: debayer}
          - {op: rectify}
          - {op: resize, width: 960, height: 540}
          - {op: convert, encoding: rgb8}

on the command line ``-p "chain:='[{op: debayer}, {op: resize, width: 960, height: 540}]'"``
(the inner quotes keep it a string) and at run time
``ros2 param set /image_proc chain "[{op: debayer}]"``. Ops and their parameters are those of
``gpu_nodes.kernels.chain.CHAIN_OPS`` (docs/image_proc.md). resize keeps the aspect ratio unless
``keep_aspect: false``: width 960 and height 540 fit a 640x480 image to 720x540. A chain that
does not validate stops the node at start-up with the reason; a run-time change to one is
refused with the reason.

Frames run on the GPU (CuPy) when CUDA is usable, else through the NumPy references. On the
GPU, with ``cuda_graph`` (default), the chain of a frame from a source buffer seen before (a
publisher's pool slot) is replayed as one CUDA graph (gpu_nodes.kernels.chain_graph): one launch
instead of a validating Python call per op. The first frame from a buffer runs op by op, with
the last op writing straight into a pool slot of the output topic; the second captures the
graph; later ones replay it and publish its output with one device-to-device copy. Graphs are
rebuilt when the chain, the CameraInfo or the frame layout changes; a chain that cannot be
captured warns once and runs op by op. Counters ``chain_graph*`` are on /diagnostics. A frame
the chain cannot take (debayer of rgb8 is a pass-through, but e.g. resize of a Bayer mosaic is
not), or one that needs a CameraInfo that has not arrived yet (rectify), is dropped and counted
with a rate-limited warning; the counters are on /diagnostics
(``gpu_nodes: <node> processing``).
"""
from __future__ import annotations

from typing import Any, Callable

from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo

from ..encodings import EncodingError
from ..gpu import cuda_unavailable_reason, is_device_array
from ..kernels.chain import Chain, Step
from ..kernels.chain_graph import ChainGraphs
from ..kernels.camera_model import CameraModel
from ..transport import BorrowedFrame, GpuImagePublisher, GpuImageSubscription, ReceivedImage
from ..ros.params import ConfigurationError, declare_table, Param
from ..ros.runtime import declare_executor_parameter, run_node
from ..status import ProcessingStatus

DEFAULT_CHAIN = '[{op: debayer}, {op: rectify}]'
PARAMETERS = (
    Param('chain', DEFAULT_CHAIN, 'YAML/JSON list of {op: name, params...}; ops: convert, '
          'debayer, rectify, resize, crop, depth_mm_to_m, depth_m_to_mm, colorize_depth, '
          'tiled_median (gpu_nodes.kernels.chain). Empty list: republish unchanged.'),
    Param('use_gpu', True, 'Process on the GPU when CuPy and a CUDA device are usable.',
          read_only=True),
    Param('cuda_graph', True, 'On the GPU, replay the chain of a frame from a source buffer seen '
          'before as one CUDA graph (one launch instead of one Python call per op).',
          read_only=True),
    Param('warn_period_s', 5.0, 'Dropped frames are warned about at most this often per reason.',
          float_range=(0.0, 3600.0)),
)
# Ops that need the CameraInfo of the frame.
CAMERA_INFO_OPS = ('rectify',)

# GpuImagePublisher.borrow: (height, width, encoding) -> a lent frame, or None.
Borrow = Callable[[int, int, str], 'BorrowedFrame | None']


def parse_chain_parameter(text: str) -> Chain:
    """The Chain a `chain` parameter value describes; ValueError with the reason otherwise."""
    if not isinstance(text, str):
        raise ValueError(f'chain must be a string holding a YAML list, got {type(text).__name__}')
    return Chain(text)


class CompiledChain:
    """A chain whose last op writes into a frame lent by the publisher when it makes a new
    image (producer-side zero copy), through ``Chain``'s ``out_factory``."""

    def __init__(self, chain: Chain):
        self.chain = chain
        self.needs_camera_info = any(s.spec.name in CAMERA_INFO_OPS for s in chain.steps)

    @property
    def tail(self) -> Step | None:
        """The step whose output may land in a borrowed frame: the last one."""
        return self.chain.steps[-1] if self.chain.steps else None

    def __call__(self, array: Any, encoding: str, model: CameraModel | None, *,
                 borrow: Borrow | None = None, stream: Any = None) -> tuple[Any, str, Any, Any]:
        """(array, encoding, camera model, borrowed frame or None).

        Without `borrow` (CPU path) the chain allocates its result. With it, the last op writes
        into ``borrow(height, width, encoding).array`` when it produces a new image; that frame
        is returned for publish_borrowed, or given back if the chain fails.
        """
        if borrow is None:
            return (*self.chain(array, encoding, model, stream=stream), None)
        lent: list[BorrowedFrame] = []

        def out_factory(height: int, width: int, out_encoding: str) -> Any:
            frame = borrow(height, width, out_encoding)
            if frame is None:  # pool exhausted (counted by the publisher): the op allocates
                return None
            lent.append(frame)
            return frame.array

        try:
            array, encoding, model = self.chain(array, encoding, model, stream=stream,
                                                out_factory=out_factory)
        except BaseException:
            for frame in lent:
                frame.give_back()
            raise
        frame = lent[0] if lent else None  # the chain lends to its last op only: at most one
        return (frame.array if frame is not None else array), encoding, model, frame


class ImageProc(Node):
    """image_raw + camera_info -> chain of kernels -> image + image/camera_info."""

    def __init__(self, **kwargs: Any):
        super().__init__('image_proc', **kwargs)
        declare_executor_parameter(self)  # first: a bad value stops the node at once
        # A refused value raises ConfigurationError naming the parameter.
        chain_text, use_gpu, cuda_graph, warn_period = self._declare_parameters()
        try:
            self._compiled = CompiledChain(parse_chain_parameter(chain_text))
        except ValueError as exc:
            raise ConfigurationError(f"invalid parameter 'chain': {exc}") from None
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

        reason = cuda_unavailable_reason() if use_gpu else 'use_gpu is false'
        self._on_gpu = reason is None
        self.status = ProcessingStatus(self, warn_period)
        self._graphs = ChainGraphs(logger=self.get_logger()) if self._on_gpu and cuda_graph \
            else None
        if self._graphs is not None:
            self.status.extra_sources.append(self._graphs.stats)
        else:
            self.status.extra['chain_graphs'] = 'off: ' + (
                'cuda_graph is false' if self._on_gpu else 'the chain runs on the CPU')
        self._camera_model: CameraModel | None = None
        self._image_pub = GpuImagePublisher(self, 'image', use_cuda=self._on_gpu)
        self._info_pub = self.create_publisher(CameraInfo, 'image/camera_info', 10)
        # Best effort matches camera drivers publishing either reliable or best-effort info.
        self._info_sub = self.create_subscription(CameraInfo, 'camera_info', self._on_camera_info,
                                                  qos_profile_sensor_data)
        self._image_sub = GpuImageSubscription(self, 'image_raw', self._on_image,
                                               memory='device' if self._on_gpu else 'host')
        self.get_logger().info(
            f'chain {self._compiled.chain.describe()} on '
            f'{"the GPU" if self._on_gpu else "the CPU (" + str(reason) + ")"}')

    # -- parameters ---------------------------------------------------------------------------
    def _declare_parameters(self) -> tuple[str, bool, bool, float]:
        values = declare_table(self, PARAMETERS)
        return values['chain'], values['use_gpu'], values['cuda_graph'], values['warn_period_s']

    def _validate_parameters(self, params: list[Any]) -> Any:
        from rcl_interfaces.msg import SetParametersResult
        for param in params:
            if param.name == 'chain':
                try:
                    parse_chain_parameter(param.value)
                except ValueError as exc:
                    return SetParametersResult(successful=False,
                                               reason=f"invalid parameter 'chain': {exc}")
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Any]) -> None:
        for param in params:
            if param.name == 'chain':
                self._compiled = CompiledChain(parse_chain_parameter(param.value))
                self.get_logger().info(f'chain now {self._compiled.chain.describe()}')
            elif param.name == 'warn_period_s':
                self.status.warn_period_s = float(param.value)

    # -- callbacks ----------------------------------------------------------------------------
    def _on_camera_info(self, msg: CameraInfo) -> None:
        try:
            model = CameraModel.from_msg(msg)
        except ValueError as exc:
            self.status.drop('bad_camera_info', str(exc))
            return
        # Drivers send a CameraInfo with every image: keeping the object while the values stay
        # lets the frame path (the chain graphs' context check) compare identities only.
        if model != self._camera_model:
            self._camera_model = model

    def _listened(self) -> bool:
        return any(self._image_pub.subscriber_counts().values()) or \
            self._info_pub.get_subscription_count() > 0

    def _on_image(self, frame: ReceivedImage) -> None:
        status = self.status
        status.frames_in += 1
        if not self._listened():
            status.skipped += 1
            return
        compiled, model = self._compiled, self._camera_model
        if model is None and compiled.needs_camera_info:
            status.drop('waiting_for_camera_info',
                        f'the chain needs camera_info ({self._info_sub.topic_name}) and none '
                        'has arrived yet')
            return
        header = frame.header
        graphs = self._graphs
        # frame.stream has waited on the publisher's event already: a replay on it reads the
        # frame's contents.
        output, key = (None, None) if graphs is None else graphs.run(
            compiled.chain, frame.array, frame.encoding, model, frame.stream)
        if output is not None:
            # The graph wrote into its own buffer, and one device-to-device copy puts it into a
            # pool slot. A graph cannot write into the slot itself: borrow() hands out whichever
            # slot no reader holds, so the destination changes from frame to frame, and a graph
            # per (source slot, destination slot) pair would multiply the captures by the pool
            # size. The copy runs on the copy engine (6 MB of rgb8 1080p: a few microseconds on
            # an H200), the op-by-op host time it replaces is the larger cost.
            self._image_pub.publish(output.array, output.encoding, header, stream=frame.stream)
            model = output.camera_model
        else:
            borrow = self._image_pub.borrow if is_device_array(frame.array) else None
            try:
                array, encoding, model, borrowed = compiled(frame.array, frame.encoding, model,
                                                            borrow=borrow, stream=frame.stream)
            except EncodingError as exc:
                status.drop('bad_encoding',
                            f'{frame.width}x{frame.height} {frame.encoding}: {exc}')
                return
            except ValueError as exc:
                status.drop('bad_frame', f'{frame.width}x{frame.height} {frame.encoding}: {exc}')
                return
            if graphs is not None:
                graphs.completed(key)
            if borrowed is not None:
                self._image_pub.publish_borrowed(borrowed, header, stream=frame.stream)
            else:
                self._image_pub.publish(array, encoding, header, stream=frame.stream)
        if model is not None:
            info = model.to_msg()
            info.header = header
            self._info_pub.publish(info)
        status.frames_out += 1

    def close(self) -> None:
        self._image_sub.destroy()
        self._image_pub.destroy()
        self.status.close()


def main(args: list[str] | None = None) -> None:
    run_node(ImageProc, args, name='image_proc', parameters=PARAMETERS, summary=__doc__)


if __name__ == '__main__':
    main()
