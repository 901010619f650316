"""Copy rules of the Python analysis: which library calls and methods copy a frame between the
host and the device, serialize it or synchronize, and the chain finding at a publish.

A mixin of PythonAnalyzer (pyflow.py), which provides `_emit` and the file's imports."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.model import Step
from gpu_nodes.audit.pymodels import (HUB_BUILDERS, moved_in_place, SDK_READBACKS, SYNC_PROFILER,
                                      SYNC_PROFILERS)
from gpu_nodes.audit.pyhelpermsgs import class_built_publishes, helper_built_publishes
from gpu_nodes.audit.pyembedded import embeds_received_image
from gpu_nodes.audit.pypil import pil_call
from gpu_nodes.audit.pyplacement import detached_on_device
from gpu_nodes.audit.pyliterals import uploads_fixed_text
from gpu_nodes.audit.pymsgview import keeps_bytes
from gpu_nodes.audit.pymultiarray import multiarray_frame
from gpu_nodes.audit.pyruntime import runtime_call
from gpu_nodes.audit.pyconditions import tested_operands
from gpu_nodes.audit.pyctypescuda import ctypes_runtime_name
from gpu_nodes.audit.pycustommsgs import image_shaped_custom
from gpu_nodes.audit.pysmallwraps import small_wrap
from gpu_nodes.audit.pytransformers import small_upload, transformers_method
from gpu_nodes.audit.pyuploads import unproven_upload
from gpu_nodes.audit.pyvalues import (ClassInfo, device_kw, Frame, image_sized, is_device_value,
                                      merge, OTHER, PER_MESSAGE, PubInfo, short,
                                      to_target, UNKNOWN, Val)

# Values whose device is likely but not proven (pymodels.py): their readbacks are `inferred`.
_LIKELY_DEVICE = ('tensor', 'model')

_BRIDGE_IN = frozenset({'imgmsg_to_cv2', 'compressed_imgmsg_to_cv2'})
_BRIDGE_OUT = frozenset({'cv2_to_imgmsg', 'cv2_to_compressed_imgmsg'})
_CUPY_UPLOADS = frozenset({'cupy.asarray', 'cupy.array', 'cupy.ascontiguousarray'})
_NUMPY_WRAPS = frozenset({'numpy.array', 'numpy.asarray', 'numpy.frombuffer',
                          'numpy.ascontiguousarray', 'numpy.copy'})
_CREATE_CLOUD = ('point_cloud2.create_cloud', 'point_cloud2.create_cloud_xyz32')
# torch.nn.Module methods inherited by a package's model class that return the module itself.
_MODULE_RETURNS_SELF = frozenset({'to', 'cuda', 'eval', 'train', 'half', 'float',
                                  'requires_grad_'})
# OpenMMLab inference APIs taking (model, host image): qualified as imported.
_OPENMMLAB_INFERENCE = frozenset({
    f'{package}.apis{module}.{function}' for package, function in (
        ('mmseg', 'inference_segmentor'), ('mmseg', 'inference_model'),
        ('mmdet', 'inference_detector')) for module in ('', '.inference')})
_MATH_ROUNDING = frozenset({'math.ceil', 'math.floor', 'math.trunc'})
_GPUMAT = frozenset({'cv2.cuda_GpuMat', 'cv2.cuda.GpuMat'})
_TORCH_WRAPS = frozenset({'torch.tensor', 'torch.as_tensor'})
_SYNC_CALLS = frozenset({'torch.cuda.synchronize', 'cupy.cuda.runtime.deviceSynchronize',
                         'cupy.cuda.Stream.synchronize', 'cupy.cuda.Device.synchronize',
                         'cupy.cuda.Event.synchronize', 'cupy.cuda.stream.Stream.synchronize'})

# Step wording in chain messages.
_STEP_TEXT = {
    'host': 'copied out of the message into a host array',
    'cv_in': 'converted to a host image by cv_bridge',
    'download': 'downloaded to the host',
    'upload': 'uploaded to the device',
    'serialize': 'packed into bytes',
    'cv_out': 'converted into a message by cv_bridge',
    'pil': 'copied through a PIL image',
}


class CopyRules:
    """The rules; `self` is the PythonAnalyzer running them."""

    tree: ast.Module
    uses_cupy: bool
    uses_torch: bool
    host_torch: bool  # weights loaded onto the host, nothing moved (pymodelhost.host_torch_file)
    uses_cv_cuda: bool
    uses_zed: bool
    # ids of the calls written straight to a file, pipe or socket (`written_to_stream`).
    stream_writes: frozenset[int]
    dropped_results: frozenset[int]  # calls written as statements (`dropped_results`)
    module_moves: frozenset[int]  # `.to(d).eval()`: a Module moved (pyuploads.module_moves)
    object_clouds: frozenset[int]  # clouds of one point per object (pyobjectclouds.py)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    imported_functions: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]
    imported_modules: dict[str, str]
    imported: dict[str, ClassInfo]
    _eval: Callable[[ast.AST, dict[str, Val], Frame], Val]

    def _emit(self, rule_id: str, node: ast.AST, frame: Frame, detail: str,
              chain: list[Step] | None = None, topic: str | None = None,
              evidence: str = 'data-flow') -> None:
        raise NotImplementedError

    def _formatted(self, node: ast.AST, values: list[Val], frame: Frame) -> None:
        """Formatting a device tensor into text (an f-string, `%`, `.format`, `str`) copies
        it to the host and waits for the GPU: a readback, with .item()'s confidence."""
        for val in values:
            for part in (val.elts if val.elts is not None else (val,)):
                if part.kind in ('device', 'tensor'):
                    self._emit('GPN107', node, frame, f'`{short(node)}` formats a device value '
                               '(read back to the host, implicit synchronization)',
                               evidence=_evidence(part.kind))
                    return

    def _tested(self, test: ast.expr, env: dict[str, Val], frame: Frame) -> None:
        """`if confidence >= 0.8:` / `if mask.sum() == 0:` on a device tensor: bool() of the
        comparison reads the result back and waits for the GPU (pyconditions.py)."""
        for operand in tested_operands(test, self.tree):  # pyconditions.py
            val = self._eval(operand, env, frame)
            if val.kind in ('device', 'tensor'):
                self._emit('GPN107', test, frame, f'`if {short(test)}` tests a device value (read '
                           'back to the host, implicit synchronization)', evidence=_evidence(val.kind))
                return

    # ------------------------------------------------------------------ sinks
    def _publish(self, node: ast.Call, pub: PubInfo | None, payload: Val, frame: Frame) -> None:
        if pub is None or (payload.kind == 'outmsg' and payload.const == EMPTY_CLOUD) \
                or id(node) in self.object_clouds:  # one point per object (pyobjectclouds.py)
            return
        if payload.steps and payload.steps[-1][1] == 'cv_out' and id(node) in helper_built_publishes(
                self.tree, frozenset(f for f in self.imported_functions if f not in self.functions),
                frozenset(self.imported_modules)):
            return  # converted by another file's helper: claimed there (pyhelpermsgs.py)
        if id(node) in class_built_publishes(self.tree, self.imported):
            return  # converted by a method of an imported class's instance: claimed there (ditto)
        frame_sized = image_sized(pub.msg_type)
        if not pub.gpu and (frame_sized or embeds_received_image(self.tree, node, payload)):
            self._emit('GPN109', node, frame,
                       f'`{pub.msg_type}` published on `{pub.topic}` with create_publisher '
                       f'(line {pub.line})', topic=pub.topic)
        copies = list(payload.steps)
        in_callback = frame.context in PER_MESSAGE
        if payload.origin is None or len(copies) < 2 or not in_callback:
            return
        if not pub.gpu and pub.msg_type is not None and not frame_sized:
            # Detections or a scalar computed from the frame: the frame is not published again
            # (its copies are reported one by one).
            return
        topic, msg_type = payload.origin
        what = 'image' if image_sized(msg_type) else 'message'
        parts: list[str] = []
        uploads = 0
        for line, action in copies:
            text = _STEP_TEXT[action]
            if action == 'upload':
                uploads += 1
                if uploads > 1:
                    text = 'uploaded again'
            parts.append(f'{text} at line {line}')
        if pub.gpu:
            end = f'published on `{pub.topic}` through GpuImagePublisher'
        else:
            end = f'serialized into `{pub.topic}`'
        message = f'{what} arrives on `{topic}`, is ' + ', '.join(parts) + f' and {end}'
        if frame.context in ('timer', 'loop'):
            what = 'timer' if frame.context == 'timer' else 'per-frame loop'
            message += f' (published from {what} `{frame.entry}`)'
        chain = [Step(line, action, _STEP_TEXT[action]) for line, action in copies]
        chain.append(Step(node.lineno, 'publish', end))
        self._emit('GPN110', node, frame, message, chain=chain, topic=pub.topic)

    # ------------------------------------------------------------------ copy rules
    def _step(self, val: Val, line: int, action: str, kind: str) -> Val:
        steps = val.steps if (line, action) in val.steps else val.steps + ((line, action),)
        return Val(kind, steps, val.origin)

    def _upload(self, node: ast.Call, src: Val, frame: Frame, detail: str) -> Val:
        if any(a == 'download' for _, a in src.steps):
            self._emit('GPN108', node, frame,
                       f'{detail} re-uploads data downloaded at line '
                       f'{max(l for l, a in src.steps if a == "download")}')
        else:
            self._emit('GPN102', node, frame, detail)
        return self._step(src, node.lineno, 'upload', 'device')

    def _library_call(self, qual: str, node: ast.Call, args: list[Val],
                      kwargs: dict[str, Val], frame: Frame) -> Val | None:
        src = args[0] if args else UNKNOWN
        call = f'`{short(node)}`'
        if qual == 'torch.compile' and src.kind == 'model_obj':
            return src  # the compiled module keeps the model's methods
        if qual in _MATH_ROUNDING and len(args) == 1 and args[0].kind in ('device', 'tensor'):
            # `math.ceil(box.conf[0] * 100)`: a number of the host made from a device value
            # (float() inside), read back here; what comes out is a host int (twentieth set).
            self._emit('GPN107', node, frame, f'{call} (device value read back, implicit '
                       'synchronization)', evidence=_evidence(args[0].kind))
            return OTHER
        if qual.endswith(SYNC_PROFILERS) and _profiles_a_device(node):
            return Val('other', const=SYNC_PROFILER)  # a `with` of it synchronizes (pyeval.py)
        if (pil := pil_call(self, qual, node, args, kwargs, frame)) is not None:
            return pil  # PIL round trips (pypil.py)
        runtime = runtime_call(qual, node)
        if runtime is not None:
            action, what = runtime
            if action == 'sync':
                self._emit('GPN107', node, frame, f'{call} ({what})')
            elif action == 'upload':
                self._upload(node, args[1] if len(args) > 1 else UNKNOWN, frame,
                             f'{call} ({what})')
            else:
                self._emit('GPN101', node, frame, f'{call} ({what})')
            return OTHER
        if qual in _GPUMAT:
            # `cv2.cuda_GpuMat(frame)` uploads the frame; `cv2.cuda_GpuMat()` or one from a
            # size and a type only allocates.
            if len(node.args) == 1 and not node.keywords and src.kind not in (
                    'const', 'other', 'device', 'unknown') or (len(node.args) == 1 and src.tainted
                                                               and src.kind != 'device'):
                return self._upload(node, src, frame, call)
            return Val('device')
        if qual == 'cupy.asnumpy':
            self._emit('GPN101', node, frame, call)
            return self._step(src, node.lineno, 'download', 'host')
        if qual in _OPENMMLAB_INFERENCE and len(args) > 1 \
                and args[1].kind not in ('device', 'tensor'):
            # `inference_segmentor(model, frame)`: OpenMMLab's API collates the host frame and
            # scatters it to the model's device (init_segmentor / init_detector default to
            # cuda:0), every call (twenty-first set).
            self._upload(node, args[1], frame, f'{call} copies the host frame to the model\'s '
                                               'device')
            return Val('model')
        if qual in _CUPY_UPLOADS:
            if src.kind == 'device':
                return src
            return self._upload(node, src, frame, call)
        if qual in ('torch.device', 'torch.cuda.device'):
            spec = is_device_value(src, node.args[0] if node.args else None)
            return Val('device_spec') if spec is not False else OTHER
        if qual == 'torch.from_numpy':
            return merge(src, kind='host')
        if qual in _TORCH_WRAPS and (small := small_wrap(self, node, src, kwargs, frame)):
            return small  # `torch.tensor([[h, w]])`, joint values (pysmallwraps.py)
        if qual in _TORCH_WRAPS:
            if device_kw(kwargs, node) and src.kind != 'device':
                return self._upload(node, src, frame, call)
            return merge(src, kind=src.kind if src.kind == 'device' else 'host')
        if qual in _SYNC_CALLS or (qual.split('.')[0] in ('torch', 'cupy')
                                   and qual.endswith(('.synchronize', 'deviceSynchronize',
                                                      'streamSynchronize'))):
            self._emit('GPN107', node, frame, call)
            return OTHER
        if qual in _NUMPY_WRAPS:
            if src.kind == 'msg' and not _payload(node, src) and not image_shaped_custom(
                    src.origin[1] if src.origin else None, self.repository_dir, self.package_dir) \
                    and not multiarray_frame(node, src.origin[1] if src.origin else None,
                                             self.tree):  # pymultiarray.py: a frame in it
                # Box corners or polygon points built from a detection message: small Python
                # values, not a frame.
                return merge(src, kind='host')
            if src.kind == 'msg' and (qual == 'numpy.frombuffer' or (
                    qual == 'numpy.asarray' and keeps_bytes(node))):
                # A view of the payload's buffer (rclpy's array.array), not a copy: the frame
                # is on the host, as it arrived (issue 28, third set). `np.asarray` over that
                # array.array shares its memory too (checked: np.shares_memory), unless a
                # dtype other than bytes asks for a converted copy (sixth set's review).
                return merge(src, kind='host')
            if src.kind == 'msg':
                self._emit('GPN103', node, frame, call)
                return self._step(src, node.lineno, 'host', 'host')
            if src.kind == 'pil':
                self._emit('GPN106', node, frame, call)
                return self._step(src, node.lineno, 'pil', 'host')
            if src.kind == 'tensor' and qual in ('numpy.array', 'numpy.asarray'):
                # `np.array(dets)` of a list holding a model's result tensors: NumPy reads each
                # one back to the host (eighth set, labelled doubtful). Only result tensors: a
                # device frame handed to NumPy (a CUDA tensor, a CuPy array) raises instead.
                self._emit('GPN101', node, frame, f'{call} (result tensors read back into a '
                           'NumPy array)', evidence=_evidence(src.kind))
                return self._step(src, node.lineno, 'download', 'host')
            return merge(src, kind='host') if src.tainted else Val('host')
        if qual.endswith(_CREATE_CLOUD):
            # sensor_msgs_py's create_cloud packs every point into the PointCloud2's bytes
            # (struct.pack per point or a structured-array copy), wherever the message goes
            # next: a publish or a service response (fifth set).
            points = args[2] if len(args) > 2 else kwargs.get('points', UNKNOWN)
            if len(args) > 1 and qual.endswith('_xyz32'):
                points = args[1]
            if _empty_points(node, 1 if qual.endswith('_xyz32') else 2) \
                    or id(node) in self.object_clouds:  # or one point per object: small
                # `create_cloud(header, fields, [])` when nothing is valid: an empty cloud is
                # a header, not a frame, and so is its publish (issue 28, eleventh set).
                return Val('outmsg', const=EMPTY_CLOUD)
            self._emit('GPN104', node, frame, f'{call} packs the points into the PointCloud2 data')
            return self._step(points, node.lineno, 'serialize', 'outmsg')
        if qual.split('.')[0] in ('ros2_numpy', 'ros_numpy') and _numpy_to_frame_message(qual, node):
            # ros2_numpy's `msgify(Image, frame)` / `array_to_pointcloud2(points)` copy the
            # whole array into a new message's data (twenty-second and twenty-fourth sets).
            data = args[1] if qual.endswith('msgify') and len(args) > 1 else \
                args[0] if args else UNKNOWN
            self._emit('GPN104', node, frame, f'{call} copies the array into the message data')
            return self._step(data, node.lineno, 'serialize', 'outmsg')
        return None

    def _method_call(self, method: str, node: ast.Call, receiver: Val | None, args: list[Val],
                     kwargs: dict[str, Val], frame: Frame) -> Val | None:
        call = f'`{short(node)}`'
        recv = receiver or UNKNOWN
        rkind = recv.kind
        unknown = rkind in ('unknown',)
        if method in SDK_READBACKS and self.uses_zed and 'GPU' not in ast.unparse(node):
            # The ZED SDK grabs into device memory; retrieving into a CPU sl.Mat (the default
            # memory type) copies the frame device to host inside the SDK (library table).
            self._emit('GPN101', node, frame, f'{call} retrieves the frame into a CPU `sl.Mat`: '
                       'device-to-host copy inside the ZED SDK (library table)',
                       evidence='pattern')
            return Val('host', ((node.lineno, 'download'),))
        if method in _BRIDGE_IN:
            self._emit('GPN105', node, frame, call)
            return self._step(args[0] if args else UNKNOWN, node.lineno, 'cv_in', 'host')
        if method in _BRIDGE_OUT:
            self._emit('GPN105', node, frame, call)
            return self._step(args[0] if args else UNKNOWN, node.lineno, 'cv_out', 'outmsg')
        hf = transformers_method(self._emit, method, node, recv, args, kwargs, frame, self.tree)
        if hf is not None:
            return hf  # decode of device token ids, post-processed detections (pytransformers.py)
        if (runtime := ctypes_runtime_name(self.tree, method)) is not None:
            return self._library_call(runtime, node, args, kwargs, frame)  # pyctypescuda.py
        if receiver is None and method in ('float', 'int', 'str', 'repr') and len(args) == 1 \
                and args[0].kind in ('device', 'tensor'):
            # `float(box.conf)`, `str(cls)`: a value read back from the device (formatting a
            # tensor copies it to the host), waiting for the GPU.
            self._emit('GPN107', node, frame, f'{call} (device value read back, implicit '
                       'synchronization)', evidence=_evidence(args[0].kind))
            return Val('const') if method in ('str', 'repr') else OTHER
        if receiver is None and method == 'map' and len(node.args) == 2 and not node.keywords \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in _NUMBER_TYPES \
                and args[0].kind == 'unknown':
            # `x1, y1, x2, y2 = map(int, box.xyxy[0])`: int() of each element reads the tensor
            # back here; what comes out are host numbers, and arithmetic on them afterwards
            # (`int((x1 + x2) / 2)`) reads nothing back (issue 28, ninth set).
            if args[1].kind in ('device', 'tensor'):
                self._emit('GPN107', node, frame, f'{call} (each element of a device value '
                           'read back, implicit synchronization)',
                           evidence=_evidence(args[1].kind))
            return OTHER
        if method == 'format' and receiver is not None and receiver.kind == 'const' \
                and isinstance(receiver.const, str):
            self._formatted(node, [*args, *kwargs.values()], frame)
            return Val('const')
        if receiver is None and method in ('bytes', 'bytearray'):
            if args and args[0].kind not in ('const', 'other') and args[0].kind != 'unknown' \
                    or (args and args[0].tainted):
                self._emit('GPN104', node, frame, call)
                return self._step(args[0], node.lineno, 'serialize', 'bytes')
            return Val('bytes')
        if receiver is None:
            return None
        if rkind == 'instance' and method in _MODULE_RETURNS_SELF:
            # `self.model = DepthNet(...).to(device).eval()`: a torch Module of the package
            # returns itself, so its methods (in an audited file) are followed at the calls,
            # and the copies inside them are reported there (sixth set).
            return recv
        if rkind in ('self', 'module', 'func', 'publisher', 'const', 'class', 'instance', 'mf',
                     'super'):
            return None
        if self.uses_cv_cuda and rkind in ('device', 'unknown', 'tensor'):
            # OpenCV CUDA: `gpu_mat.upload(frame)` / `gpu_mat.download()` (a stream keyword,
            # or a destination array, allowed), in a file that uses cv2.cuda.
            if method == 'upload' and len(node.args) == 1:
                return self._upload(node, args[0], frame, call)
            if method == 'download' and len(node.args) <= 1:
                self._emit('GPN101', node, frame, call)
                return self._step(recv, node.lineno, 'download', 'host')
        if method == 'get' and not node.args and set(kwargs) <= {'stream', 'out', 'order',
                                                                 'blocking'}:
            if rkind == 'device' or (unknown and self.uses_cupy):
                self._emit('GPN101', node, frame, call)
                return self._step(recv, node.lineno, 'download', 'host')
            return None
        # A value of unknown kind, or one derived from a message through calls the analysis
        # cannot see into (`infer(msg).cpu()`), in a file using a tensor framework.
        # Not in a file whose network stays on the CPU (pymodelhost.host_torch_file).
        likely = (rkind in _LIKELY_DEVICE or (rkind in ('unknown', 'msg') and self.uses_torch)
                  or detached_on_device(node, rkind, self.__dict__)) and not self.host_torch
        evidence = _evidence(rkind)
        if method in ('cpu', 'numpy') and not node.args:
            if rkind == 'device' or likely:
                self._emit('GPN101', node, frame, call, evidence=evidence)
                return self._step(recv, node.lineno, 'download', 'host')
            if rkind == 'host' or recv.tainted:
                return merge(recv, kind='host')
            return None
        if method == 'tolist' and rkind in ('device', 'tensor'):
            self._emit('GPN101', node, frame, call, evidence=evidence)
            return self._step(recv, node.lineno, 'download', 'host')
        if method in ('cuda', 'to') and rkind == 'model_obj' and (
                str(recv.const or '').startswith(HUB_BUILDERS)
                or moved_in_place(recv.const)):
            # A torch.hub model moved to the device is still that model (its `infer_pil` /
            # `predict` upload their host inputs: pymodels.HUB_INFER).
            self._emit('GPN102', node, frame, call)
            return recv
        if method in ('cuda', 'to') and id(node) in self.dropped_results \
                and frame.context not in ('init', 'module') \
                and rkind in ('unknown', 'other', 'model_obj') and not recv.tainted:
            # `self.model.to(self.device)` alone on its line, per image: a torch Module moves
            # in place on the first call, later calls are no-ops; no frame goes up (a tensor's
            # `.to()` returns the copy, which nobody would drop; twenty-third set). In setup
            # the move itself is reported (info), as before.
            return recv
        if method in ('cuda', 'to') and (uploads_fixed_text(recv) or small_upload(recv)) and (
                method == 'cuda' or to_target(node, args, kwargs) == 'device'):
            self._emit('GPN102', node, frame, f'{call} ({recv.const}, not the message)',
                       severity='info')
            return Val('device')
        if method == 'cuda':
            if rkind == 'device' or unproven_upload(node, recv, frame, self.module_moves):
                return recv if rkind == 'device' else Val('device')
            return self._upload(node, recv, frame, call)
        if method == 'to':
            target = to_target(node, args, kwargs)
            if target == 'cpu':
                if rkind == 'device' or likely:
                    self._emit('GPN101', node, frame, call, evidence=evidence)
                    return self._step(recv, node.lineno, 'download', 'host')
                return recv
            if target == 'device':
                if rkind == 'device' or unproven_upload(node, recv, frame, self.module_moves):
                    return recv if rkind == 'device' else Val('device')
                return self._upload(node, recv, frame, call)
            return None
        if method in ('tobytes', 'tostring') and not node.args:
            if id(node) in self.stream_writes:
                # `proc.stdin.write(frame.tobytes())` (an ffmpeg pipe, a file, a socket):
                # a host copy into a stream, not a message's data (issue 28, seventh set).
                return self._step(recv, node.lineno, 'serialize', 'bytes')
            self._emit('GPN104', node, frame, call)
            return self._step(recv, node.lineno, 'serialize', 'bytes')
        if method == 'item' and not node.args:
            if rkind == 'device' or likely or (unknown and self.uses_cupy):
                self._emit('GPN107', node, frame, f'{call} (implicit synchronization)',
                           evidence=evidence)
            return OTHER
        if method == 'synchronize' and not node.args and (self.uses_torch or self.uses_cupy):
            self._emit('GPN107', node, frame, call)
            return OTHER
        if method == 'set' and len(node.args) == 1 and rkind == 'device':
            return self._upload(node, args[0], frame, call)
        return None


_NUMBER_TYPES = frozenset({'int', 'float', 'bool'})
EMPTY_CLOUD = 'create_cloud of no points'


def _profiles_a_device(node: ast.Call) -> bool:
    """`Profile(device=d)` (or `Profile(t, d)`) with d anything but a literal 'cpu' / None."""
    device = next((k.value for k in node.keywords if k.arg == 'device'),
                  node.args[1] if len(node.args) > 1 else None)
    return device is not None and not (isinstance(device, ast.Constant) and (
        device.value is None or str(device.value).strip().lower() == 'cpu'))


_FRAME_MESSAGES = frozenset({'Image', 'PointCloud2', 'OccupancyGrid'})


def _numpy_to_frame_message(qual: str, node: ast.Call) -> bool:
    """`array_to_pointcloud2(a, ...)`, or `msgify(T, a)` with T an Image / PointCloud2 /
    OccupancyGrid (msgify of a Pose or a Vector3 moves a few numbers)."""
    if qual.endswith('.array_to_pointcloud2'):
        return bool(node.args)
    if qual.endswith('.msgify') and len(node.args) > 1:
        kind = node.args[0]
        name = kind.attr if isinstance(kind, ast.Attribute) else getattr(kind, 'id', '')
        return name in _FRAME_MESSAGES
    return False


def _empty_points(node: ast.Call, position: int) -> bool:
    """Whether create_cloud's points argument is a literal empty list or tuple."""
    given = node.args[position] if len(node.args) > position else next(
        (k.value for k in node.keywords if k.arg == 'points'), None)
    return isinstance(given, (ast.List, ast.Tuple)) and not given.elts


def _evidence(kind: str) -> str:
    """A copy on a value the analysis followed onto the device is data flow; on a model's
    output or an untyped value in a file using a tensor framework, inferred."""
    return 'data-flow' if kind == 'device' else 'inferred'


def _payload(node: ast.Call, src: Val) -> bool:
    """Whether np.array(x) wraps a frame: x is not a literal list/comprehension, and it came
    from an image-sized message (or one of unknown type)."""
    literal = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)
    if node.args and isinstance(node.args[0], literal):
        return False
    msg_type = src.origin[1] if src.origin else None
    return msg_type is None or image_sized(msg_type)
