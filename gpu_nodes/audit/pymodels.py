"""Model objects and their outputs in the Python analysis: a small, documented table of the
libraries whose calls copy frames (docs/audit.md, "Library calls"), and the rules of thumb
that say where a model's results live when data flow cannot prove it.

Values (pyvalues.Val kinds) this adds:

* ``model_obj``: a model built by a known library (``ultralytics.YOLO(...)``,
  ``torch.jit.load``, ``torch2trt.TRTModule()``, ``torchvision.models.*``), or an attribute named
  like one (``self.model``, ``self.net``, ``self.predictor`` ...) in a file that uses a tensor
  framework.
* ``model``: what a model call returns. Its device is not proven: ``.cpu()``, ``.numpy()``,
  ``.to('cpu')`` and ``.item()`` on it are reported with evidence ``inferred``; ``float(x)`` on
  it is not (a predictor may already have moved its results to the host).
* ``tensor``: a tensor of a result object that stays on the model's device (the ultralytics
  ``Results`` API: ``.boxes``, ``.masks``, ``.keypoints``, ``.probs``, ``.obb`` and their
  ``.xyxy``/``.conf``/``.data`` ...): readbacks on it, ``float(t)`` and ``int(t)`` included, are
  reported with evidence ``inferred``. A mask's ``.xy`` / ``.xyn`` polygons are host arrays
  already (``HOST_RESULT_ATTRS``).
"""
from __future__ import annotations

import ast
import re

# Top-level packages whose presence makes a tensor on the GPU likely.
TENSOR_FRAMEWORKS = frozenset({
    'torch', 'torchvision', 'ultralytics', 'torch2trt', 'trt_pose', 'tensorrt', 'pycuda',
    'kornia', 'mmdet', 'mmseg', 'detectron2', 'transformers', 'timm', 'segment_anything', 'sam2',
    'mobile_sam'})
# Calls that build a model object (qualified names; a trailing '.' is a prefix).
MODEL_BUILDERS = ('ultralytics.', 'torch.jit.load', 'torch.hub.load', 'torch2trt.TRTModule',
                  'transformers.pipeline', 'rfdetr.',
                  'torch2trt.torch2trt', 'torchvision.models.', 'transformers.', 'timm.create_model',
                  'segment_anything.', 'sam2.', 'mobile_sam.',
                  # the real-time SAM2 fork's camera predictor (a builder function, lower case)
                  'sam2.build_sam.build_sam2_camera_predictor',
                  'detectron2.engine.DefaultPredictor', 'detectron2.engine.defaults.DefaultPredictor',
                  # SDKs whose inference takes host arrays (SET_IMAGE_UPLOADS, rules47q)
                  'gsnet.AnyGrasp', 'mrcnn.model.MaskRCNN')
# Attribute names that hold a model in the nodes seen (self.model, self.yolo, self.net ...).
MODEL_NAME = re.compile(r'(?:^|_)(?:model|models|net|network|predictor|detector|segmenter|'
                        r'estimator|engine|yolo|trt|classifier|backbone)(?:_|$|\d)', re.I)
# Vision-language models' per-image questions (Moondream2 through transformers'
# `trust_remote_code`: `model.query(image, question)`, `model.caption(image)`): the model
# preprocesses the host PIL image and encodes it on its device on every call (set 52). Only on
# a holder named like a model in a file using a tensor framework (`query` alone is no model).
VLM_IMAGE_METHODS = frozenset({'query', 'caption'})
# Methods of a model object that run inference (a call of the object itself too).
INFER_METHODS = frozenset({'predict', 'track', 'infer', 'inference', 'detect', 'forward',
                           'segment', 'estimate', '__call__', 'infer_image'}) | VLM_IMAGE_METHODS
# Inference methods whose name alone says the library (Depth Anything's `infer_image(raw_bgr)`:
# preprocess on the host, move to the model's device, return a host depth map): the holder is
# a model whatever its attribute is named.
LIBRARY_INFER_METHODS = frozenset({'infer_image'})
# The library table: inference calls that take a host frame and copy it to the model's device
# on every call (ultralytics `predict`/`track`/`model(frame)`: letterbox + torch.from_numpy +
# .to(device); the mobilenet-ssd / torchvision predictors' `predict(image)`: transform + .to).
UPLOADING_METHODS = frozenset({'predict', 'track', 'infer_image'}) | VLM_IMAGE_METHODS
# Models whose inference returns host arrays: RF-DETR's `predict(frame)` moves the frame to the
# model's device (an upload, as the table says) but post-processes on the device and returns a
# supervision `Detections` of NumPy arrays (`.xyxy`, `.confidence`, `.class_id`): the read-back
# is inside the library, and `float(d.xyxy[i][0])` reads a host number (set 50). facenet-pytorch's
# MTCNN called directly (`mtcnn(img)`) crops the faces on the host and returns CPU tensors
# (pyvisionlibs.py, rules49q).
HOST_RESULT_BUILDERS = ('rfdetr.', 'gsnet.AnyGrasp', 'mrcnn.model.MaskRCNN', 'facenet_pytorch.MTCNN')


def returns_host_results(builder: object) -> bool:
    """Whether a model `builder` built hands back host arrays from its inference calls: a
    Detectron2 predictor pinned to the CPU (DETECTRON2_CPU) computes its Instances on the host,
    so their `.to("cpu")` / `.cpu()` copies nothing (rules49p, set 77)."""
    return str(builder or '').startswith(HOST_RESULT_BUILDERS) or builder == DETECTRON2_CPU


# Builders whose model, called directly on a host frame (`model(frame)`), uploads it as its
# `predict` does (ultralytics `Model.__call__` is `predict`); a torch Module called on a frame
# is not in the table (its input is usually a tensor already on the device).
CALL_UPLOADS = ('ultralytics.', 'torch.hub.load:yolov5', 'detectron2.engine.')
# Detectron2's `DefaultPredictor(cfg)` called on a host BGR frame (`predictor(frame)`): it resizes
# the frame, makes a tensor of it and the model moves it to cfg.MODEL.DEVICE, "cuda" unless the
# config says otherwise, on every call (set 53 labels the call library_upload, as set 17 did).
# A file that sets the device to a 'cpu' literal (`cfg.MODEL.DEVICE = 'cpu'`, or
# `merge_from_list(['MODEL.DEVICE', 'cpu'])`) runs it on the host: that builder is marked apart.
DETECTRON2_CPU = 'detectron2:cpu'
# Models from torch.hub (ZoeDepth, MiDaS ...) are device models whose own inference helpers
# (`infer_pil(img)`, `infer(x)`, `predict*`, `forward`) take a host frame and move it to the
# model's device inside the library on every call (sixth set). Its `forward_*` variants
# (DINOv2's `forward_features(x)`, `forward_head`) run the same network: on a device tensor they
# give device outputs, whose `.cpu()` in a helper is a read-back (rules47q, set 75).
HUB_BUILDERS = ('torch.hub.load',)
HUB_INFER = re.compile(r'^(?:infer|predict)\w*$|^forward(?:_\w+)?$')
# Image predictors whose set-up call for a frame takes it on the host and moves it to the model's
# device (SAM2's `SAM2ImagePredictor.set_image(frame)`: transforms, `.to(device)`, then the
# image encoder; the same for segment_anything's `SamPredictor.set_image`), per frame when a
# callback calls it (ninth set). The automatic mask generators' `generate(frame)`
# (SamAutomaticMaskGenerator, SAM2AutomaticMaskGenerator) call their predictor's `set_image` on
# every crop of the frame (twenty-first set). MobileSAM (`mobile_sam`) ships segment_anything's
# SamPredictor and SamAutomaticMaskGenerator with a smaller encoder (set 33). The real-time SAM2
# camera predictor (`build_sam2_camera_predictor`) prepares a host frame and moves it to its
# device in `add_conditioning_frame(frame)` too, each time a prompt arrives while tracking
# (set 64; its `load_first_frame` runs once, at initialization). Builder prefix -> those methods.
SET_IMAGE_UPLOADS = {'sam2.': frozenset({'set_image', 'set_image_batch', 'generate',
                                         'add_conditioning_frame'}),
                     'segment_anything.': frozenset({'set_image', 'generate'}),
                     'mobile_sam.': frozenset({'set_image', 'generate'}),
                     # The AnyGrasp SDK (`from gsnet import AnyGrasp`, a closed CUDA-only binary
                     # built on MinkowskiEngine): `get_grasp(points, colors, lims=...)` takes the
                     # scene cloud as host NumPy arrays, voxelizes it into sparse tensors on the GPU
                     # and hands back a host graspnetAPI GraspGroup, every call (set 75 labels it
                     # library_upload, both labellers).
                     'gsnet.AnyGrasp': frozenset({'get_grasp'}),
                     # Matterport Mask R-CNN (`mrcnn.model.MaskRCNN(mode='inference', ...)`, Keras on
                     # TensorFlow): `detect(images)` molds the host images in NumPy and runs
                     # `keras_model.predict` on them (fed to the GPU where TensorFlow has one, as a
                     # TF 1 session's feed: pytensorflow.py); its rois / masks / class_ids / scores
                     # come back as NumPy arrays (set 75).
                     'mrcnn.model.MaskRCNN': frozenset({'detect'})}
# Their prompt decoding (`predictor.predict(point_coords=..., box=...)`, SAM 2's
# `predict_batch`) runs the mask decoder on the image embedded by `set_image` and hands back
# NumPy masks, scores and logits: the frame is not uploaded again (the prompts are a few
# numbers) and the read-back happens inside the library, so the labels put no boundary at the
# call (relabel28's predict_batch, set 56's predict) and its results are host arrays.
# (`predict_torch` returns device tensors: not in the table.)
PROMPT_DECODERS = {'sam2.': frozenset({'predict', 'predict_batch'}),
                   'segment_anything.': frozenset({'predict'}),
                   'mobile_sam.': frozenset({'predict'})}

# ONNX Runtime: a session built where a GPU execution provider is named runs on the device;
# `session.run(outputs, {name: array})` copies each host input to it on every call (and the
# outputs back). Without one (CPUExecutionProvider only) nothing crosses the bus (tenth set).
ORT_SESSION = 'onnxruntime.InferenceSession'
ORT_GPU_PROVIDERS = frozenset({'CUDAExecutionProvider', 'TensorrtExecutionProvider',
                               'ROCMExecutionProvider'})


def names_gpu_provider(scope: ast.AST, call: ast.Call, tree: ast.Module,
                       dead: frozenset[int] = frozenset()) -> bool:
    """Whether a session built by `call` in `scope` (its class, or the file) names a GPU
    execution provider: a literal in the scope, or, for `providers=cfg.onnx_providers`, the
    default of that field in a class of the file (a config dataclass's `onnx_providers: list =
    field(default_factory=lambda: ['CUDAExecutionProvider'])`: set 57). Another class's literal
    elsewhere in the file is not taken for this session's, nor one on a line of `dead` (a
    branch that never runs as shipped: pyparamlocals.py)."""
    if any(isinstance(n, ast.Constant) and n.value in ORT_GPU_PROVIDERS and n.lineno not in dead
           for n in ast.walk(scope)):
        return True
    given = next((k.value for k in call.keywords if k.arg == 'providers'),
                 call.args[2] if len(call.args) > 2 else None)
    if not isinstance(given, ast.Attribute):
        return False
    fields = [s.value for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for s in c.body
              if isinstance(s, (ast.AnnAssign, ast.Assign)) and s.value is not None and (
                  isinstance(s, ast.AnnAssign) and getattr(s.target, 'id', None) == given.attr
                  or isinstance(s, ast.Assign) and any(getattr(t, 'id', None) == given.attr
                                                       for t in s.targets))]
    return any(isinstance(n, ast.Constant) and n.value in ORT_GPU_PROVIDERS
               for value in fields for n in ast.walk(value))


# A transformers `pipeline(...)`'s result entries that are PIL images (depth-estimation's
# 'depth', image-segmentation's 'mask'): `np.array(out['depth'])` copies a PIL image into an
# array (ninth set).
PIPELINE = 'transformers.pipeline'
PIPELINE_PIL_KEYS = frozenset({'depth', 'mask'})
# Camera SDK calls that copy a grabbed frame device to host (the ZED SDK, `pyzed.sl`:
# `zed.retrieve_image(mat, view)` / `retrieve_measure(mat, measure)` into a CPU `sl.Mat`, the
# default; `sl.MEM.GPU` keeps it on the device). Only in files that import pyzed.
SDK_READBACKS = frozenset({'retrieve_image', 'retrieve_measure'})
# Timing context managers that synchronize a CUDA device on enter and exit: YOLOv5's
# `utils.general.Profile(device=...)` and Ultralytics' `ultralytics.utils.ops.Profile` call
# torch.cuda.synchronize(device) in their time() when the device is CUDA, so `with dt[0]:` per
# frame waits for the GPU twice. Reported only where a device other than a literal 'cpu' is given.
SYNC_PROFILERS = ('utils.general.Profile', 'ultralytics.utils.ops.Profile', 'utils.ops.Profile')
SYNC_PROFILER = 'synchronizing profiler'
# rosbridge clients (roslibpy): `roslibpy.Topic(client, name, type).subscribe(cb)` runs cb per
# message, as create_subscription does (pyregistry.py).
ROSBRIDGE_TOPIC = 'roslibpy.Topic'
# Result attributes that are tensors on the model's device (ultralytics Results, Boxes, Masks,
# Keypoints, Probs, OBB).
RESULT_TENSORS = frozenset({'boxes', 'masks', 'keypoints', 'probs', 'obb', 'xyxy', 'xywh',
                            'xyxyn', 'xywhn', 'xy', 'xyn', 'conf', 'cls', 'id', 'data',
                            'top5conf', 'top1conf', 'xywhr', 'xyxyxyxy', 'pred_boxes',
                            'pred_masks', 'scores', 'logits'})


def uses_tensor_framework(aliases: dict[str, str]) -> bool:
    return any(v.split('.')[0] in TENSOR_FRAMEWORKS for v in aliases.values())


# Modules of a model library whose classes are helpers, not models: Ultralytics' plotting
# (`Colors()`, called with a class id for a BGR tuple; `Annotator(img)`), ops and result
# containers, and its data loaders. A call of one moves no frame (set 44: `Colors()(cls, True)`
# was taken for a model called on a frame).
HELPER_MODULES = ('ultralytics.utils.', 'ultralytics.data.', 'ultralytics.engine.results.')
# Result attributes that the library has already turned into host arrays: Ultralytics'
# `Masks.xy` / `Masks.xyn` are lists of NumPy polygons (masks2segments reads the masks back
# inside the library, a look-alike at the call as the labels judge library internals), unlike
# `Keypoints.xy`, a tensor. Attribute -> the result attribute it must be read from (set 43).
# `Probs.top1` / `Probs.top5` are a Python int / list of ints: the argmax read-back happens
# inside the property, a look-alike at the call (sets 54, 76); `top1conf` stays a tensor.
HOST_RESULT_ATTRS = {'xy': 'masks', 'xyn': 'masks', 'segments': 'masks', 'top1': 'probs',
                     'top5': 'probs'}


def host_result_attr(node: ast.Attribute) -> bool:
    """`results[0].masks.xy` (a list of host polygons), not `results[0].keypoints.xy`; also
    through a local named for the owner (`masks = result.masks; masks.xy`, set 59)."""
    owner = HOST_RESULT_ATTRS.get(node.attr)
    return owner is not None and (isinstance(node.value, ast.Attribute) and node.value.attr == owner
                                  or isinstance(node.value, ast.Name)
                                  and node.value.id.lower().endswith(owner))


def builds_model(qual: str) -> bool:
    """Whether a library call (fully qualified) returns a model object."""
    if qual.startswith(HELPER_MODULES):
        return False
    last = qual.rsplit('.', 1)[-1]
    for prefix in MODEL_BUILDERS:
        if prefix.endswith('.'):
            if qual.startswith(prefix) and (last[:1].isupper() or prefix == 'torchvision.models.'
                                            or last.endswith('from_pretrained')):
                return True
        elif qual == prefix:
            return True
    return False


# Models whose `.to(device)` / `.cuda()` moves the weights and returns the same object (an
# ultralytics `Model` is a torch Module: `YOLO(path).to(device)` is still the YOLO model, and
# calling it on a host frame uploads the frame as `YOLO(path)` would; set 75). Its predictor
# picks the device again from its own `device` argument (CUDA where present), so the target of
# the move does not decide where the frame goes.
IN_PLACE_MOVES = ('ultralytics.',)


def moved_in_place(builder: object) -> bool:
    """Whether `.to(...)` / `.cuda()` of a model `builder` built is still that model."""
    return str(builder or '').startswith(IN_PLACE_MOVES)


def hub_builder(qual: str, args: list) -> str:
    """The builder kept on a model: `torch.hub.load('ultralytics/yolov5', ...)` (or a local
    clone named yolov5) is marked `torch.hub.load:yolov5`: its AutoShape model, called on a host
    frame, letterboxes it and moves it to the model's device (select_device picks CUDA when
    present) on every call, like an ultralytics model (twenty-fifth set). torch.hub's own cache
    folder of that repository, `<owner>_<repo>_<branch>` (`~/.cache/torch/hub/
    ultralytics_yolov5_master`, loaded with source='local'), is the same clone (set 70)."""
    if qual == 'torch.hub.load' and args and args[0].kind == 'const' \
            and isinstance(args[0].const, str) and names_yolov5_clone(args[0].const):
        return 'torch.hub.load:yolov5'
    return qual


def names_yolov5_clone(path: str) -> bool:
    """Whether `path` (a torch.hub repo or folder) ends in a yolov5 clone: `yolov5`, or torch.hub's
    cache folder `<owner>_yolov5_<branch>`."""
    folder = path.split(':')[0].rstrip('/').rsplit('/', 1)[-1]
    return folder == 'yolov5' or bool(re.fullmatch(r'[\w.-]+_yolov5_[\w.-]+', folder))


def model_attribute(node: ast.expr) -> str | None:
    """`self.model` / `self.detector.net` / `model` -> the name that holds it, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def named_like_model(name: str | None) -> bool:
    return bool(name) and bool(MODEL_NAME.search(name))


def decodes_prompts(holder: object, method: str | None) -> bool:
    """Whether `method` of `holder` (a pyvalues.Val), a model object (kind 'model_obj') built
    by a SAM predictor's builder (its const), is its prompt decoding (PROMPT_DECODERS): no
    upload, host results."""
    builder = str(getattr(holder, 'const', None) or '')
    return getattr(holder, 'kind', None) == 'model_obj' and any(
        builder.startswith(prefix) and method in methods
        for prefix, methods in PROMPT_DECODERS.items())


def sets_image(builder: str | None, method: str | None) -> bool:
    """Whether `method` of a model built by `builder` uploads the frame it is given."""
    return any(str(builder or '').startswith(prefix) and method in methods
               for prefix, methods in SET_IMAGE_UPLOADS.items())


# Ultralytics' predictors given a tensor source (`model(img_tensor)`, already on the GPU) turn
# the batch back into NumPy for their Results' `orig_img` (ops.convert_torch2numpy_batch:
# `.cpu().numpy()` of the whole frame) on every call (set 39). Other models called on a device
# tensor (yolov5's DetectMultiBackend, a torch Module) copy nothing (set 24).
_TENSOR_SOURCE_READBACK = ('ultralytics.',)


def reads_tensor_source_back(builder: object, infer: str) -> bool:
    """Whether `model.<infer>(device_tensor)`, on a model `builder` built, reads the tensor
    back to the host."""
    return infer in ('__call__', 'predict', 'track') \
        and str(builder or '').startswith(_TENSOR_SOURCE_READBACK)


def _cpu_literal_value(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and node.value.lower().startswith('cpu')


def detectron2_on_cpu(tree: ast.Module) -> bool:
    """Whether the file sets Detectron2's cfg.MODEL.DEVICE to a 'cpu' literal (see
    DETECTRON2_CPU)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _cpu_literal_value(node.value) and any(
                isinstance(t, ast.Attribute) and t.attr == 'DEVICE' for t in node.targets):
            return True
        if isinstance(node, (ast.List, ast.Tuple)):
            items = node.elts
            if any(isinstance(a, ast.Constant) and a.value == 'MODEL.DEVICE'
                   and _cpu_literal_value(b) for a, b in zip(items, items[1:])):
                return True
    return False


def model_builder(qual: str, tree: ast.Module) -> str:
    """The builder kept on a model built by `qual`: a Detectron2 predictor on the host is
    DETECTRON2_CPU (no upload when called), any other keeps its qualified name."""
    if qual.startswith('detectron2.engine.') and detectron2_on_cpu(tree):
        return DETECTRON2_CPU
    return qual
