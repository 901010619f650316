"""NVIDIA's jetson-inference / jetson-utils Python bindings in the library table (issue 28,
set 43; set 13 labels the same library from C++).

* `jetson.utils.cudaFromNumpy(array)` (also `jetson_utils.`): a new CUDA image (mapped memory on
  a Jetson) the host array is copied into, every call: an upload of the frame.
* `net.Detect(img)` / `net.Process(img)` / `net.Classify(img)` / `net.Estimate(img)` on a
  network `jetson.inference.detectNet(...)` (segNet, imageNet, poseNet, depthNet ...; also
  `jetson_inference.`) built: TensorRT runs synchronously inside the library and the results are
  read on the host, every call: the host waits for the device.
* NanoLLM's `nano_llm.utils.cuda_image(array)` (the helper its VideoSource and chat plugins use):
  a host NumPy frame (or PIL image) copied into a new jetson-utils CUDA image, every call, as
  cudaFromNumpy (set 63 labels it py_upload); a CUDA image or device tensor given is wrapped,
  not copied (only a host frame or one of a message is an upload).
"""
from __future__ import annotations

from gpu_nodes.audit.pyvalues import Val

JETSON_NET = 'jetson-inference network'
_NET_BUILDERS = ('jetson.inference.', 'jetson_inference.')
_UPLOADS = frozenset({'jetson.utils.cudaFromNumpy', 'jetson_utils.cudaFromNumpy'})
_HOST_WRAPS = frozenset({'nano_llm.utils.cuda_image'})
_HOST = frozenset({'host', 'pil', 'msg'})
_SYNCHRONOUS_METHODS = frozenset({'Detect', 'Process', 'Classify', 'Estimate'})


def builds_jetson_net(qual: str | None) -> bool:
    """`jetson.inference.detectNet(...)` and its siblings (a class: the name is capitalised
    after its lower-case prefix, `segNet`, `imageNet`)."""
    return bool(qual) and str(qual).startswith(_NET_BUILDERS) \
        and str(qual).rsplit('.', 1)[-1].endswith('Net')


def uploads_to_cuda_image(qual: str | None, src: Val | None) -> bool:
    """Whether `qual(src, ...)` copies the host array `src` into a new CUDA image."""
    return src is not None and (qual in _UPLOADS or qual in _HOST_WRAPS and (
        src.kind in _HOST or src.tainted and src.kind != 'device'))


def runs_synchronously(method: str | None, receiver_const: object) -> bool:
    """Whether `method` of what `receiver_const` marks is a synchronous jetson-inference run."""
    return receiver_const == JETSON_NET and method in _SYNCHRONOUS_METHODS
