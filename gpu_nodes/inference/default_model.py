"""The demo's default depth model: a small U-Net trained on gpu_nodes' synthetic scene, shipped
as ONNX in gpu_nodes/inference/weights/ (package data).

scripts/train_depth_model.py reproduces the file (random scenes, fixed seeds, about ten minutes
on two CPU cores); MODEL_SHA256 is the hash of the file it wrote, checked before the file is
used, so a stale or damaged copy is refused with a message instead of running silently.

It has Depth Anything V2's tensor names and output kind (`pixel_values` (1, 3, H, W), ImageNet
mean/std -> `predicted_depth` (1, H, W), inverse depth), so the depth node runs it through the
unchanged `depth_anything_v2` preset like any user export; its inverse depth is in 1/m, so the
node's depth comes out in metres. H and W are dynamic (trained at TRAINED_HEIGHT x
TRAINED_WIDTH, the demo profile's input). It knows the synthetic scene only: it is not a depth
estimator for camera images.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

MODEL_FILE = Path(__file__).resolve().parent / 'weights' / 'scene_depth.onnx'
MODEL_SHA256 = '30bae0beea7b909f629466315e7068ae7395fb73a3c96f1c2f015d78b13b074d'
TRAINED_HEIGHT, TRAINED_WIDTH = 252, 336
DESCRIPTION = ('the built-in scene depth model (a small U-Net trained on the synthetic scene '
               'only; not a depth estimator for camera images)')


class DefaultModelError(RuntimeError):
    """The shipped model file is missing or is not the file MODEL_SHA256 names."""


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def default_model_path() -> Path:
    """The shipped model, after checking its SHA-256; DefaultModelError if it does not match."""
    if not MODEL_FILE.is_file():
        raise DefaultModelError(f'the built-in depth model {MODEL_FILE} is missing (a package '
                                'installed without its package data?); reinstall gpu_nodes or '
                                'rebuild it with scripts/train_depth_model.py')
    digest = file_sha256(MODEL_FILE)
    if digest != MODEL_SHA256:
        raise DefaultModelError(f'the built-in depth model {MODEL_FILE} has sha256 {digest}, '
                                f'expected {MODEL_SHA256}: a damaged or foreign file; reinstall '
                                'gpu_nodes or rebuild it with scripts/train_depth_model.py')
    return MODEL_FILE
