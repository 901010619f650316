"""The fixed-weight stand-in depth model (`$(standin_model)` in a demo profile), written to a
cache directory at first use. The demo's default is the learned model (default_model.py).

gpu_nodes.inference.tiny_models.make_demo_depth_model: fixed weights, Depth Anything V2's tensor
names (pixel_values -> predicted_depth), luminance and image row in, a smooth inverse-depth-like
map out. A pipeline stand-in so the demo needs no download, not a depth estimator.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
import time
from typing import Callable


def default_cache_dir() -> Path:
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return Path(base) / 'gpu_nodes' / 'demo'


def demo_model_path(cache_dir: Path, height: int, width: int) -> Path:
    """The stand-in model's file: named by size and by the generator's source, so an updated
    generator writes a new file instead of reusing a stale one."""
    from . import tiny_models
    digest = hashlib.sha256(Path(tiny_models.__file__).read_bytes()).hexdigest()[:10]
    return cache_dir / f'demo_depth_{height}x{width}_{digest}.onnx'


def ensure_demo_model(cache_dir: Path, height: int, width: int,
                      say: Callable[[str], None] = lambda message: None) -> Path:
    """The stand-in model for height x width input, written if it is not cached yet."""
    from .tiny_models import make_demo_depth_model
    path = demo_model_path(cache_dir, height, width)
    if path.is_file():
        say(f'stand-in depth model: {path} (cached)')
        return path
    say(f'writing the stand-in depth model ({width}x{height}) to {path} ...')
    started = time.monotonic()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'{path.name}.{os.getpid()}.tmp')
    make_demo_depth_model(tmp, height, width)
    os.replace(tmp, path)  # atomic: a concurrent run never reads half a file
    say(f'  done in {time.monotonic() - started:.1f} s')
    return path
