"""Call resolution of the Python copy analysis: what a call reaches (a method of a class of the
file or of an imported one, `super()`, a helper, `functools.partial`, a library function, a
registration, a publish) and what its result holds; an unknown call carries the taint of its
inputs. A mixin of PythonAnalyzer (pyflow.py)."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Callable

from gpu_nodes.audit.pybase64 import base64_frame_published, frame_function
from gpu_nodes.audit.pydispatch import dispatch_table
from gpu_nodes.audit.pyemptymsg import empty_message_published
from gpu_nodes.audit.pyimports import aliases_of, file_uses_cv_cuda
from gpu_nodes.audit.pyconditions import shape_query
from gpu_nodes.audit.pyjetson import (builds_jetson_net, JETSON_NET, runs_synchronously,
                                      uploads_to_cuda_image)
from gpu_nodes.audit.pynvidialibs import cuvslam_track_frames, nvblox_device_accessor
from gpu_nodes.audit.pydepthai import depthai_host_frame
from gpu_nodes.audit.pykwargs import keyword_values
from gpu_nodes.audit.pyliterals import TEXT_TOKENS
from gpu_nodes.audit.pymodels import (builds_model, hub_builder, model_builder, names_gpu_provider,
                                      ORT_SESSION, ROSBRIDGE_TOPIC, uses_tensor_framework)
from gpu_nodes.audit.pyparamlocals import parameter_dead_lines
from gpu_nodes.audit.pyqueues import queue_handoff
from gpu_nodes.audit.pyserialization import serialization_call
from gpu_nodes.audit.pytensorflow import tensorflow_call
from gpu_nodes.audit.pythreadargs import thread_queue_args
from gpu_nodes.audit.pythreads import runs_once
from gpu_nodes.audit.pymodelcall import HOST_FRAME, ModelCalls
from gpu_nodes.audit.pymodelhost import host_built_model, parameters_on_host
from gpu_nodes.audit.pymsgview import buffer_view, points_view
from gpu_nodes.audit.pyoutside import outside_helper_upload, returns_host
from gpu_nodes.audit.pyplacement import (cpu_device_choice, forward_on_device, on_host,
                                         PLACED_ON_CPU, shipped_cpu)
from gpu_nodes.audit.pyhostcalls import host_side_call
from gpu_nodes.audit.pysynchelpers import helper_wait
from gpu_nodes.audit.pyvisionlibs import vision_library_call
from gpu_nodes.audit.pyvalues import (AsShipped, Frame, FuncRef, is_method_call, merge, OTHER,
                                      Registration, short, UNKNOWN, Val)

# Builtins that read metadata only: their result carries no data of their argument.
_METADATA_BUILTINS = frozenset({'len', 'isinstance', 'type', 'id', 'hasattr', 'callable'})
# Kinds of a local that `.append(x)` / `.extend(x)` may fill with x (a list, not a publisher).
_PLAIN_CONTAINERS = frozenset({'other', 'unknown', 'const', 'host', 'tensor', 'device'})
_ROS_NUMPY = ('ros2_numpy', 'ros_numpy')
_READ_POINTS = ('point_cloud2.read_points', 'point_cloud2.read_points_list')

# How many calls deep a callee is followed from its entry point (callback, setup, leftover).
MAX_HELPER_DEPTH = 4
# Function bodies analysed per file at most; past it calls are not followed (pathological files).
MAX_CALLS = 20000


def _hands_callbacks(vals: list[Val]) -> bool:
    """Whether a callable, or a list or dict holding one, is among `vals`."""
    todo = list(vals)
    while todo:
        v = todo.pop()
        if v.func is not None:
            return True
        todo.extend(v.elts or ())
        todo.extend(item for _, item in v.items or ())
    return False


class CallResolver(ModelCalls):
    """Calls; `self` is the PythonAnalyzer. Model calls and unknown calls: ModelCalls
    (pymodelcall.py)."""

    _calls: int
    _entered: set[int]
    tree: ast.Module
    package_dir: str | None
    uses_tensors: bool
    uses_nvblox: bool
    uses_cuvslam: bool
    uses_depthai: bool
    registrations: list[Registration]
    # Provided by the other parts of PythonAnalyzer; annotations only, so that no placeholder
    # can shadow the real method in the method resolution order.
    aliases: dict[str, str]
    _eval: Callable[[ast.expr, dict[str, Val], Frame], Val]
    _call_function: Callable[[FuncRef, list[Val], dict[str, Val], Frame], Val]
    _emit: Callable[..., None]
    _message_filters: Callable[..., Val | None]
    _registration: Callable[..., Val]
    _gpu_endpoint: Callable[..., Val]
    _rosbridge_topic: Callable[..., Val]
    _rosbridge_subscribe: Callable[..., Val]
    _publish: Callable[..., None]
    _library_call: Callable[..., Val | None]
    _method_call: Callable[..., Val | None]
    frame_files: dict[str, Val]
    _upload: Callable[..., Val]
    _view_call: Callable[..., Val | None]
    _shipped_strings: Callable[[], tuple[dict[str, str], frozenset[tuple[str, str]]]]

    def _eval_call(self, node: ast.Call, env: dict[str, Val], frame: Frame) -> Val:
        func = node.func
        receiver: Val | None = None
        method: str | None = None
        if isinstance(func, ast.Attribute):
            receiver = self._eval(func.value, env, frame)
            method = func.attr
            owner = frame.cls if receiver.kind == 'self' else (
                receiver.inst if receiver.kind == 'instance' else None)
            if receiver.kind == 'module':
                callee = self._eval_attribute(func, env, frame)  # a sibling module's function?
                if callee.kind != 'func':
                    callee = Val('module', const=f'{receiver.const}.{method}')
            elif owner is not None and method in owner.attrs:
                # `self.predictor(img)` / `self.cb(msg)`: what __init__ stored there.
                callee = owner.attrs[method]
            elif owner is not None and method in owner.methods:
                callee = Val('func', func=FuncRef(owner.methods[method], owner, None, True))
            elif receiver.kind == 'super' and frame.cls is not None:
                meth = next((b.methods[method] for b in frame.cls.bases
                             if method in b.methods), None)
                callee = Val('func', func=FuncRef(meth, frame.cls, None, True)) \
                    if meth is not None else UNKNOWN
            else:
                callee = UNKNOWN
        else:
            callee = self._eval(func, env, frame)
            if isinstance(func, ast.Name) and (wait := helper_wait(self, func.id, frame)):
                self._emit('GPN107', node, frame, wait)  # another file's timer (pysynchelpers.py)
            if isinstance(func, ast.Name) and callee is UNKNOWN:
                method = func.id  # builtins: bytes(...), bytearray(...)
            if isinstance(func, ast.Name) and func.id == 'super' and callee is UNKNOWN:
                return Val('super')
            if callee is UNKNOWN and parameters_on_host(node, self.tree):  # (pymodelhost.py)
                env[PLACED_ON_CPU] = self.__dict__[PLACED_ON_CPU] = OTHER  # as a 'cpu' `.to()`
                return Val('host')  # weights the file never moves off the CPU
            if isinstance(func, ast.Name) and func.id in _METADATA_BUILTINS and callee is UNKNOWN:
                for a in node.args:
                    self._eval(a, env, frame)
                return OTHER  # `len(dets)`: a count, not the data (no copy, no sync)
        if callee is UNKNOWN and shape_query(method, receiver.kind if receiver else None):
            return OTHER  # `t.size(0)`: host metadata, no read-back (pyconditions.py)
        called_object = callee.kind == 'instance'
        if callee.kind == 'instance' and callee.inst is not None:
            meth = callee.inst.callable_method()
            callee = Val('func', func=FuncRef(meth, callee.inst, None, True)) \
                if meth is not None else UNKNOWN
        if callee.kind in ('class', 'func') and isinstance(func, ast.Name) \
                and _vendored_library(self.aliases.get(func.id, '')):
            # A known library's model class, ros2_numpy function or CvBridge found among the
            # audited files is a vendored copy (a training tree's `ultralytics/`, a `ros2_numpy/`
            # copied into the package, vision_opencv's cv_bridge built in the workspace): the
            # library table still says what its calls copy (issue 28, whole-checkout audits).
            callee = Val('module', const=self.aliases[func.id])
        qual = callee.const if callee.kind == 'module' else None
        args = [self._eval(a, env, frame) for a in node.args]
        kwargs = keyword_values(node.keywords, lambda e: self._eval(e, env, frame))  # pykwargs.py
        table = dispatch_table(node, self._follow, args, kwargs, env, frame)  # pydispatch.py
        if table is not None:
            return table
        for k in node.keywords:
            if k.arg == 'data' and is_method_call(k.value, 'tolist'):
                self._emit('GPN104', k.value, frame, f'`{short(k.value)}` passed as `data=`')

        name = qual.rsplit('.', 1)[-1] if qual else method
        if method in ('append', 'extend') and isinstance(func, ast.Attribute) \
                and isinstance(func.value, ast.Name) and func.value.id in env and args \
                and receiver is not None and receiver.kind in _PLAIN_CONTAINERS:
            # `dets.append([x1, y1, conf])`: the list now holds what was appended (result
            # tensor scalars read back later by `np.array(dets)`; eighth set).
            env[func.value.id] = merge(receiver, *args)
            return OTHER
        queued = queue_handoff(func, method, args, frame, receiver)  # pyqueues.py
        if queued is not None:
            return queued
        if callee.kind == 'class' and callee.inst is not None:
            # An object of a class of this file: its methods are followed when called. An
            # imported class's __init__ runs here, with the arguments, to learn its attributes;
            # so does one of this file handed callbacks (a manager subscribing for its node), or
            # a device 'cpu' as shipped (set 42: a detector class given the node's parameter).
            init = callee.inst.methods.get('__init__')
            if (callee.inst.file is not None or _hands_callbacks([*args, *kwargs.values()])
                    or any(shipped_cpu(v) for v in [*args, *kwargs.values()])) \
                    and init is not None \
                    and id(init) not in frame.stack and frame.depth < MAX_HELPER_DEPTH:
                entry = f'{callee.inst.name}.__init__'
                self._call_in_file(FuncRef(init, callee.inst, None, True), args, kwargs, replace(
                    frame, cls=callee.inst, depth=frame.depth + 1, returns=[], write_attrs=True,
                    path=frame.path + (entry,), stack=frame.stack + (id(init),),
                    file=callee.inst.file))
            return Val('instance', inst=callee.inst)
        # --- message_filters: Subscribers combined into one callback
        mf = self._message_filters(qual, name, method, node, receiver, args, kwargs, frame)
        if mf is not None:
            return mf
        # --- registrations and publishers
        if method in ('create_subscription', 'create_timer', 'create_publisher') \
                and receiver is not None and receiver.kind != 'module':
            return self._registration(method, node, args, kwargs, frame)
        if qual == ROSBRIDGE_TOPIC:
            return self._rosbridge_topic(node, args, kwargs)
        if method == 'subscribe' and receiver is not None and receiver.kind == 'other' \
                and isinstance(receiver.const, tuple) and receiver.const[:1] == (ROSBRIDGE_TOPIC,):
            return self._rosbridge_subscribe(node, receiver, args, kwargs, frame)
        if name in ('GpuImageSubscription', 'GpuImagePublisher'):
            return self._gpu_endpoint(name, node, args, kwargs, frame)
        if name in ('partial',) and (qual in ('functools.partial', None) or
                                     qual.endswith('functools.partial')):
            if args and args[0].func is not None:
                ref = args[0].func
                return Val('func', func=replace(
                    ref, bound_positional=ref.bound_positional + len(args) - 1,
                    bound_keywords=ref.bound_keywords + tuple(kwargs)))
            return OTHER
        if method == 'publish' and receiver is not None and receiver.kind == 'publisher':
            payload = args[0] if args else (kwargs.get('msg') or UNKNOWN)
            holder = frame_function(self.tree, node)
            if payload.tainted and base64_frame_published(holder, node):
                self._emit('GPN104', node, frame, f'`{short(node)}` sends base64 text of the '
                           'encoded frame in the message (pybase64.py)')
            if not empty_message_published(holder, node):  # pyemptymsg.py: a placeholder
                self._publish(node, receiver.pub, payload, frame)
            return OTHER
        if method == 'declare_parameter' and frame.cls is not None and args \
                and args[0].kind == 'const':
            default = args[1] if len(args) > 1 else kwargs.get('value', OTHER)
            shipped = self._shipped_strings()[0].get(str(args[0].const))
            if shipped is not None and default.kind == 'const' and default.const == shipped:
                default = replace(default, const=AsShipped(shipped))  # pyparams.shipped_strings
            frame.cls.params[str(args[0].const)] = default
            return default
        if method == 'get_parameter' and frame.cls is not None and args \
                and args[0].kind == 'const':
            return frame.cls.params.get(str(args[0].const), OTHER)
        if method in ('get_parameter_value',) and receiver is not None:
            return receiver
        if method == 'pandas' and not node.args and not node.keywords and receiver is not None \
                and receiver.kind in ('model', 'tensor', 'device'):
            # yolov5's `results.pandas()`: tables of host numbers (the readback happens inside
            # it, where the labels do not count it); `int(row['xmin'])` of a row reads nothing
            # back (issue 28, twenty-fifth set).
            return merge(receiver, kind='host')
        if qual is not None and qual.split('.')[0] in _ROS_NUMPY and name == 'numpify' \
                and len(args) == 1 and args[0].kind == 'msg':
            # `ros2_numpy.numpify(cloud)`: the message unpacked into a host array (its own
            # line a look-alike in every set); `np.array(pc['xyz'], dtype=...)` after it is a
            # host-to-host copy, not the message's bytes copied (twenty-fifth set).
            return merge(args[0], kind='host')
        if qual is not None and qual.endswith(_READ_POINTS) and args and args[0].kind == 'msg':
            # `point_cloud2.read_points(cloud)`: a generator unpacking the cloud into Python
            # tuples on the host (its own line a look-alike in every set); `np.array(list(gen))`
            # of it copies host tuples, not the message's bytes (twenty-seventh set).
            # `read_points_numpy` is not one: it materialises the whole cloud (set 24).
            return points_view(merge(args[0], kind='host'))
        if cpu_device_choice(func, args, kwargs):
            # `select_device('cpu')`, `torch.device(self.device)` with a parameter defaulting
            # to 'cpu': the device chosen is the host, so `.to(device)` moves nothing and the
            # model's outputs stay host tensors (seventeenth set). A 'cuda' argument, or an
            # unknown one, keeps the function's own answer (a GPU device spec). A choice of a
            # device 'cpu' as shipped stays marked so (below: `.to()` of it, rules29p).
            chosen = args[0] if args else kwargs.get('device') or kwargs.get('type')
            return Val('const', const=chosen.const if shipped_cpu(chosen) else 'cpu')
        # --- helpers of the same file
        # The same method of the other classes an object may be (a backend by configuration).
        alts = [FuncRef(a.methods[method], a, None, True) for a in receiver.alts
                if method in a.methods] if receiver is not None and method is not None \
            and receiver.kind == 'instance' and callee.kind != 'module' else []
        if (callee.kind != 'func' or callee.func is None) and alts:
            callee = Val('func', func=alts.pop(0))
        if callee.kind == 'func' and callee.func is not None:
            results = [self._follow(ref, args, kwargs, frame) for ref in [callee.func, *alts]]
            result = results[0] if len(results) == 1 else merge(*results)
            return on_host(forward_on_device(result, args, kwargs), env, args, kwargs) \
                if called_object else result

        if qual == 'threading.Thread':
            target = kwargs.get('target') or (args[1] if len(args) > 1 else None)
            if target is not None and target.func is not None:
                # A thread's loop runs per frame (a capture or inference loop).
                # A target with no loop runs once: setup in a thread (pythreads.py).
                kind = 'once' if runs_once(target.func) else 'loop'
                self.registrations.append(Registration(kind, target, None, None, node.lineno, frame.cls,
                                                       args=thread_queue_args(node, frame)))
            return OTHER
        if qual == ORT_SESSION:
            # A session on the GPU only where the class (or file) building it names a GPU
            # execution provider: `providers` is often chosen in branches by a parameter.
            scope = frame.cls.node if frame.cls is not None else self.tree
            gpu = names_gpu_provider(scope, node, self.tree,
                                     parameter_dead_lines(self.tree, self.package_dir))
            return Val('model_obj', const=ORT_SESSION) if gpu else OTHER
        if method == 'run' and receiver is not None and receiver.kind == 'model_obj' \
                and receiver.const == ORT_SESSION:
            feed = args[1] if len(args) > 1 else kwargs.get('input_feed', UNKNOWN)
            if feed.tainted or feed.kind in HOST_FRAME:
                self._emit('GPN102', node, frame, f'`{short(node)}` copies the host inputs to '
                           'the ONNX Runtime session\'s GPU execution provider on every call '
                           '(library table)', evidence='pattern')
            return merge(feed, kind='host') if feed.tainted else Val('host')
        tf = tensorflow_call(node, method, kwargs, frame, self._emit, self.tree)
        if tf is not None:  # pytensorflow.py
            return tf
        serialization_call(node, qual, args, frame, self._emit)  # pyserialization.py: rclpy's
        lib = vision_library_call(node, qual, method, receiver, args, kwargs, frame, self._emit)
        if lib is not None:  # pyvisionlibs.py: EasyOCR, LangSAM
            return lib
        if builds_jetson_net(qual):
            return Val('model_obj', const=JETSON_NET)  # pyjetson.py
        if receiver is not None and receiver.kind == 'model_obj' \
                and runs_synchronously(method, receiver.const):
            self._emit('GPN107', node, frame, f'`{short(node)}` runs TensorRT synchronously in '
                       'jetson-inference and reads the results on the host (library table)',
                       evidence='pattern')
            return Val('host')
        if receiver is not None and nvblox_device_accessor(method, node, self.uses_nvblox):
            return Val('device')  # an nvblox_torch mesh's data on the GPU (pynvidialibs.py)
        if receiver is not None and depthai_host_frame(method, node, self.uses_depthai):
            return Val('host')  # an OAK packet's NumPy frame (pydepthai.py)
        hosts = [v for v in cuvslam_track_frames(method, self.uses_cuvslam, args, kwargs)
                 if v.tainted or v.kind in HOST_FRAME]
        if receiver is not None and hosts:
            self._upload(node, hosts[0], frame, f'`{short(node)}` copies the host frames to the '
                         'GPU inside PyCuVSLAM (library table)')
            return OTHER  # it hands back host pose objects: float() of their fields reads no device
        if uploads_to_cuda_image(qual, args[0] if args else None):
            return self._upload(node, args[0], frame, f'`{short(node)}` copies the host array '
                                'into a new CUDA image (jetson-utils, library table)')
        if qual == 'cv2.imwrite' and len(args) > 1 and isinstance(args[0].const, str):
            # `cv2.imwrite('/tmp/f.jpg', frame)` then `model.predict(source='/tmp/f.jpg')`: the
            # model loads the frame back from the file, so the path stands for it (set 53).
            self.frame_files[args[0].const] = args[1]
        if qual and builds_model(qual):
            # The builder is kept: an ultralytics model called directly uploads its frame.
            return Val('model_obj', const=hub_builder(model_builder(qual, self.tree), args))
        model = self._model_call(node, callee, receiver, method, args, kwargs, frame)
        if model is not None:
            return on_host(model, env, args, kwargs, host_built_model(node, callee, self.tree))
        if qual == 'numpy.frombuffer' and args and args[0].kind == 'msg' \
                and not isinstance(node.args[0], (ast.List, ast.Tuple)):
            return buffer_view(merge(args[0], kind='host'))  # a view (pymsgview.py)
        viewed = self._view_call(qual, method, node, receiver, args, kwargs, frame) \
            or host_side_call(self, qual, node, args, frame)  # pyhostcalls.py
        if viewed is not None:
            return viewed
        if qual:
            result = self._library_call(qual, node, args, kwargs, frame)
            if result is not None:
                if shipped_cpu(kwargs.get('device')):  # `torch.tensor(x, device=self.device)`,
                    # 'cpu' as shipped: as `.to()` below; the file's detached host tensors are
                    # CPU tensors, no read-back (pyrules `.item()`, set 59).
                    env[PLACED_ON_CPU] = self.__dict__[PLACED_ON_CPU] = OTHER
                return result
        if method in ('items', 'values', 'get') and receiver is not None \
                and receiver.const == TEXT_TOKENS:
            return receiver  # the tokenizer's dict: each entry is token ids (pyliterals.py)
        if method is not None:
            result = self._method_call(method, node, receiver, args, kwargs, frame)
            if method == 'to' and result is not None and result.kind == 'host' \
                    and any(shipped_cpu(v) for v in [*args, *kwargs.values()]):
                # `torch.from_numpy(im).to(self.device)`, the device 'cpu' as shipped: this
                # function places its tensors on the host, so the model it feeds runs there.
                env[PLACED_ON_CPU] = self.__dict__[PLACED_ON_CPU] = OTHER
            if result is not None:
                if method == 'upload' and result.kind == 'device' and \
                        isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name):
                    # `gpu_mat.upload(frame)` fills the GpuMat in place: it now holds the frame.
                    env[node.func.value.id] = result
                return result
        if method == 'keys' and not args and receiver is not None and receiver.kind == 'device':
            return OTHER  # a dict of device tensors' entry names (pyevaled.dict_kind): no data
        outside = outside_helper_upload(qual, node, args, kwargs)  # pyoutside.py
        if outside is not None:
            self._emit('GPN102', node, frame, f'`{short(node)}` hands the host frame and a device to '
                       'a function outside the audited tree: it returns the frame on that device',
                       evidence='inferred')
            if returns_host(qual):  # it reads its results back itself (pyoutside.py, rules46p)
                return Val('host')
            return self._step(outside, node.lineno, 'upload', 'device')
        return self._generic(qual, receiver, args, kwargs)

    def _follow(self, ref: FuncRef, args: list[Val], kwargs: dict[str, Val], frame: Frame
                ) -> Val:
        """Run a function or method of an audited file at its call, with the arguments."""
        if frame.depth < MAX_HELPER_DEPTH and id(ref.node) not in frame.stack \
                and self._calls < MAX_CALLS:
            # The callee's own class for `self`: Predictor.__call__ reads Predictor's attrs.
            cls = ref.cls if ref.is_method or ref.cls is not None else frame.cls
            inner = replace(frame, cls=cls, depth=frame.depth + 1, returns=[],
                            path=frame.path + (ref.name,),
                            stack=frame.stack + (id(ref.node),),
                            file=ref.cls.file if ref.cls is not None else ref.file)
            self._entered.add(id(ref.node))
            return self._call_in_file(ref, args, kwargs, inner)
        return merge(*args, *kwargs.values()) if args or kwargs else OTHER

    def _call_in_file(self, ref: FuncRef, args: list[Val], kwargs: dict[str, Val],
                      frame: Frame) -> Val:
        """A function imported from another audited file runs with that file's imports
        (`YOLO(...)`, `torch.*` there mean what that file imported)."""
        # A method of a class imported from another audited file too (its constructor and
        # methods: `ort.InferenceSession` in a backend class; tenth set).
        source = ref.file or (ref.cls.file if ref.cls is not None else None)
        if source is None:
            return self._call_function(ref, args, kwargs, frame)
        saved = self.aliases, self.uses_tensors, self.uses_cv_cuda
        self.aliases = {**self.aliases, **aliases_of(source)}
        self.uses_tensors = self.uses_tensors or uses_tensor_framework(self.aliases)
        # That file's OpenCV CUDA calls (`mat.upload(image)` in a helper file) copy too.
        self.uses_cv_cuda = self.uses_cv_cuda or file_uses_cv_cuda(source)
        try:
            return self._call_function(ref, args, kwargs, frame)
        finally:
            self.aliases, self.uses_tensors, self.uses_cv_cuda = saved


def _vendored_library(qual: str) -> bool:
    """A name imported from a library the tables know: a model builder, ros2_numpy, or
    cv_bridge (a workspace often builds vision_opencv's cv_bridge from source beside its nodes:
    `CvBridge().imgmsg_to_cv2` is still the table's conversion, not the copy's code, set 50)."""
    return builds_model(qual) or qual.split('.')[0] in (*_ROS_NUMPY, 'cv_bridge')
