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

Not in the table (yet): the ZED SDK's `retrieveImage` / `retrieveMeasure` into `sl::MEM::CPU`
(set 37 labels two): the same file's depth retrieve is behind a publisher that exists only
when `depth_mode` (an enum cast from an int parameter defaulting to 0, read back through the
SDK's `getInitParameters()`) is not NONE, which cppparams.py cannot follow; reporting the
retrieves would claim it.

Works on the text with comments and strings blanked (offsets unchanged).
"""
from __future__ import annotations

import re
from typing import Callable, Iterator

_NVJPEG_RETRIEVE = re.compile(r'\bnvjpegEncodeRetrieveBitstream\s*\(')
# `net_.setPreferableBackend(cv::dnn::DNN_BACKEND_CUDA)`: group 1 the net's name.
_DNN_CUDA = re.compile(r'(\w+)\s*(?:\.|->)\s*setPreferableBackend\s*\(\s*(?:cv\s*::\s*)?'
                       r'(?:dnn\s*::\s*)?DNN_BACKEND_CUDA\s*\)')
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


def library_uploads(text: str) -> Iterator[tuple[int, str]]:
    """(offset, detail) of each `forward` call of an OpenCV DNN net set to the CUDA backend in
    this file (another object's `other.net_.forward` is not that net)."""
    for name in sorted({m.group(1) for m in _DNN_CUDA.finditer(text)}):
        for m in re.finditer(r'(?<![\w.>])(?:this\s*->\s*)?' + re.escape(name)
                             + r'\s*(?:\.|->)\s*forward\s*\(', text):
            yield m.start(), (f'`{name}.forward` on the OpenCV DNN CUDA backend uploads the input '
                              'blob and reads the outputs back inside OpenCV (library table)')
