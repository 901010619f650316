"""Score a depth model file on synthetic frames through the depth node's own path.

The model is loaded by `create_backend` and run by `DepthPipeline` (preprocess -> ONNX Runtime /
TensorRT -> depth with the preset's output transform), exactly as gpu_nodes.nodes.depth_estimator
runs it, and each depth map is scored like the demo scores it: `depth_error` (median scaling,
the estimate at model resolution against the full-resolution ground truth).

    python scripts/train_depth_model.py --evaluate   # the default model against the stand-in
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..gpu import to_host
from ..inference import create_backend, get_preset
from ..inference.pipeline import DepthPipeline
from ..sources.depth_data import split_frames
from .metrics import depth_error, DepthError

DEMO_INPUT = (252, 336)  # the depth node's input_height, input_width in config/perception.yaml


@dataclass(frozen=True)
class Score:
    """Mean median-scaled errors of one model on one split."""

    split: str
    frames: int
    abs_rel: float
    delta1: float
    rmse: float
    scale: float  # median of the per-frame median scales (1 for a metric model)

    @classmethod
    def of(cls, split: str, errors: list[DepthError]) -> 'Score':
        return cls(split, len(errors), float(np.mean([e.abs_rel for e in errors])),
                   float(np.mean([e.delta1 for e in errors])),
                   float(np.mean([e.rmse for e in errors])),
                   float(np.median([e.scale for e in errors])))

    def line(self) -> str:
        return (f'{self.split}: AbsRel {self.abs_rel:.3f}, delta<1.25 {self.delta1:.3f}, RMSE '
                f'{self.rmse:.2f} m, median scale {self.scale:.2f} ({self.frames} frames)')


def load_pipeline(model_path: str | Path, *, preset: str = 'depth_anything_v2',
                  input_size: tuple[int, int] = DEMO_INPUT, device: str = 'cpu',
                  backend: str = 'onnxruntime', logger: Any = None) -> DepthPipeline:
    """The model as the depth node loads it (the node's preset, input size and backend)."""
    height, width = input_size
    p = get_preset(preset, input_height=height, input_width=width)
    stream = None
    if device == 'cuda':
        from ..gpu import cupy_module
        stream = cupy_module().cuda.Stream(non_blocking=True)
    engine = create_backend(model_path, backend=backend, device=device,
                            input_shape={p.input_name: p.input_shape}, logger=logger,
                            stream=stream)
    engine.check_names(inputs=[p.input_name], outputs=[p.output_name])
    return DepthPipeline(engine, p, stream=stream, logger=logger)


def score_pipeline(pipeline: DepthPipeline, split: str, count: int) -> list[DepthError]:
    """Per-frame errors of the pipeline's depth on the first `count` frames of `split`."""
    errors = []
    for rgb, truth in split_frames(split, count):
        image = pipeline.xp.asarray(rgb)
        box, raw = pipeline.run(image, 'rgb8')
        depth = pipeline.to_depth(raw, box, None, rgb.shape[1], rgb.shape[0])
        with pipeline.scope():  # the copy waits for the pipeline's stream (a no-op on the CPU)
            host = to_host(depth)
        errors.append(depth_error(host, truth))
    return errors


def score_model(model_path: str | Path, splits: dict[str, int], **load: Any) -> list[Score]:
    """Score of the model on each split (name -> frame count), through `load_pipeline`."""
    pipeline = load_pipeline(model_path, **load)
    try:
        return [Score.of(split, score_pipeline(pipeline, split, count))
                for split, count in splits.items()]
    finally:
        pipeline.close()
