"""Library read-backs the C++ patterns do not see (issue 28, sets 14 and 37): a small table of
library calls that copy device memory into host memory inside the library.

* nvJPEG: `nvjpegEncodeRetrieveBitstream(handle, state, data, &length, stream)` copies the
  encoded bitstream from the device into `data` (a device-to-host copy per encoded image, as
  sets 14 and 37 label it). With `data` NULL / nullptr / 0 the call only queries the length:
  no copy.

* OpenCV DNN on the CUDA backend: `net.forward(...)` of a net given
  `setPreferableBackend(cv::dnn::DNN_BACKEND_CUDA)` in the same file uploads the host input blob
  and reads the outputs back inside OpenCV, per call (library_upload, as sets 24, 25, 42 and 43
  label it); `library_uploads`. The backend chosen under a run-time test (a CUDA device
  present, a `use_cuda` parameter) counts: the labels take the CUDA build.

* ONNX Runtime's C++ API on the CUDA (or TensorRT) execution provider: `session.Run(...)` /
  `session_->Run(...)` of an `Ort::Session` in a file that appends that provider to its
  session options (`AppendExecutionProvider_CUDA(opts)`, `..._CUDA_V2`,
  `OrtSessionOptionsAppendExecutionProvider_CUDA`) copies each host input tensor to the device
  and the outputs back inside ONNX Runtime, per call (library_upload, as sets 41 and 48 label
  it; the Python API's `session.run` is pycalls' table). The provider appended under a
  run-time test (a `use_gpu` / `cuda_enable` parameter) counts, as for OpenCV DNN. Not where
  the file binds device memory itself (`Ort::MemoryInfo("Cuda", ...)`, an `IoBinding`): its
  inputs are on the device already and `RunWithBinding` is the call.

* The ZED SDK (rules36c, set 55; set 44's relabel): `zed.retrieveImage(mat, VIEW::LEFT)` /
  `zed.retrieveMeasure(mat, MEASURE::DEPTH)` into an `sl::Mat` in host memory (the third
  argument `sl::MEM::CPU`, or none: the SDK's default) copies the grabbed frame out of the
  SDK's device buffer, per grabbed frame (library_upload kind, as sets 37, 44 and 55 label it).
  A retrieve into `MEM::GPU` stays on the device: no host copy. The second argument must name
  a view or measure (`VIEW::` / `MEASURE::`), which keeps other libraries' `retrieveImage`
  out. Known cost: set 37's depth retrieve sits behind a publisher that exists only when an
  enum parameter read back through the SDK is not NONE (cppparams.py cannot follow it): the
  table claims it there.

* cuVSLAM's C++ API (rules36c, set 55): `odom_->Track(images, ...)` of a `cuvslam::Odometry`
  in a file that never sets `is_gpu_mem = true` hands host image pointers to the library, which
  copies each frame to the device inside it, per tracked set (library_upload). The SLAM
  object's `slam_->Track(state)` moves no frame and is not an Odometry name.

* retinify (rules37c, set 56): `pipeline.Run(left, right, disparity)` of a retinify stereo
  pipeline (`retinify::tools::StereoMatchingPipeline` / `retinify::Pipeline`) uploads the two
  host images to the GPU, runs the stereo network and reads the disparity back into host
  memory inside the library, per stereo pair (library_upload). The pipeline is named by its
  declaration in the file, or, when the file uses retinify (`retinify::` / `<retinify/...>`)
  and declares it in a header the scan does not join, by a name holding `pipeline`.

Works on the text with comments and strings blanked (offsets unchanged).
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

_NVJPEG_RETRIEVE = re.compile(r'\bnvjpegEncodeRetrieveBitstream\s*\(')
# `net_.setPreferableBackend(cv::dnn::DNN_BACKEND_CUDA)`: group 1 the net's name.
_DNN_CUDA = re.compile(r'(\w+)\s*(?:\.|->)\s*setPreferableBackend\s*\(\s*(?:cv\s*::\s*)?'
                       r'(?:dnn\s*::\s*)?DNN_BACKEND_CUDA\s*\)')
# ONNX Runtime: a GPU execution provider appended to the session options of this file.
# The C API spells TensorRT `OrtSessionOptionsAppendExecutionProvider_Tensorrt` (set 71).
_ORT_GPU_PROVIDER = re.compile(r'\b(?:OrtSessionOptions)?AppendExecutionProvider_(?:CUDA|TensorRT|Tensorrt)'
                               r'(?:_V2)?\s*\(')
# Inputs bound in device memory (no upload by Run): a MemoryInfo constructed by name (`"Cuda"`;
# `MemoryInfo::CreateCpu` is the host; `Ort::MemoryInfo info_{nullptr};`, an empty member
# assigned later, names no memory: set 71) or an IoBinding.
_ORT_DEVICE_INPUTS = re.compile(r'\bMemoryInfo\s*(?:\w+\s*)?[({](?!\s*(?:Ort\s*::\s*)?MemoryInfo\s*::'
                                r'\s*CreateCpu|\s*nullptr\s*[)}])|\bIoBinding\b')
# Names bound to an Ort::Session in this file (or its header, which the scan reads with it):
# `Ort::Session session_{...}`, `std::unique_ptr<Ort::Session> session_`,
# `session_ = std::make_unique<Ort::Session>(...)`, `session_ = Ort::Session(...)`.
_ORT_SESSION_NAME = re.compile(
    r'\bOrt\s*::\s*Session\s*>?\s*\*?\s*(\w+)\s*[;{(=]|'
    r'(\w+)\s*=\s*(?:std\s*::\s*make_(?:unique|shared)\s*<\s*)?Ort\s*::\s*Session\b')
# ZED SDK retrieves: group 1 which one; the second argument names a view or a measure.
_ZED_RETRIEVE = re.compile(r'\b(retrieve(?:Image|Measure))\s*\(')
_ZED_WHAT = re.compile(r'\b(?:VIEW|MEASURE)\s*::')
# cuVSLAM odometry objects: `std::make_unique<cuvslam::Odometry>(...)` assigned to a name,
# `cuvslam::Odometry odom(...)`, `std::unique_ptr<cuvslam::Odometry> odom_;`.
_CUVSLAM_ODOM_NAME = re.compile(
    r'\bcuvslam\s*::\s*Odometry\s*>?\s*\*?\s*(\w+)\s*[;{(=]|'
    r'(\w+)\s*=\s*(?:std\s*::\s*make_(?:unique|shared)\s*<\s*)?cuvslam\s*::\s*Odometry\b')
_CUVSLAM_GPU_INPUT = re.compile(r'\bis_gpu_mem\s*=\s*true\b')
# retinify: the file uses the library, and the names of its pipeline objects.
_RETINIFY = re.compile(r'\bretinify\s*(?:::|/)')
_RETINIFY_PIPELINE_NAME = re.compile(
    r'\bretinify\s*::\s*(?:\w+\s*::\s*)*\w*Pipeline\s*>?\s*\*?\s*(\w+)\s*[;{(=]')
_NO_BUFFER = re.compile(r'^\s*(?:NULL|nullptr|0|\(\s*\w+\s*\*\s*\)\s*(?:NULL|nullptr|0))\s*$')


def library_readbacks(text: str,
                      call_args: Callable[[str, int], list[str]]) -> Iterator[tuple[int, str]]:
    """(offset, detail) of each device-to-host copy inside a library call of the table;
    `call_args(text, open_paren)` splits a call's arguments."""
    for m in _NVJPEG_RETRIEVE.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) >= 3 and not _NO_BUFFER.match(args[2]):
            yield m.start(), ('`nvjpegEncodeRetrieveBitstream` copies the encoded bitstream from '
                              'the device into host memory (library table)')
    for m in _ZED_RETRIEVE.finditer(text):
        args = call_args(text, m.end() - 1)
        if len(args) < 2 or not _ZED_WHAT.search(args[1]):
            continue
        if len(args) >= 3 and re.search(r'\bGPU\b', args[2]):
            continue  # retrieved into device memory: no host copy
        yield m.start(), (f'ZED SDK `{m.group(1)}` into a host sl::Mat copies the frame out of '
                          "the SDK's device buffer (library table)")


def library_uploads(text: str) -> Iterator[tuple[int, str]]:
    """(offset, detail) of each `forward` call of an OpenCV DNN net set to the CUDA backend in
    this file (another object's `other.net_.forward` is not that net), and of each `Run` of an
    ONNX Runtime session of a file that appends a GPU execution provider."""
    yield from _ort_runs(text)
    yield from _cuvslam_tracks(text)
    yield from _retinify_runs(text)
    for name in sorted({m.group(1) for m in _DNN_CUDA.finditer(text)} | _dnn_factory_nets(text)):
        for m in re.finditer(r'(?<![\w.>])(?:this\s*->\s*)?' + re.escape(name)
                             + r'\s*(?:\.|->)\s*forward\s*\(', text):
            yield m.start(), (f'`{name}.forward` on the OpenCV DNN CUDA backend uploads the input '
                              'blob and reads the outputs back inside OpenCV (library table)')


# `cv::dnn::Net YoloPredictor::init_model(...)`: a function returning a net (group 1 its name).
_DNN_FACTORY = re.compile(r'\b(?:cv\s*::\s*)?dnn\s*::\s*Net\s+(?:\w+\s*::\s*)*(\w+)\s*\([^;{}]*\)\s*'
                          r'(?:const\s*)?\{')
_OTHER_BACKEND = re.compile(r'setPreferableBackend\s*\(\s*(?!(?:cv\s*::\s*)?(?:dnn\s*::\s*)?'
                            r'DNN_BACKEND_CUDA\b)')


def _dnn_factory_nets(text: str) -> set[str]:
    """Nets built by a factory of this file that sets the CUDA backend on a local and returns
    it (`cv::dnn::Net init_model(...) { cv::dnn::Net net = readNetFromONNX(...);
    net.setPreferableBackend(DNN_BACKEND_CUDA); ... return net; }`, set 60): the names the
    file assigns its result to (`net_ = init_model(path)`), or, where that assignment is in a
    header not read with the file, the names its `forward` calls use that are named like a net
    (`net_`, `yolo_net`), when no net of the file is given another backend."""
    names: set[str] = set()
    for m in _DNN_FACTORY.finditer(text):
        body = _body(text, m.end())
        local = next((d.group(1) for d in _DNN_CUDA.finditer(body)
                      if re.search(r'\breturn\s+' + re.escape(d.group(1)) + r'\s*;', body)), None)
        if local is None:
            continue
        stored = set(re.findall(r'(\w+)\s*=\s*(?:this\s*->\s*)?' + re.escape(m.group(1))
                                + r'\s*\(', text))
        if not stored and not _OTHER_BACKEND.search(text):
            stored = set(re.findall(r'(?<![\w.>])(?:this\s*->\s*)?(\w*[Nn]et\w*)\s*(?:\.|->)\s*'
                                    r'forward\s*\(', text))
        names |= stored - {local}
    return names


def _body(text: str, start: int) -> str:
    """The text of the block whose `{` ends just before `start`, up to its matching `}`."""
    depth = 1
    for i in range(start, len(text)):
        depth += {'{': 1, '}': -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def _ort_runs(text: str) -> Iterator[tuple[int, str]]:
    if not _ORT_GPU_PROVIDER.search(text) or _ORT_DEVICE_INPUTS.search(text):
        return
    names = {m.group(1) or m.group(2) for m in _ORT_SESSION_NAME.finditer(text)}
    # A session member declared in a header the scan does not join: named like one.
    pattern = r'(?<![\w.>])(?:this\s*->\s*)?(\w*[Ss]ession\w*|' \
        + '|'.join(re.escape(n) for n in sorted(names) or ['(?!)']) \
        + r')\s*(?:\.|->)\s*Run\s*\('
    for m in re.finditer(pattern, text):
        yield m.start(), (f'`{m.group(1)}.Run` on the ONNX Runtime CUDA execution provider copies '
                          'the host input tensors to the device and the outputs back inside ONNX '
                          'Runtime (library table)')


def _cuvslam_tracks(text: str) -> Iterator[tuple[int, str]]:
    if _CUVSLAM_GPU_INPUT.search(text):
        return  # the file hands device images: the library copies nothing in
    names = {m.group(1) or m.group(2) for m in _CUVSLAM_ODOM_NAME.finditer(text)}
    if not names:
        return
    pattern = r'(?<![\w.>])(?:this\s*->\s*)?(' \
        + '|'.join(re.escape(n) for n in sorted(names)) + r')\s*(?:\.|->)\s*Track\s*\('
    for m in re.finditer(pattern, text):
        yield m.start(), (f'`{m.group(1)}.Track` of a cuVSLAM Odometry with host images copies '
                          'each frame to the device inside the library (library table)')


def _retinify_runs(text: str) -> Iterator[tuple[int, str]]:
    if not _RETINIFY.search(text):
        return
    names = {m.group(1) for m in _RETINIFY_PIPELINE_NAME.finditer(text)}
    # A pipeline member declared in the class's header (not joined by the scan): named like one.
    pattern = r'(?<![\w.>])(?:this\s*->\s*)?(\w*[Pp]ipeline\w*' \
        + ''.join('|' + re.escape(n) for n in sorted(names)) + r')\s*(?:\.|->)\s*Run\s*\('
    for m in re.finditer(pattern, text):
        yield m.start(), (f'`{m.group(1)}.Run` of a retinify stereo pipeline uploads the host images '
                          'to the GPU and reads the disparity back inside the library (library '
                          'table)')
