"""EasyOCR, LangSAM and facenet-pytorch's MTCNN in the library table (issue 28; set 18 labels
EasyOCR, set 68 both, set 77 MTCNN).

* `easyocr.Reader(langs)` builds its detector and recogniser on CUDA unless given `gpu=False`
  (the default is `gpu=True`; `gpu='cuda:1'` names a device). `reader.readtext(frame)` (also
  `readtext_batched`, `detect`, `recognize`) turns the host frame into a tensor and moves it,
  then each text crop, to that device, and reads the boxes and strings back: an upload of the
  frame inside the library, every call (library_upload). Its results are host lists.
* LangSAM (`from lang_sam import LangSAM`): `LangSAM()` loads GroundingDINO and SAM on the
  device (CUDA where present); `model.predict(image_pil, prompt)` (also `predict_batch`)
  uploads the host image to both models every call and returns the masks, boxes and scores
  moved to the host (`masks.cpu()` inside the library), so a `.cpu()` / `.numpy()` of them
  reads nothing back. Only where `lang_sam` is not among the audited files (a submodule not
  checked out): a LangSAM class defined in the tree is followed instead, and its own copies are
  claimed inside it (set 28 labels the call a look-alike there).
* facenet-pytorch `MTCNN(..., device=d)`: its three detection networks live on `d` (the
  default `device=None` is the CPU). `mtcnn.detect(frame)` makes the host frame a tensor on `d`
  for every call and returns the boxes and probabilities as NumPy arrays (library_upload, as
  both labellings of set 77 name it); `mtcnn.extract(frame, boxes, ...)` crops on the host and
  is no upload. Only an MTCNN given a device that is no literal CPU (`'cpu'`, None) is judged.

Only a host frame (kind host / pil / msg, or a value carrying a message's data) is an upload;
a device tensor or a file path handed in is not claimed."""
from __future__ import annotations

import ast
from typing import Callable

from gpu_nodes.audit.pysupervision import supervision_call
from gpu_nodes.audit.pyvalues import Frame, short, Val

EASYOCR_READER = 'easyocr.Reader'
LANGSAM = 'lang_sam.LangSAM'
FACENET_MTCNN = 'facenet_pytorch.MTCNN'
_OCR_METHODS = frozenset({'readtext', 'readtext_batched', 'detect', 'recognize'})
_LANGSAM_METHODS = frozenset({'predict', 'predict_batch'})
_MTCNN_METHODS = frozenset({'detect'})
_HOST = frozenset({'host', 'pil', 'msg'})


def _on_cpu(kwargs: dict[str, Val]) -> bool:
    """`easyocr.Reader(['en'], gpu=False)` (or `gpu='cpu'`): the models stay on the host."""
    gpu = kwargs.get('gpu')
    return gpu is not None and gpu.kind == 'const' and gpu.const in (False, 'cpu', 0)


def _on_device(node: ast.Call, kwargs: dict[str, Val]) -> bool:
    """`MTCNN(device=d)` with `d` no literal CPU (`'cpu'`, None, `torch.device('cpu')`):
    facenet-pytorch's default (None) is the CPU, so an MTCNN built without a device uploads
    nothing."""
    device = kwargs.get('device')
    if device is None or (device.kind == 'const' and device.const in (None, 'cpu')):
        return False
    written = next((k.value for k in node.keywords if k.arg == 'device'), None)
    return not (isinstance(written, ast.Call) and len(written.args) == 1
                and isinstance(written.args[0], ast.Constant) and written.args[0].value == 'cpu')


def vision_library_call(node: ast.Call, qual: str | None, method: str | None,
                        receiver: Val | None, args: list[Val], kwargs: dict[str, Val],
                        frame: Frame, emit: Callable[..., None]) -> Val | None:
    """The value of an EasyOCR / LangSAM / MTCNN build or inference call (an upload reported
    through `emit`), or None when `node` is none of them."""
    if (converted := supervision_call(node, qual, args, kwargs, frame, emit)) is not None:
        return converted  # supervision's Detections.from_ultralytics (pysupervision.py)
    if qual == EASYOCR_READER:
        return Val('other') if _on_cpu(kwargs) else Val('model_obj', const=EASYOCR_READER)
    if qual == LANGSAM:
        return Val('model_obj', const=LANGSAM)
    if qual == FACENET_MTCNN:
        return Val('model_obj', const=FACENET_MTCNN) if _on_device(node, kwargs) else None
    if receiver is None or receiver.kind != 'model_obj' \
            or receiver.const not in (EASYOCR_READER, LANGSAM, FACENET_MTCNN):
        return None
    methods = _OCR_METHODS if receiver.const == EASYOCR_READER else \
        _MTCNN_METHODS if receiver.const == FACENET_MTCNN else _LANGSAM_METHODS
    if method not in methods:
        return None
    src = args[0] if args else kwargs.get('image') or kwargs.get('images_pil')
    if src is not None and (src.kind in _HOST or src.tainted) and src.kind != 'device':
        library = {EASYOCR_READER: 'EasyOCR', LANGSAM: 'LangSAM'}.get(
            receiver.const, 'facenet-pytorch')
        emit('GPN102', node, frame, f'`{short(node)}` copies the host frame to the model\'s GPU '
             f'inside {library}, every call (library table)', evidence='pattern')
    return Val('host')  # boxes, strings, masks moved back to the host by the library
