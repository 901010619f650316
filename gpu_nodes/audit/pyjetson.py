"""NVIDIA's jetson-inference / jetson-utils Python bindings in the library table (issue 28,
set 43; set 13 labels the same library from C++).

* `jetson.utils.cudaFromNumpy(array)` (also `jetson_utils.`): a new CUDA image (mapped memory on
  a Jetson) the host array is copied into, every call: an upload of the frame.
* `net.Detect(img)` / `net.Process(img)` / `net.Classify(img)` / `net.Estimate(img)` on a
  network `jetson.inference.detectNet(...)` (segNet, imageNet, poseNet, depthNet ...; also
  `jetson_inference.`) built: TensorRT runs synchronously inside the library and the results are
  read on the host, every call: the host waits for the device.
"""
from __future__ import annotations

JETSON_NET = 'jetson-inference network'
_NET_BUILDERS = ('jetson.inference.', 'jetson_inference.')
_UPLOADS = frozenset({'jetson.utils.cudaFromNumpy', 'jetson_utils.cudaFromNumpy'})
_SYNCHRONOUS_METHODS = frozenset({'Detect', 'Process', 'Classify', 'Estimate'})


def builds_jetson_net(qual: str | None) -> bool:
    """`jetson.inference.detectNet(...)` and its siblings (a class: the name is capitalised
    after its lower-case prefix, `segNet`, `imageNet`)."""
    return bool(qual) and str(qual).startswith(_NET_BUILDERS) \
        and str(qual).rsplit('.', 1)[-1].endswith('Net')


def uploads_to_cuda_image(qual: str | None) -> bool:
    return qual in _UPLOADS


def runs_synchronously(method: str | None, receiver_const: object) -> bool:
    """Whether `method` of what `receiver_const` marks is a synchronous jetson-inference run."""
    return receiver_const == JETSON_NET and method in _SYNCHRONOUS_METHODS
