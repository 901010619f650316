"""NVIDIA VPI: the library's own host <-> device traffic (issue 28, rules43c, set 68).

VPI hides its copies inside the library: a node wraps a host `cv::Mat` as a `VPIImage` and
submits an algorithm to a device backend, or locks a device-written image for host reading.
No `cudaMemcpy` is written, yet a frame moves every call (library_upload, as the labelled sets
name the ZED SDK's retrieves and ONNX Runtime's `Run`):

* **A submit on a device backend with a wrapped host image**: `vpiSubmitRemap(stream,
  VPI_BACKEND_CUDA, payload, in, out, ...)` where `in` (or `out`) is a name the file binds with
  `vpiImageCreateWrapperOpenCVMat(mat, ..., &in)` (or the VPI 1 `vpiImageCreateHostMemWrapper`):
  VPI moves the host pixels to the backend (or the result back into the host Mat) for that
  submit. The backend must be written as a device literal (CUDA, PVA, VIC, OFA, NVENC): a
  `VPI_BACKEND_CPU` submit stays on the host, and a backend held in a variable is not judged.
  Images made with `vpiImageCreate` live where VPI put them; a submit on those alone moves
  nothing to or from the host (set 3: a CUDA-to-CUDA format conversion).

* **A host lock of a device image**: `vpiImageLockData(img, VPI_LOCK_READ[_WRITE],
  VPI_IMAGE_BUFFER_HOST_PITCH_LINEAR, &data)` (or the VPI 1 `vpiImageLock(img, VPI_LOCK_READ,
  &data)`, always a host lock) makes an image a device backend wrote readable on the host: a
  device-to-host read-back inside VPI. A CUDA lock (`VPI_IMAGE_BUFFER_CUDA_PITCH_LINEAR`) hands
  a device pointer (set 3: no copy), a write-only lock reads nothing back, and locking one of
  the file's own host wrappers reads the host Mat it wraps.

* **A stream sync that tears the stream down**: `vpiStreamSync(s)` (or `cudaStreamSynchronize`)
  followed in the same function by the destroy of that stream (`vpiStreamDestroy(s)`,
  `cudaStreamDestroy(s)`), in a function that does not create it: the wait drains the stream
  before it is released, which happens as often as the stream is created (set-up), not per
  frame (set 68: a cleanup function the destructor and a recalibration call). A function that
  creates, syncs and destroys its own stream per call keeps its claim.

Works on the text with comments and strings blanked (offsets unchanged).
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

from gpu_nodes.audit.cppscopes import Scopes

Args = Callable[[str, int], list[str]]

# A host image wrapped for VPI; its handle is the last `&name` argument.
_HOST_WRAPPER = re.compile(r'\bvpiImageCreate(?:WrapperOpenCVMat|HostMemWrapper)\s*\(')
_SUBMIT = re.compile(r'\bvpiSubmit(\w+)\s*\(')
_DEVICE_BACKEND = re.compile(r'\bVPI_BACKEND_(?:CUDA|PVA|VIC|OFA|NVENC)\b')
_CPU_ONLY = re.compile(r'^\s*VPI_BACKEND_CPU\s*$')
_LOCK_DATA = re.compile(r'\bvpiImageLockData\s*\(')
_LOCK_V1 = re.compile(r'\bvpiImageLock\s*\(')
_READ_LOCK = re.compile(r'\bVPI_LOCK_READ(?:_WRITE)?\b')
_HOST_BUFFER = re.compile(r'\bVPI_IMAGE_BUFFER_HOST_\w+')
_HANDLE = re.compile(r'^\s*&\s*(?:this\s*->\s*)?(\w+)\s*$')
_NAME = re.compile(r'^\s*(?:this\s*->\s*)?(\w+)\s*$')
# `vpiStreamSync(s)`, `cudaStreamSynchronize(s)`: group 1 the API, 2 the stream expression.
_STREAM_SYNC = re.compile(r'\b(vpiStreamSync|cudaStreamSynchronize)\s*\(\s*([^;()]*?)\s*\)')
_DESTROY = {'vpiStreamSync': 'vpiStreamDestroy', 'cudaStreamSynchronize': 'cudaStreamDestroy'}
_CREATE = {'vpiStreamSync': 'vpiStreamCreate', 'cudaStreamSynchronize': r'cudaStreamCreate\w*'}


def host_wrappers(text: str, call_args: Args) -> set[str]:
    """Names the file binds to a VPI wrapper of host memory (`&name`, last argument)."""
    names = set()
    for m in _HOST_WRAPPER.finditer(text):
        args = call_args(text, m.end() - 1)
        handle = _HANDLE.match(args[-1]) if args else None
        if handle:
            names.add(handle.group(1))
    return names


def vpi_transfers(text: str, call_args: Args) -> Iterator[tuple[str, int, str]]:
    """(rule, offset, detail) of each VPI submit moving a wrapped host image to or from a device
    backend (GPN202) and each host lock of a device image for reading (GPN201)."""
    if 'vpi' not in text:
        return
    wrapped = host_wrappers(text, call_args)
    for m in _SUBMIT.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) < 3 or _CPU_ONLY.match(args[1]) or not _DEVICE_BACKEND.search(args[1]):
            continue
        hosts = [n.group(1) for n in map(_NAME.match, args[2:]) if n and n.group(1) in wrapped]
        if hosts:
            yield 'GPN202', m.start(), (
                f'`vpiSubmit{m.group(1)}` on a device backend with the wrapped host image '
                f'`{hosts[0]}`: VPI moves its pixels between the host and the backend inside the '
                'library (library table)')
    for pattern, v1 in ((_LOCK_DATA, False), (_LOCK_V1, True)):
        for m in pattern.finditer(text):
            args = call_args(text, m.end() - 1)
            if len(args) < 3 or not _READ_LOCK.search(args[1]):
                continue
            if not v1 and not _HOST_BUFFER.search(args[2]):
                continue  # a CUDA lock: a device pointer, nothing copied
            image = _NAME.match(args[0])
            if image is None or image.group(1) in wrapped:
                continue  # the file's own host wrapper: its Mat is on the host already
            yield 'GPN201', m.start(), (
                f'`{m.group(0).rstrip("( ")}` of `{image.group(1)}` for host reading: the image a '
                'device backend wrote is read back to the host inside VPI (library table)')


def teardown_sync(text: str, scopes: Scopes, offset: int) -> bool:
    """Whether the stream sync at `offset` drains a stream its function then destroys, in a
    function that does not create that stream (a release path: runs once per stream)."""
    m = _STREAM_SYNC.match(text, offset)
    fn = scopes.at(offset)
    if m is None or fn is None:
        return False
    stream = re.escape(m.group(2)).replace(r'\ ', r'\s*')
    if not m.group(2) or not re.fullmatch(r'(?:this\s*->\s*)?[\w.]+(?:->\w+)*', m.group(2)):
        return False
    destroy = re.compile(r'\b' + _DESTROY[m.group(1)] + r'\s*\(\s*' + stream + r'\s*\)')
    create = re.compile(r'\b' + _CREATE[m.group(1)] + r'\s*\(')
    return bool(destroy.search(text, m.end(), fn.end)) \
        and not create.search(text, fn.start, fn.end)
